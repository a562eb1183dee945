#!/usr/bin/env bash
# A private Exchange ActiveSync server on loopback for `mbxstress loadgen` and its tests: SOGo
# with its ActiveSync module (sogod), a private PostgreSQL cluster for SOGo's users and folders,
# memcached, and the Postfix + Dovecot of scripts/mailserver.sh for the mail itself (IMAP store,
# SMTP relay), with users loadgen1..N; a throwaway configuration in DIR.
#
#   scripts/easserver.sh start DIR [--users N] [--password PW] [--domain D] [--port-base P]
#                                  [--workers W] [--watch PID]
#   scripts/easserver.sh stop DIR [--keep]
#   scripts/easserver.sh status DIR
#
# start prints KEY=VALUE lines (also in DIR/server.env): MBX_EAS_URL (the ActiveSync endpoint,
# http://127.0.0.1:P/SOGo/Microsoft-Server-ActiveSync), MBX_EAS_USERS, MBX_EAS_USER_TEMPLATE,
# MBX_EAS_PASSWORD, MBX_EAS_DOMAIN, and the mail server's MBX_MAIL_* lines; it returns once an
# authenticated OPTIONS on the endpoint answers MS-ASProtocolVersions. Ports: P+0 sogod, P+1
# PostgreSQL, P+2 memcached (without --port-base the first free block of 10 from 30000); the
# mail server takes its own block (scripts/mailserver.sh, from 24000). --workers W (default 8):
# sogod worker processes; each parked Ping holds one, so give more than the devices that push.
# --watch PID stops everything when that process exits (test harnesses use it).
# stop ends every daemon start started and removes DIR (only a DIR that start made; --keep
# leaves it).
#
# Needs root (Postfix starts only as root; sogod, postgres and memcached then run as their own
# users). Installs what is missing with apt-get (sogo, sogo-activesync, memcached, postgresql,
# and the mail server's packages). Nothing outside DIR is written: no /etc/sogo, no system
# PostgreSQL cluster. The comments below say why each setting is there.
set -euo pipefail

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
  exit 2
}

here=$(cd "$(dirname "$0")" && pwd)
mailserver=$here/mailserver.sh
marker=.mbxstress-easserver
cleanup_dir=""
die() {
  echo "easserver.sh: $*" >&2
  [ -z "$cleanup_dir" ] || rm -rf "$cleanup_dir"
  exit 1
}

[ $# -ge 2 ] || usage
cmd=$1
dir=$2
shift 2

users=10
password=loadgen
domain=loadgen.test
port_base=""
workers=8
watch=""
keep=0
while [ $# -gt 0 ]; do
  case $1 in
  --users) users=$2; shift 2 ;;
  --password) password=$2; shift 2 ;;
  --domain) domain=$2; shift 2 ;;
  --port-base) port_base=$2; shift 2 ;;
  --workers) workers=$2; shift 2 ;;
  --watch) watch=$2; shift 2 ;;
  --keep) keep=1; shift ;;
  *) usage ;;
  esac
done

pg_bin() {
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  [ -n "$d" ] && [ -x "$d/initdb" ] && echo "$d"
}

port_in_use() {
  if command -v ss >/dev/null 2>&1; then
    ss -Htln "sport = :$1" 2>/dev/null | grep -q .
  else
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
  fi
}

wait_port() {
  local port=$1 tries=${2:-100} i
  for i in $(seq 1 "$tries"); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      return 0
    fi
    sleep 0.1
  done
  return 1
}

# Ends the process group `pid` leads (a daemon started with setsid and its workers): TERM, then
# KILL after the grace (idle sogod workers ignore TERM until their next request).
stop_group() {
  local pid=$1 grace=${2:-20} i
  [ -n "$pid" ] || return 0
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || return 0
  for i in $(seq 1 "$grace"); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
}

stop_stack() {
  local d=$1
  [ -f "$d/$marker" ] || die "$d was not made by 'easserver.sh start' (no $marker): not touching it"
  [ -f "$d/sogo/sogod.pid" ] && stop_group "$(cat "$d/sogo/sogod.pid" 2>/dev/null || true)" 20
  [ -f "$d/memcached.pid" ] && stop_group "$(cat "$d/memcached.pid" 2>/dev/null || true)" 10
  local pg
  pg=$(pg_bin || true)
  if [ -n "$pg" ] && [ -f "$d/pg/data/postmaster.pid" ]; then
    setpriv --reuid=postgres --regid=postgres --init-groups \
      "$pg/pg_ctl" -D "$d/pg/data" -m immediate -w -t 10 stop >/dev/null 2>&1 || true
    local ppid
    ppid=$(head -n 1 "$d/pg/data/postmaster.pid" 2>/dev/null || true)
    [ -z "$ppid" ] || kill -KILL "$ppid" 2>/dev/null || true
  fi
  if [ -d "$d/mail" ]; then
    if [ "$keep" = 1 ]; then
      bash "$mailserver" stop "$d/mail" --keep >/dev/null 2>&1 || true
    else
      bash "$mailserver" stop "$d/mail" >/dev/null 2>&1 || true
    fi
  fi
  if [ -f "$d/watch.pid" ]; then
    local w
    w=$(cat "$d/watch.pid")
    [ "$w" = "$$" ] || [ "$w" = "${MBX_EASSERVER_WATCHER:-}" ] || kill "$w" 2>/dev/null || true
  fi
  if [ "$keep" = 0 ]; then
    rm -rf "$d"
  fi
}

