#!/usr/bin/env python3
"""The table of bench/profile.sh: each perf sample (and callgrind instruction) of a tool put in
one category by its symbol, first matching rule wins, then turned into µs (instructions) per
transactional I/O. Usage: profile_table.py RESULT_DIR (holding mbx.json, fio.json,
mbx-perf.txt, fio-perf.txt and optionally mbx-callgrind.{json,txt})."""
import json
import os
import re
import sys

# (category, what it is: "verification" is the price of proving every page, "I/O" the work any
# load generator does, "overhead" what neither needs), regex over "dso symbol").
RULES = [
    ("checksum (XXH3 of every page read and written)", "verification",
     r"fastsum|block_checksum|checksum_ok|xxh3|Xxh3|check_data_page|quick_check"),
    ("page generation (unique stamped payload)", "verification",
     r"build_data_page|xs_body|fill_xs|fill_random|page::build|payload_seed|block_stamp|wymix|page::seal"),
    ("verification bookkeeping (tracker, journal, verifier)", "verification",
     r"db::verify|db::pages|db::journal|PageTracker|Journal|journal::"),
    ("cache (pages, LRU, dirty set)", "overhead", r"cache::|Cache"),
    ("fio's rate limiting: the sleep loop of its rate_iops log and BDM jobs", "overhead",
     r"usec_sleep|fio .*fio_gettime|fio .*utime_since_now"),
    ("histograms and statistics", "overhead",
     r"hdrhistogram|Histogram|hist::|stats::|add_clat_sample|add_lat_sample|add_slat|io_u_mark|add_iops|add_bw|__add_stat|account_io_completion|lat_target|add_.*_sample"),
    ("clock reads", "overhead",
     r"clock_gettime|__vdso|Instant::now|Timespec|fio_gettime|utime_since|mtime_since|ntime_since|get_cycles|cycles_to|tsc"),
    ("allocation", "overhead",
     r"malloc|free|calloc|realloc|__rust_alloc|__rust_dealloc|_int_|alloc::alloc|tcache|sbrk|mmap|munmap|brk"),
    ("memcpy / memset", "overhead", r"memcpy|memmove|memset|__memcmp|bcmp"),
    ("submission (user space)", "I/O",
     r"UringQueue.*submit|Reactor::submit|io_uring::submit|io_uring::squeue|fio_ioring_queue|fio_ioring_commit|td_io_queue|io_u_submit|get_io_u|fill_io_u|td_io_prep|fio_ioring_prep|get_next_offset|get_next_block|__get_io_u|io_u_quiesce|ioring_queue"),
    ("completion (user space)", "I/O",
     r"UringQueue.*drain|UringQueue.*reap|Reactor::wait|io_uring::cqueue|fio_ioring_getevents|fio_ioring_event|io_u_queued_complete|io_u_complete|ios_completed|td_io_getevents|put_io_u|io_completed|wait_for_completions|ioring_getevents"),
    ("sessions, pacing, executor, flusher, log writer", "overhead",
     r"workload::|pacing|session|exec::|phase::|db::flusher|db::log|db::bdm|db::replication|db::checkpoint|db::Database|Engine|run::|rand|Rng|Pcg|Xoshiro|fx|FxHash|hashbrown"),
    ("fio's job loop and rate control", "I/O",
     r"^fio |thread_main|do_io|rate_ddir|usec_for_io|should_check_rate|io_queue_event|td_|runtime_exceeded|__should_check|fio_"),
    ("kernel: io_uring (submit, issue, complete)", "I/O",
     r"\[k\] .*(io_uring|io_submit_sqes|io_issue_sqe|io_read|io_write|io_rw|io_req|io_cqring|io_cqe|io_fill|io_post|io_do_iopoll|io_import|io_run_task|io_free|io_alloc|io_queue|io_wq|io_prep|io_complete|__io_|io_fsync|io_sq_|io_submit|io_cq|io_put|io_kiocb|io_cancel|io_link|io_flush|io_poll|io_arm|io_apoll)"),
    ("kernel: file system and block layer (O_DIRECT)", "I/O",
     r"\[k\] .*(iomap|ext4|blk_|bio_|__bio|submit_bio|dio|virtblk|virtqueue|vring|virtio|mq_|scsi|nvme|jbd2|iov_|get_user_pages|pin_user|gup_|follow_page|folio|__filemap|filemap|generic_file|file_write|file_read|vfs_|rw_verify|security_file|fsnotify|page_|unpin|bvec|sg_|dma_|kiocb|percpu_ref|elv|dd_|bfq|kyber|sbitmap|__rq|rq_|request|plug)"),
    ("kernel: syscall entry and exit", "I/O",
     r"\[k\] .*(entry_SYSCALL|syscall|do_syscall|__x64|__sys|exit_to_user|__rseq|rseq|restore_regs|native_irq_return|irqentry|fpregs|switch_fpu|xfd|__fsnotify|fdget|fget|fput|__fget|clear_bhb|srso|retbleed|__pfx)"),
    ("kernel: interrupts and scheduling", "I/O",
     r"\[k\] .*(irq|softirq|sched|schedule|__switch_to|finish_task_switch|pick_next|enqueue|dequeue|try_to_wake|wake_up|hrtimer|timer|tick|clock|update_|idle|cpuidle|do_idle|nohz|ktime|load_balance|__raw_spin|_raw_spin|spin_|mutex|rcu|futex|__wake|ttwu|task_|context_switch|pv_|kvm|paravirt|default_idle|native_|apic|swake|wait_)"),
    ("kernel: page faults and memory", "overhead",
     r"\[k\] .*(fault|handle_mm|do_anonymous|clear_page|zap_|tlb|lru|mem_cgroup|memcg|alloc_pages|__alloc|kmem|kmalloc|kfree|slab|slub|__slab|vma|mm_)"),
    ("kernel: other", "other", r"\[k\]"),
    ("other user space (std, libc, unresolved)", "other", r"."),
]
COMPILED = [(name, kind, re.compile(rx)) for name, kind, rx in RULES]


