#!/usr/bin/env bash
# A private mail server on loopback for `mbxstress loadgen` and its tests: Postfix (submission with
# STARTTLS and implicit TLS, SASL checked by Dovecot, delivery over LMTP) and Dovecot (IMAP, IMAPS,
# POP3, POP3S, LMTP; passwd-file users loadgen1..N; maildir), with a throwaway configuration in DIR.
#
#   scripts/mailserver.sh start DIR [--users N] [--password PW] [--domain D] [--port-base P]
#                                   [--connections C] [--imap-client-limit K] [--watch PID]
#                                   [--layout default|inbox-dot] [--relay]
#   scripts/mailserver.sh stop DIR [--keep]
#   scripts/mailserver.sh status DIR
#
# start prints the endpoints as KEY=VALUE lines (also written to DIR/server.env) and returns once
# every port accepts connections. Ports are P+0 submission (STARTTLS), P+1 submissions (implicit
# TLS), P+2 IMAP, P+3 IMAPS, P+4 POP3, P+5 POP3S, P+6 LMTP (Postfix -> Dovecot); without
# --port-base the first free block of 10 from 24000 is taken. --watch PID stops the server when
# that process exits (test harnesses use it, so a crashed test leaves nothing running).
# --connections C (default 200): IMAP and POP3 sessions Dovecot accepts at once (one imap/pop3
# process each; the login processes run in Dovecot's high-performance mode, many clients each);
# every user may hold C sessions from one address (mail_max_userip_connections), and the open-files
# limit is raised to C x 4 + 1024 (above the hard limit too when run as root, up to fs.nr_open).
# --imap-client-limit K (default 1, Dovecot's): IMAP sessions served by one imap process, so 10,000
# idle sessions need C / K processes rather than 10,000 (bench/loadgen-idle.sh).
# --layout inbox-dot: the layout most non-Dovecot servers use (Courier, Cyrus, many hosted
# services): the personal namespace is `INBOX.` with `.` as separator (RFC 2342: every folder is
# INBOX.something; a top-level CREATE is refused), and IDLE notifies slowly: Dovecot's imap
# processes cannot use inotify (a preloaded shim, DIR/noinotify.so built with cc, makes
# inotify_init fail; Dovecot 2.3 has no setting to turn it off), so IDLE sees new mail only at
# mailbox_idle_check_interval, raised to 60 s. The default layout: Dovecot's (prefix "", IDLE
# through inotify, within a second).
# --relay: also plain SMTP without AUTH on P+7 (MBX_MAIL_RELAY_PORT) for a trusted server on
# loopback that hands mail on, such as SOGo's SendMail (scripts/easserver.sh); it accepts mail
# for the test users only.
# stop ends
# both daemons and removes DIR (only a DIR that start made; --keep leaves it, mail included).
#
# Needs root (Postfix's master starts only as root) and Debian's postfix, dovecot-imapd,
# dovecot-pop3d and dovecot-lmtpd. Nothing outside DIR is read or written: no /etc/postfix/main.cf,
# no /etc/dovecot. DIR and every parent must be traversable by the postfix and dovecot users, and
# DIR short (Unix socket paths are limited to 108 bytes).
set -euo pipefail

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
  exit 2
}

cleanup_dir=""
die() {
  echo "mailserver.sh: $*" >&2
  # A folder this start made, before any daemon ran: remove it.
  [ -z "$cleanup_dir" ] || rm -rf "$cleanup_dir"
  exit 1
}

[ $# -ge 2 ] || usage
cmd=$1
dir=$2
shift 2

users=50
password=loadgen
domain=loadgen.test
port_base=""
connections=200
imap_client_limit=1
watch=""
keep=0
layout=default
relay=0
while [ $# -gt 0 ]; do
  case $1 in
  --users) users=$2; shift 2 ;;
  --password) password=$2; shift 2 ;;
  --domain) domain=$2; shift 2 ;;
  --port-base) port_base=$2; shift 2 ;;
  --connections) connections=$2; shift 2 ;;
  --imap-client-limit) imap_client_limit=$2; shift 2 ;;
  --watch) watch=$2; shift 2 ;;
  --keep) keep=1; shift ;;
  --layout) layout=$2; shift 2 ;;
  --relay) relay=1; shift ;;
  *) usage ;;
  esac