case $cmd in
stop)
  [ -d "$dir" ] || exit 0
  stop_stack "$dir"
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

[ "$(id -u)" = 0 ] || die "must run as root: Postfix starts only as root, and sogod, postgres and memcached are started as their own users"
case $users in '' | *[!0-9]* | 0) die "--users must be a positive number" ;; esac
case $workers in '' | *[!0-9]* | 0) die "--workers must be a positive number" ;; esac

# Packages: installed when missing (as .ci/run does).
need=()
[ -x /usr/sbin/sogod ] || need+=(sogo)
dpkg -s sogo-activesync >/dev/null 2>&1 || need+=(sogo-activesync)
command -v memcached >/dev/null 2>&1 || need+=(memcached)
pg_bin >/dev/null || need+=(postgresql)
command -v postfix >/dev/null 2>&1 || need+=(postfix)
[ -x /usr/lib/dovecot/imap ] && [ -x /usr/lib/dovecot/lmtp ] || need+=(dovecot-imapd dovecot-lmtpd)
[ -x /usr/lib/dovecot/pop3 ] || need+=(dovecot-pop3d)
command -v setpriv >/dev/null 2>&1 || need+=(util-linux)
if [ "${#need[@]}" -gt 0 ]; then
  echo "easserver.sh: installing ${need[*]}" >&2
  echo "postfix postfix/main_mailer_type select No configuration" | debconf-set-selections
  # Debian's packages start their daemons only under an init system; none runs here.
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null 2>&1 || {
    apt-get update -qq >/dev/null 2>&1 || true
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null ||
      die "apt-get install ${need[*]} failed"
  }
fi
pg=$(pg_bin) || die "PostgreSQL's initdb not found under /usr/lib/postgresql/*/bin"
id sogo >/dev/null 2>&1 || die "no 'sogo' user (the sogo package makes it)"

dir=$(realpath -m "$dir")
# The mail server's folder (DIR/mail) must stay under 60 characters (socket paths).
[ "${#dir}" -le 55 ] || die "$dir is too long (keep DIR under 55 characters: the mail server's Unix sockets live in it)"
p=$dir
while [ "$p" != / ]; do
  p=$(dirname "$p")
  [ -e "$p" ] || continue
  perm=$(stat -c %A "$p")
  [ "${perm:9:1}" = x ] || [ "${perm:9:1}" = t ] || die "$p is not traversable by other users (chmod o+x $p): sogod, postgres and Dovecot cannot reach $dir"
done
if [ -e "$dir" ]; then
  [ -z "$(ls -A "$dir" 2>/dev/null)" ] || die "$dir exists and is not empty (stop the server there first)"
fi
mkdir -p "$dir"
chmod 0755 "$dir"
touch "$dir/$marker"
cleanup_dir=$dir

if [ -z "$port_base" ]; then
  for b in $(seq 30000 10 39990); do
    if ! port_in_use "$b" && ! port_in_use $((b + 1)) && ! port_in_use $((b + 2)); then
      port_base=$b
      break
    fi
  done
  [ -n "$port_base" ] || die "no free block of ports between 30000 and 39999"
fi
p_sogo=$port_base
p_pg=$((port_base + 1))
p_mc=$((port_base + 2))
for p in $p_sogo $p_pg $p_mc; do
  port_in_use "$p" && die "port $p is in use (choose another --port-base)"
done

fail_start() {
  echo "easserver.sh: $1; the logs:" >&2
  tail -n 30 "$dir/sogo/sogod.log" "$dir/pg/postgres.log" "$dir/memcached.log" >&2 2>/dev/null || true
  keep=${MBX_EASSERVER_KEEP:-0}
  stop_stack "$dir" >/dev/null 2>&1 || true
  exit 1
}

# The mail store and relay: Dovecot IMAP for SOGo's mail, Postfix's plain relay port for its
# SendMail (--relay), the same users and password.
mail_env=$(bash "$mailserver" start "$dir/mail" --users "$users" --password "$password" \
  --domain "$domain" --relay ${watch:+--watch "$watch"}) || fail_start "the mail server did not start"