def category(key):
    for name, kind, rx in COMPILED:
        if rx.search(key):
            return name
    return RULES[-1][0]


def perf_shares(path):
    """{category: share} from `perf report --stdio --sort dso,sym -F`-style lines."""
    out, total = {}, 0.0
    if not os.path.exists(path):
        return out
    line_rx = re.compile(r"^\s*([\d.]+)%\s+(\S+)\s+(\[[.k]\])\s+(.*)$")
    for line in open(path, errors="replace"):
        m = line_rx.match(line)
        if not m:
            continue
        pct, dso, kind, sym = float(m.group(1)), m.group(2), m.group(3), m.group(4).strip()
        key = f"{dso} {kind} {sym}"
        c = category(key)
        out[c] = out.get(c, 0.0) + pct
        total += pct
    return {k: v / total for k, v in out.items()} if total else out


def callgrind_counts(path):
    """{category: instructions}, total, from callgrind_annotate's per-function lines."""
    out, total = {}, 0
    if not os.path.exists(path):
        return out, 0
    line_rx = re.compile(r"^\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(\S.*)$")
    # The per-function table: from the "Ir  file:function" header to the first blank line
    # (annotated source follows it, when callgrind_annotate annotates).
    state = 0
    for line in open(path, errors="replace"):
        if "PROGRAM TOTALS" in line:
            first = line.split()[0].replace(",", "")
            total = int(first) if first.isdigit() else 0
            continue
        if state == 0:
            state = 1 if "file:function" in line else 0
            continue
        if line.startswith("--"):
            continue
        if not line.strip():
            break
        m = line_rx.match(line)
        if not m or ":" not in m.group(2):
            continue
        n = int(m.group(1).replace(",", ""))
        sym = m.group(2)
        key = sym.split(":", 1)[1] if "???:" in sym or ".rs:" in sym else sym
        key = re.sub(r"\s*\[[^\]]*\]\s*$", "", key)
        c = category("mbxstress [.] " + key)
        out[c] = out.get(c, 0) + n
    return out, total


def main(d):
    mbx = json.load(open(os.path.join(d, "mbx.json")))
    fio = json.load(open(os.path.join(d, "fio.json")))
    sm, sf = perf_shares(os.path.join(d, "mbx-perf.txt")), perf_shares(os.path.join(d, "fio-perf.txt"))
    kinds = {name: kind for name, kind, _ in RULES}
    print(f"CPU per transactional I/O: mbxstress {mbx['cpu_us_per_io']:.2f} µs "
          f"({mbx['iops']:.0f} IOPS, {mbx['cpu_s']:.1f} s CPU), fio {fio['cpu_us_per_io']:.2f} µs "
          f"({fio['iops']:.0f} IOPS, {fio['cpu_s']:.1f} s CPU): ratio "
          f"{mbx['cpu_us_per_io'] / fio['cpu_us_per_io']:.2f}")
    if mbx.get("pages_verified"):
        print(f"Pages verified over the whole run {mbx['pages_verified']}, of them checksummed "
              f"whole {mbx['pages_checksummed']} "
              f"({mbx['pages_checksummed'] / mbx['pages_verified']:.3f} per page verified)")
    print()
    print("perf record (cpu-clock samples), each category's share of the tool's whole CPU as µs per "
          "transactional I/O:")
    print()
    print("| category | kind | mbxstress µs/IO | mbxstress % | fio µs/IO | fio % |")
    print("|---|---|---|---|---|---|")
    for name, kind, _ in RULES:
        a, b = sm.get(name, 0.0), sf.get(name, 0.0)
        if a == 0 and b == 0:
            continue
        print(f"| {name} | {kind} | {a * mbx['cpu_us_per_io']:.2f} | {a * 100:.1f} | "
              f"{b * fio['cpu_us_per_io']:.2f} | {b * 100:.1f} |")
    by = {}
    for name, share in sm.items():
        by[kinds[name]] = by.get(kinds[name], 0.0) + share
    print()
    print("mbxstress by kind: " + ", ".join(
        f"{k} {v * mbx['cpu_us_per_io']:.2f} µs ({v * 100:.0f}%)" for k, v in sorted(by.items())))
    cgj = os.path.join(d, "mbx-callgrind.json")
    if os.path.exists(cgj):
        cg = json.load(open(cgj))
        counts, total = callgrind_counts(os.path.join(d, "mbx-callgrind.txt"))
        ios = max(cg["ios"], 1)
        print()
        print(f"callgrind (user-space instructions of the measured phase, {cg['ios']:.0f} "
              f"transactional I/Os at valgrind's speed): {total / ios:.0f} instructions per I/O")
        print()
        print("| category | instructions per I/O | % |")
        print("|---|---|---|")
        for name, _, _ in RULES:
            n = counts.get(name, 0)
            if n:
                print(f"| {name} | {n / ios:.0f} | {n * 100 / max(total, 1):.1f} |")


if __name__ == "__main__":
    main(sys.argv[1])