done

# Mail is stored under this numeric uid/gid (no account needed; Dovecot accepts it).
vmail_uid=5000
marker=.mbxstress-mailserver

port_in_use() {
  # Listening sockets on 127.0.0.1 or any address (ss from iproute2; else try to connect).
  if command -v ss >/dev/null 2>&1; then
    ss -Htln "sport = :$1" 2>/dev/null | grep -q .
  else
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
  fi
}

wait_port() {
  local port=$1 i
  for i in $(seq 1 100); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      return 0
    fi
    sleep 0.1
  done
  return 1
}

stop_server() {
  local d=$1
  [ -f "$d/$marker" ] || die "$d was not made by 'mailserver.sh start' (no $marker): not touching it"
  if [ -f "$d/postfix/main.cf" ] && [ -f "$d/pq/pid/master.pid" ]; then
    postfix -c "$d/postfix" stop >/dev/null 2>&1 || true
  fi
  local pid=""
  [ -f "$d/run/master.pid" ] && pid=$(cat "$d/run/master.pid" 2>/dev/null || true)
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    # Dovecot takes 1-3 s to stop; its children exit with it.
    for _ in $(seq 1 100); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -9 "$pid" 2>/dev/null || true
  fi
  # Postfix's master may linger briefly after `postfix stop`.
  local ppid=""
  [ -f "$d/pq/pid/master.pid" ] && ppid=$(tr -d ' ' <"$d/pq/pid/master.pid" 2>/dev/null || true)
  if [ -n "$ppid" ]; then
    for _ in $(seq 1 50); do
      kill -0 "$ppid" 2>/dev/null || break
      sleep 0.1
    done
    kill -9 "$ppid" 2>/dev/null || true
  fi
  if [ -f "$d/watch.pid" ]; then
    local w
    w=$(cat "$d/watch.pid")
    # Not when the watcher itself is stopping the server.
    [ "$w" = "$$" ] || [ "$w" = "${MBX_MAILSERVER_WATCHER:-}" ] || kill "$w" 2>/dev/null || true
  fi
  if [ "$keep" = 0 ]; then
    rm -rf "$d"
  fi
}

case $cmd in
stop)
  [ -d "$dir" ] || exit 0
  stop_server "$dir"
  exit 0
  ;;
status)
  [ -f "$dir/server.env" ] || die "no server in $dir"
  cat "$dir/server.env"
  exit 0
  ;;
start) ;;
*) usage ;;
esac

[ "$(id -u)" = 0 ] || die "must run as root: Postfix's master process starts only as root"
command -v postfix >/dev/null || die "postfix is not installed (apt-get install postfix)"
command -v dovecot >/dev/null || die "dovecot is not installed (apt-get install dovecot-imapd dovecot-pop3d dovecot-lmtpd)"
[ -x /usr/lib/dovecot/lmtp ] || die "dovecot-lmtpd is not installed"
[ -x /usr/lib/dovecot/pop3 ] || die "dovecot-pop3d is not installed"
command -v openssl >/dev/null || die "openssl is not installed"
case $users in '' | *[!0-9]*) die "--users must be a number" ;; esac
case $connections in '' | *[!0-9]* | 0) die "--connections must be a positive number" ;; esac
case $imap_client_limit in '' | *[!0-9]* | 0) die "--imap-client-limit must be a positive number" ;; esac
case $layout in default | inbox-dot) ;; *) die "--layout must be default or inbox-dot (not $layout)" ;; esac
[ "$layout" = default ] || command -v cc >/dev/null || die "--layout $layout needs a C compiler (cc) for its inotify shim (apt-get install gcc)"
login_clients=$(( connections + 100 < 1000 ? connections + 100 : 1000 ))