cleanup_dir=""
imap_port=$(sed -n 's/^MBX_MAIL_IMAP_PORT=//p' <<<"$mail_env")
relay_port=$(sed -n 's/^MBX_MAIL_RELAY_PORT=//p' <<<"$mail_env")
[ -n "$imap_port" ] && [ -n "$relay_port" ] || fail_start "the mail server printed no IMAP or relay port"

# PostgreSQL: a private cluster, trust authentication on loopback TCP only, no fsync (a test
# server: its data is thrown away).
mkdir -p "$dir/pg"
chown postgres:postgres "$dir/pg"
as_pg() { setpriv --reuid=postgres --regid=postgres --init-groups "$@"; }
as_pg "$pg/initdb" -D "$dir/pg/data" -A trust -U sogo -E UTF8 --locale=C --no-sync \
  >"$dir/pg/initdb.log" 2>&1 || { cat "$dir/pg/initdb.log" >&2; fail_start "initdb failed"; }
as_pg "$pg/pg_ctl" -D "$dir/pg/data" -l "$dir/pg/postgres.log" -w -t 30 \
  -o "-p $p_pg -c listen_addresses=127.0.0.1 -c unix_socket_directories= -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" \
  start >/dev/null 2>&1 || fail_start "postgres did not start"
psql_() { "$pg/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$p_pg" -U sogo "$@"; }
psql_ -d postgres -c "CREATE DATABASE sogo" >/dev/null || fail_start "CREATE DATABASE failed"
{
  echo "CREATE TABLE sogo_users (c_uid varchar(255) PRIMARY KEY, c_name varchar(255), c_password varchar(255), c_cn varchar(255), mail varchar(255));"
  for i in $(seq 1 "$users"); do
    echo "INSERT INTO sogo_users VALUES ('loadgen$i', 'loadgen$i', '$password', 'Loadgen User $i', 'loadgen$i@$domain');"
  done
} | psql_ -d sogo >/dev/null || fail_start "the users table could not be made"

# memcached: SOGo's cache (sessions, ActiveSync state between requests).
setsid memcached -u memcache -l 127.0.0.1 -p "$p_mc" -U 0 -m 64 -c 4096 </dev/null >"$dir/memcached.log" 2>&1 &
echo $! >"$dir/memcached.pid"
wait_port "$p_mc" || fail_start "memcached does not listen on 127.0.0.1:$p_mc"

# sogod. Its configuration without /etc/sogo: sogod reads /etc/sogo/*.conf, then its GNUstep
# defaults domain `sogod` (key by key over it), which GNUstep looks for in the sogo user's
# GNUstep defaults folder, found through GNUSTEP_CONFIG_FILE: a private GNUstep.conf naming
# DIR/sogo/defaults, which holds sogod.plist.
mkdir -p "$dir/sogo/defaults"
db="postgresql://sogo@127.0.0.1:$p_pg/sogo"
{
  [ -f /etc/GNUstep/GNUstep.conf ] && grep -v '^GNUSTEP_USER_' /etc/GNUstep/GNUstep.conf
  echo "GNUSTEP_USER_DEFAULTS_DIR=$dir/sogo/defaults"
  echo "GNUSTEP_USER_CONFIG_FILE=$dir/sogo/no-user-GNUstep.conf"
} >"$dir/sogo/GNUstep.conf"
cat >"$dir/sogo/defaults/sogod.plist" <<EOF
{
  WOPort = "127.0.0.1:$p_sogo";
  WOWorkersCount = $workers;
  /* The default backlog is 5: more devices than that connecting at once are refused. */
  WOListenQueueSize = 256;
  /* Minutes; must exceed the longest Ping a device parks. */
  WOWatchDogRequestTimeout = 65;
  SOGoProfileURL = "$db/sogo_user_profile";
  OCSFolderInfoURL = "$db/sogo_folder_info";
  OCSSessionsFolderURL = "$db/sogo_sessions_folder";
  OCSEMailAlarmsFolderURL = "$db/sogo_alarms_folder";
  SOGoUserSources = (
    {
      type = sql;
      id = users;
      viewURL = "$db/sogo_users";
      canAuthenticate = YES;
      isAddressBook = NO;
      userPasswordAlgorithm = plain;
    }
  );
  SOGoMailDomain = "$domain";
  SOGoIMAPServer = "imap://127.0.0.1:$imap_port";
  SOGoSMTPServer = "smtp://127.0.0.1:$relay_port";
  SOGoMailingMechanism = smtp;
  SOGoSentFolderName = Sent;
  SOGoDraftsFolderName = Drafts;
  SOGoTrashFolderName = Trash;
  SOGoMemcachedHost = "127.0.0.1:$p_mc";
  SOGoTimeZone = UTC;
  SOGoLanguage = English;
  SOGoEnableEMailAlarms = NO;
  /* Seconds. The default longest Ping is 10 s (a longer heartbeat gets Ping status 5). */
  SOGoMaximumPingInterval = 3540;
  SOGoMaximumSyncInterval = 3540;
  /* How often a parked Ping or long Sync looks for changes; below 5 a Ping is held 2.5 times
     longer than asked. */
  SOGoInternalSyncInterval = 5;
  /* A load test: no lock-out, no request or submission rate limits. */
  SOGoMaximumFailedLoginCount = 0;
  SOGoMaximumRequestCount = 0;
  SOGoMaximumMessageSubmissionCount = 0;
}
EOF
chown -R sogo:sogo "$dir/sogo"
touch "$dir/sogo/sogod.log"
chown sogo:sogo "$dir/sogo/sogod.log"
# sogod refuses to run as root; when its log or pid file is not writable it exits 0 silently.
setsid setpriv --reuid=sogo --regid=sogo --init-groups \
  env HOME="$dir/sogo" GNUSTEP_CONFIG_FILE="$dir/sogo/GNUstep.conf" \
  /usr/sbin/sogod -WONoDetach YES -WOLogFile "$dir/sogo/sogod.log" -WOPidFile "$dir/sogo/sogod.master.pid" \
  </dev/null >>"$dir/sogo/sogod.log" 2>&1 &
