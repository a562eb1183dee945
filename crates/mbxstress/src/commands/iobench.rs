//! `mbxstress iobench`: raw fio-like I/O jobs through the same queues as the store.

use std::process::ExitCode;
use std::sync::atomic::Ordering;

use anyhow::Context;
use mbx_io::bench::{
    check_bs, memory_budget, prepare_file, run as run_bench, BenchError, BenchSpec, RwMode,
    StreamResult,
};

use crate::cli::IobenchArgs;
use crate::exit::usage;
use crate::render::num;

pub fn run(args: IobenchArgs) -> anyhow::Result<ExitCode> {
    let rw = RwMode::parse(&args.rw).ok_or_else(|| usage(format!("invalid --rw {}", args.rw)))?;
    // Ctrl-C from here on stops cleanly, also while the file is laid out.
    let cancel = crate::interrupt::install();
    let count = |v: u32, flag: &str| {
        usize::try_from(v).map_err(|_| usage(format!("{flag} {v} is too large for this platform")))
    };
    let spec = BenchSpec {
        file: args.file.clone(),
        size: args.size,
        rw,
        rwmixread: args.rwmixread,
        bs: check_bs(args.bs)?,
        iodepth: count(args.iodepth, "--iodepth")?,
        numjobs: count(args.numjobs, "--numjobs")?,
        runtime: args.runtime,
        engine: mbx_engine::engine_kind(args.engine.unwrap_or_default()),
        direct: args.direct == "1",
    };
    // Every range before anything is printed or written.
    spec.validate(memory_budget())?;
    if !args.json {
        errln!(
            "iobench: {} --rw {} --bs {} --iodepth {} --numjobs {} --runtime {:.0}s ({}, {})",
            spec.file.display(),
            args.rw,
            spec.bs,
            spec.iodepth,
            spec.numjobs,
            spec.runtime.as_secs_f64(),
            spec.engine.name(),
            if spec.direct {
                mbx_io::platform::DIRECT_IO_NAME
            } else {
                "buffered"
            }
        );
    }
    // The lock a running test holds on its databases and log folders is respected: `--force`
    // permits overwriting a file, never one another command is using. Held to the end.
    let lock = mbx_store::StoreLock::acquire_bench_file(&spec.file)?;
    let prepared = match prepare_file(&spec, args.force, &cancel) {
        Ok(p) => p,
        Err(e @ BenchError::Interrupted { .. }) => {
            eprintln!("iobench: {e}");
            return Ok(ExitCode::from(crate::interrupt::INTERRUPTED));
        }
        Err(e) => return Err(e.into()),
    };
    let result = run_bench(&spec, &cancel)?;
    drop(prepared);
    drop(lock);
    if args.json {
        let mut out = std::io::stdout().lock();
        serde_json::to_writer_pretty(&mut out, &result).context("writing JSON to stdout")?;
        use std::io::Write;
        writeln!(out).context("writing to stdout")?;
    } else {
        let line = |name: &str, s: &StreamResult| -> std::io::Result<()> {
            if s.ios > 0 {
                outln!(
                    "  {name:<5} IOPS {:>10}  {:>9} MiB/s  latency ms: avg {:.3} p50 {:.3} p99 {:.3} p99.9 {:.3} max {:.3}",
                    num(s.iops, 0),
                    num(s.mib_per_s, 1),
                    s.latency_ms.avg,
                    s.latency_ms.p50,
                    s.latency_ms.p99,
                    s.latency_ms.p999,
                    s.latency_ms.max
                )?;
            }
            Ok(())
        };
        line("read", &result.read).context("writing to stdout")?;
        line("write", &result.write).context("writing to stdout")?;
        outln!(
            "  CPU: user {:.2} s, system {:.2} s ({:.2} us per I/O) over {:.1} s",
            result.cpu_user_s,
            result.cpu_system_s,
            result.cpu_us_per_io,
            result.elapsed_s
        )?;
    }
    if cancel.load(Ordering::Relaxed) {
        return Ok(ExitCode::from(crate::interrupt::INTERRUPTED));
    }
    Ok(ExitCode::SUCCESS)
}