dir=$(realpath -m "$dir")
[ "${#dir}" -le 60 ] || die "$dir is too long (Unix socket paths are limited to 108 bytes; keep DIR under 60)"
# Every parent must be traversable by the postfix and dovecot users.
p=$dir
while [ "$p" != / ]; do
  p=$(dirname "$p")
  [ -e "$p" ] || continue
  perm=$(stat -c %A "$p")
  [ "${perm:9:1}" = x ] || [ "${perm:9:1}" = t ] || die "$p is not traversable by other users (chmod o+x $p); Postfix and Dovecot cannot reach $dir"
done
if [ -e "$dir" ]; then
  [ -z "$(ls -A "$dir" 2>/dev/null)" ] || die "$dir exists and is not empty (stop the server there first)"
else
  cleanup_dir=$dir
fi
mkdir -p "$dir"
chmod 0755 "$dir"
touch "$dir/$marker"
cleanup_dir=$dir

if [ -z "$port_base" ]; then
  for b in $(seq 24000 10 29990); do
    free=1
    for k in 0 1 2 3 4 5 6; do
      if port_in_use $((b + k)); then free=0; break; fi
    done
    if [ "$free" = 1 ]; then port_base=$b; break; fi
  done
  [ -n "$port_base" ] || die "no free block of ports between 24000 and 29999"
fi
p_sub=$((port_base + 0))
p_subs=$((port_base + 1))
p_imap=$((port_base + 2))
p_imaps=$((port_base + 3))
p_pop3=$((port_base + 4))
p_pop3s=$((port_base + 5))
p_lmtp=$((port_base + 6))
p_relay=$((port_base + 7))
ports="$p_sub $p_subs $p_imap $p_imaps $p_pop3 $p_pop3s $p_lmtp"
[ "$relay" = 0 ] || ports="$ports $p_relay"
for p in $ports; do
  port_in_use "$p" && die "port $p is in use (choose another --port-base)"
done

mkdir -p "$dir"/{postfix,pq,pd,run,state,log,tls,mail}
chmod 0755 "$dir"/{postfix,pq,run,state,log,tls,mail}
chown postfix:postfix "$dir/pd"
chown "$vmail_uid:$vmail_uid" "$dir/mail"
touch "$dir/log/postfix.log" "$dir/log/dovecot.log"

# TLS: a private CA and a server certificate for 127.0.0.1 and localhost signed by it. Clients
# trust DIR/tls/ca.pem (a self-signed certificate with CA:TRUE cannot be a server's certificate
# for WebPKI verifiers such as rustls).
(
  cd "$dir/tls"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 \
    -subj "/CN=mbxstress test CA" -keyout ca.key -out ca.pem \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=localhost" \
    -keyout server.key -out server.csr 2>/dev/null
  printf 'subjectAltName=DNS:localhost,DNS:mail.%s,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' "$domain" >server.ext
  openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 30 \
    -extfile server.ext -out server.pem 2>/dev/null
  chmod 0644 ca.pem server.pem
  chmod 0640 server.key
  chgrp dovecot server.key
) || die "openssl failed to make the test certificates"

# Users: loadgen1..N with one password (passwd-file: user:{PLAIN}password:uid:gid::home).
: >"$dir/users"
: >"$dir/postfix/vmailbox"
for i in $(seq 1 "$users"); do
  printf 'loadgen%d:{PLAIN}%s:%d:%d::%s/mail/loadgen%d\n' "$i" "$password" "$vmail_uid" "$vmail_uid" "$dir" "$i" >>"$dir/users"
  printf 'loadgen%d@%s OK\n' "$i" "$domain" >>"$dir/postfix/vmailbox"
done
chmod 0644 "$dir/users"