echo $! >"$dir/sogo/sogod.pid"
wait_port "$p_sogo" 300 || fail_start "sogod does not listen on 127.0.0.1:$p_sogo after 30 s"

# SOGo's mail SyncKey is UIDNEXT-HIGHESTMODSEQ from a plain SELECT, which Dovecot reports only
# once a CONDSTORE session has opened the mailbox: open each user's INBOX so once (else every
# Inbox Sync answers "no changes" forever). Folders made later need the same.
for i in $(seq 1 "$users"); do
  out=$(
    exec 3<>"/dev/tcp/127.0.0.1/$imap_port"
    printf 'a LOGIN loadgen%d "%s"\r\nb ENABLE CONDSTORE\r\nc SELECT INBOX\r\nd LOGOUT\r\n' "$i" "$password" >&3
    timeout 10 cat <&3
  ) || true
  grep -q 'HIGHESTMODSEQ' <<<"$out" || fail_start "loadgen$i's INBOX did not report HIGHESTMODSEQ after ENABLE CONDSTORE"
done

url="http://127.0.0.1:$p_sogo/SOGo/Microsoft-Server-ActiveSync"
# Ready when an authenticated OPTIONS answers with the protocol versions (sogod's first
# requests load its bundles: allow 30 s).
auth=$(printf 'loadgen1:%s' "$password" | base64 -w0)
ready=0
for _ in $(seq 1 60); do
  answer=$(
    exec 3<>"/dev/tcp/127.0.0.1/$p_sogo" || exit 0
    printf 'OPTIONS /SOGo/Microsoft-Server-ActiveSync HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nAuthorization: Basic %s\r\nConnection: close\r\n\r\n' "$p_sogo" "$auth" >&3
    timeout 10 cat <&3
  ) 2>/dev/null || true
  if grep -qi '^MS-ASProtocolVersions:' <<<"$answer"; then
    ready=1
    break
  fi
  sleep 0.5
done
[ "$ready" = 1 ] || fail_start "OPTIONS $url did not answer MS-ASProtocolVersions within 30 s"

if [ -n "$watch" ]; then
  script=$here/$(basename "$0")
  setsid bash -c '
    export MBX_EASSERVER_WATCHER=$$
    while kill -0 '"$watch"' 2>/dev/null; do sleep 0.5; done
    exec "$0" stop "$1"' "$script" "$dir" </dev/null >/dev/null 2>&1 &
  echo $! >"$dir/watch.pid"
fi

{
  echo "MBX_EAS_DIR=$dir"
  echo "MBX_EAS_URL=$url"
  echo "MBX_EAS_USERS=$users"
  echo "MBX_EAS_USER_TEMPLATE=loadgen%d"
  echo "MBX_EAS_PASSWORD=$password"
  echo "MBX_EAS_DOMAIN=$domain"
  echo "MBX_EAS_SOGO_PORT=$p_sogo"
  echo "MBX_EAS_POSTGRES_PORT=$p_pg"
  echo "MBX_EAS_MEMCACHED_PORT=$p_mc"
  echo "$mail_env"
} >"$dir/server.env"
cat "$dir/server.env"