cat >"$dir/dovecot.conf" <<EOF
# Written by scripts/mailserver.sh: a private Dovecot on 127.0.0.1 (not /etc/dovecot).
base_dir = $dir/run
state_dir = $dir/state
log_path = $dir/log/dovecot.log
protocols = imap pop3 lmtp
listen = 127.0.0.1
default_login_user = dovenull
default_internal_user = dovecot
ssl = yes
ssl_cert = <$dir/tls/server.pem
ssl_key = <$dir/tls/server.key
ssl_min_protocol = TLSv1.2
# Lab server: plaintext logins on the non-TLS ports too (loopback counts as secure anyway).
disable_plaintext_auth = no
auth_mechanisms = plain login
# Wrong passwords answer at once (the default delay is 2 s and grows): tests check the error.
auth_failure_delay = 0
# loadgen1 and loadgen1@$domain are the same user (Postfix delivers to the full address).
auth_username_format = %Ln
first_valid_uid = $vmail_uid
last_valid_uid = $vmail_uid
first_valid_gid = $vmail_uid
last_valid_gid = $vmail_uid
mail_location = maildir:~/Maildir
pop3_uidl_format = %08Xu%08Xv
# Sessions at once (--connections): per user and address, and in all.
mail_max_userip_connections = $connections
default_process_limit = $((connections + 50))
default_client_limit = $((connections * 2 + 1000))
passdb {
  driver = passwd-file
  args = scheme=PLAIN username_format=%n $dir/users
}
userdb {
  driver = passwd-file
  args = username_format=%n $dir/users
}
service imap-login {
  # High-performance mode: a few login processes (TLS proxies) for many clients, at most 1,000
  # each (a TLS client holds two descriptors in its login process: 10,000 in one would pass a
  # 20,000 open-files limit); more processes start as they fill.
  service_count = 0
  process_min_avail = 1
  client_limit = $login_clients
  inet_listener imap {
    address = 127.0.0.1
    port = $p_imap
  }
  inet_listener imaps {
    address = 127.0.0.1
    port = $p_imaps
    ssl = yes
  }
}
service imap {
  # --imap-client-limit: sessions per imap process (1: a process per session, Dovecot's default;
  # above 1 the processes live on, service_count 0).
  client_limit = $imap_client_limit
  service_count = $(( imap_client_limit > 1 ? 0 : 1 ))
  process_limit = $(( connections / imap_client_limit + 50 ))
}
service pop3-login {
  service_count = 0
  process_min_avail = 1
  client_limit = $login_clients
  inet_listener pop3 {
    address = 127.0.0.1
    port = $p_pop3
  }
  inet_listener pop3s {
    address = 127.0.0.1
    port = $p_pop3s
    ssl = yes
  }
}
service lmtp {
  inet_listener lmtp {
    address = 127.0.0.1
    port = $p_lmtp
  }
}
service auth {
  # Postfix's smtpd (user postfix) asks here whether a SASL login is right.
  unix_listener auth-client {
    mode = 0666
  }
}
service anvil {
  # No failed-login penalty (its growing delays would slow the wrong-password tests).
  unix_listener anvil-auth-penalty {
    mode = 0
  }
}
protocol lmtp {
  postmaster_address = postmaster@$domain
}
EOF
if [ "$layout" = inbox-dot ]; then
  # inotify_init fails in the imap processes: IDLE falls back to checking every
  # mailbox_idle_check_interval.
  printf '%s\n' '#include <errno.h>' \
    'int inotify_init(void) { errno = EMFILE; return -1; }' \
    'int inotify_init1(int flags) { (void)flags; errno = EMFILE; return -1; }' >"$dir/noinotify.c"
  cc -shared -fPIC -O2 -o "$dir/noinotify.so" "$dir/noinotify.c" || die "cc failed to build $dir/noinotify.so"
  chmod 0755 "$dir/noinotify.so"
  cat >>"$dir/dovecot.conf" <<EOF
# --layout inbox-dot: the personal namespace INBOX. with . as separator, and a slow IDLE.
namespace inbox {
  prefix = INBOX.
  separator = .
  inbox = yes
  # RFC 6154 special-use folders as most servers have them (no \\Archive: clients make their own).
  mailbox Sent {
    special_use = \\Sent
    auto = subscribe
  }
  mailbox Drafts {
    special_use = \\Drafts
    auto = subscribe
  }
  mailbox Trash {
    special_use = \\Trash
    auto = subscribe
  }
}
mailbox_idle_check_interval = 60 secs
import_environment = TZ LD_PRELOAD=$dir/noinotify.so
EOF
fi

cat >"$dir/postfix/main.cf" <<EOF
# Written by scripts/mailserver.sh: a private Postfix on 127.0.0.1 (not /etc/postfix).
compatibility_level = 3.6
queue_directory = $dir/pq
data_directory = $dir/pd
mail_owner = postfix
setgid_group = postdrop
maillog_file = $dir/log/postfix.log
maillog_file_prefixes = $dir/log
inet_interfaces = 127.0.0.1
inet_protocols = ipv4
myhostname = mail.$domain
mydomain = $domain
myorigin = $domain
mydestination =
mynetworks = 127.0.0.0/8
alias_maps =
alias_database =
local_recipient_maps =
biff = no
virtual_mailbox_domains = $domain
virtual_mailbox_maps = texthash:$dir/postfix/vmailbox
virtual_transport = lmtp:inet:127.0.0.1:$p_lmtp
# Loadgen sends many messages per connection and many connections; no artificial limits.
smtpd_client_connection_count_limit = 0
smtpd_client_connection_rate_limit = 0
smtpd_client_message_rate_limit = 0
default_process_limit = 200
smtpd_sasl_type = dovecot
smtpd_sasl_path = $dir/run/auth-client
smtpd_sasl_auth_enable = no
smtpd_tls_cert_file = $dir/tls/server.pem
smtpd_tls_key_file = $dir/tls/server.key
smtpd_tls_security_level = may
smtpd_tls_loglevel = 0
smtpd_relay_restrictions = permit_sasl_authenticated, reject_unauth_destination
smtpd_recipient_restrictions = reject_unlisted_recipient
lmtp_destination_concurrency_limit = 50
EOF

cat >"$dir/postfix/master.cf" <<EOF
# Written by scripts/mailserver.sh. Nothing runs chrooted (the instance lives in $dir).
# service type  private unpriv  chroot  wakeup  maxproc command
127.0.0.1:$p_sub inet n - n - - smtpd
  -o syslog_name=postfix/submission
  -o smtpd_tls_security_level=encrypt
  -o smtpd_sasl_auth_enable=yes
  -o smtpd_tls_auth_only=yes
  -o smtpd_client_restrictions=permit_sasl_authenticated,reject
  -o smtpd_relay_restrictions=permit_sasl_authenticated,reject
127.0.0.1:$p_subs inet n - n - - smtpd
  -o syslog_name=postfix/submissions
  -o smtpd_tls_wrappermode=yes
  -o smtpd_sasl_auth_enable=yes
  -o smtpd_client_restrictions=permit_sasl_authenticated,reject
  -o smtpd_relay_restrictions=permit_sasl_authenticated,reject
pickup    unix  n       -       n       60      1       pickup
cleanup   unix  n       -       n       -       0       cleanup
qmgr      unix  n       -       n       300     1       qmgr
tlsmgr    unix  -       -       n       1000?   1       tlsmgr
rewrite   unix  -       -       n       -       -       trivial-rewrite
bounce    unix  -       -       n       -       0       bounce
defer     unix  -       -       n       -       0       bounce
trace     unix  -       -       n       -       0       bounce
verify    unix  -       -       n       -       1       verify
flush     unix  n       -       n       1000?   0       flush
proxymap  unix  -       -       n       -       -       proxymap
proxywrite unix -       -       n       -       1       proxymap
smtp      unix  -       -       n       -       -       smtp
relay     unix  -       -       n       -       -       smtp
showq     unix  n       -       n       -       -       showq
error     unix  -       -       n       -       -       error
retry     unix  -       -       n       -       -       error
discard   unix  -       -       n       -       -       discard
local     unix  -       n       n       -       -       local
virtual   unix  -       n       n       -       -       virtual
lmtp      unix  -       -       n       -       -       lmtp
anvil     unix  -       -       n       -       1       anvil
scache    unix  -       -       n       -       1       scache
postlog   unix-dgram n  -       n       -       1       postlogd
EOF
if [ "$relay" = 1 ]; then
  printf '%s\n' "127.0.0.1:$p_relay inet n - n - - smtpd" "  -o syslog_name=postfix/relay" \
    "  -o smtpd_tls_security_level=none" >>"$dir/postfix/master.cf"
fi
# Postfix waits until a freshly written main.cf is over 2 s old before using it: backdate.
touch -d '-1 minute' "$dir/postfix/main.cf" "$dir/postfix/master.cf" "$dir/postfix/vmailbox"

cat >"$dir/server.env" <<EOF
MBX_MAIL_DIR=$dir
MBX_MAIL_HOST=127.0.0.1
MBX_MAIL_DOMAIN=$domain
MBX_MAIL_USERS=$users
MBX_MAIL_USER_TEMPLATE=loadgen%d
MBX_MAIL_PASSWORD=$password
MBX_MAIL_SUBMISSION_PORT=$p_sub
MBX_MAIL_SUBMISSIONS_PORT=$p_subs
MBX_MAIL_IMAP_PORT=$p_imap
MBX_MAIL_IMAPS_PORT=$p_imaps
MBX_MAIL_POP3_PORT=$p_pop3
MBX_MAIL_POP3S_PORT=$p_pop3s
MBX_MAIL_LMTP_PORT=$p_lmtp
MBX_MAIL_CA_FILE=$dir/tls/ca.pem
MBX_MAIL_MAILDIR=$dir/mail/%u/Maildir
EOF
[ "$relay" = 0 ] || echo "MBX_MAIL_RELAY_PORT=$p_relay" >>"$dir/server.env"

fail_start() {
  echo "mailserver.sh: $1; the logs:" >&2
  tail -n 30 "$dir/log/dovecot.log" "$dir/log/postfix.log" >&2 2>/dev/null || true
  # Postfix prints its configuration errors only to a terminal: give it one.
  if command -v script >/dev/null && [ -f "$dir/postfix/main.cf" ]; then
    script -qc "postfix -c $dir/postfix check" /dev/null >&2 || true
  fi
  # MBX_MAILSERVER_KEEP=1 keeps DIR for a look.
  keep=${MBX_MAILSERVER_KEEP:-0}
  stop_server "$dir" >/dev/null 2>&1 || true
  exit 1
}

# Dovecot first (Postfix's SASL and LMTP go to it). Its daemon keeps stdout/stderr open: detach.
# Each session holds descriptors in the login process and the master: raise the soft limit.
# Root may raise the hard limit too (up to fs.nr_open); others stay under theirs.
want_fds=$(( connections * 4 + 1024 ))
hard_fds=$(ulimit -Hn)
if [ "$hard_fds" != unlimited ] && [ "$hard_fds" -lt "$want_fds" ] && [ "$(id -u)" = 0 ]; then
  nr_open=$(cat /proc/sys/fs/nr_open 2>/dev/null || echo "$hard_fds")
  ulimit -Hn "$(( want_fds < nr_open ? want_fds : nr_open ))" 2>/dev/null || true
  hard_fds=$(ulimit -Hn)
fi
if [ "$hard_fds" != unlimited ] && [ "$hard_fds" -lt "$want_fds" ]; then
  echo "mailserver.sh: warning: open files limited to $hard_fds (--connections $connections wants $want_fds)" >&2
  want_fds=$hard_fds
fi
ulimit -Sn "$want_fds" 2>/dev/null || true
dovecot -c "$dir/dovecot.conf" </dev/null >/dev/null 2>>"$dir/log/dovecot.log" || fail_start "dovecot did not start"
postfix -c "$dir/postfix" start </dev/null >>"$dir/log/postfix.log" 2>&1 || fail_start "postfix did not start"
for p in $ports; do
  wait_port "$p" || fail_start "nothing listens on 127.0.0.1:$p after 10 s"
done

if [ -n "$watch" ]; then
  # Stop the server when the watched process ends (a test binary that crashed included).
  script=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
  setsid bash -c '
    export MBX_MAILSERVER_WATCHER=$$
    while kill -0 '"$watch"' 2>/dev/null; do sleep 0.5; done
    exec "$0" stop "$1"' "$script" "$dir" </dev/null >/dev/null 2>&1 &
  echo $! >"$dir/watch.pid"
fi

cat "$dir/server.env"
