//! Input files are read bounded and only if regular (issue 8, item 7), and results that are not
//! complete, passing measurements are flagged wherever they are used (issue 8, item 11).
//!
//! `fixtures/mbxstress-result.json` is a real result: a copy of
//! bench/fidelity/2026-11-22T013237Z/copies2/result.json (complete, passing, 300 s measured).

// The FIFO, socket and device cases are Unix only: their helpers are unused elsewhere.
#![cfg_attr(not(unix), allow(unused))]

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use mbx_report::esrp::{load, summarize};
use mbx_report::import::{import_file, ImportError};
#[cfg(target_os = "linux")]
use mbx_report::input::{for_each_line, read_bounded, read_bounded_bytes};
use mbx_report::input::{InputError, REPORT_LIMIT, SAMPLES_LIMIT};
use mbx_report::report::{write_report, write_report_as, ReportError};
use mbx_report::Format;

/// The files written and the result's flags (as `report` shows them).
fn write_report_with_flags(
    input: &Path,
    out: Option<&Path>,
) -> Result<(Vec<PathBuf>, Vec<mbx_report::Flag>), ReportError> {
    write_report_as(input, out, &Format::DEFAULT).map(|w| (w.files, w.flags))
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// The fixture result as JSON, to be changed by a test.
fn result_json() -> serde_json::Value {
    let text = std::fs::read_to_string(fixture("mbxstress-result.json")).expect("fixture");
    serde_json::from_str(&text).expect("fixture JSON")
}

/// The result of an interruption during attain, as issue 8 saw it: "achieved 1000 IOPS" over
/// 0.001 s, interrupted, verdict failed.
fn interrupted_json() -> serde_json::Value {
    let mut v = result_json();
    v["test"]["interrupted"] = true.into();
    v["test"]["duration_s"] = 0.001.into();
    v["achieved_iops"] = 1000.0.into();
    v["verdict"]["pass"] = false.into();
    v["verdict"]["checks"] = serde_json::json!([
        { "name": "completed_duration_s", "value": 0.001, "limit": 300.0, "pass": false }
    ]);
    v
}

fn write_json(path: &Path, v: &serde_json::Value) {
    std::fs::write(path, serde_json::to_string_pretty(v).expect("json")).expect("write");
}

/// Runs `f` on another thread and fails the test if it does not return within 10 s (the old code
/// blocked forever opening a FIFO; the thread is then abandoned, the test still fails).
fn within_10s<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(10))
        .expect("did not return within 10 s: it blocked on the input")
}

#[cfg(unix)]
fn mkfifo(path: &Path) {
    let ok = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("run mkfifo")
        .success();
    assert!(ok, "mkfifo {}", path.display());
}

/// `/dev/zero` is refused at once by every reader, naming it; nothing is read from it.
#[test]
#[cfg(unix)]
fn character_device_is_refused_at_once() {
    let start = Instant::now();
    let dev = Path::new("/dev/zero");
    let e = import_file(dev).expect_err("import /dev/zero");
    assert!(
        matches!(e, ImportError::Input(InputError::NotAFile { .. })),
        "{e:?}"
    );
    let msg = e.to_string();
    assert!(
        msg.contains("/dev/zero") && msg.contains("character device") && msg.contains("expected"),
        "{msg}"
    );
    assert!(load(dev).is_err());
    let e = write_report(dev, None).expect_err("report /dev/zero");
    assert!(
        matches!(e, ReportError::Input(InputError::NotAFile { .. })),
        "{e:?}"
    );
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
}

/// A FIFO with no writer is refused without blocking; a directory and a socket are refused.
#[test]
#[cfg(unix)]
fn fifo_directory_and_socket_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fifo = dir.path().join("report.txt");
    mkfifo(&fifo);
    let f = fifo.clone();
    let e = within_10s(move || import_file(&f).map(|_| ()).map_err(|e| e.to_string()))
        .expect_err("FIFO refused");
    assert!(e.contains("report.txt") && e.contains("FIFO"), "{e}");
    let f = fifo.clone();
    let e = within_10s(move || load(&f).map(|_| ()).map_err(|e| e.to_string()))
        .expect_err("FIFO refused by esrp");
    assert!(e.contains("FIFO"), "{e}");

    let e = import_file(dir.path()).expect_err("directory refused");
    assert!(
        e.to_string().contains("is a directory, not a regular file"),
        "{e}"
    );

    let sock = dir.path().join("s.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&sock).expect("bind");
    let e = load(&sock).expect_err("socket refused");
    assert!(e.to_string().contains("socket"), "{e}");
}

/// A file over the limit is refused from its size, before anything is read: one byte over the
/// 64 MiB report limit, and a 64 GiB sparse file (no disk used) that could not be read in time.
#[test]
fn over_limit_files_are_refused_before_reading() {
    let dir = tempfile::tempdir().expect("tempdir");
    let big = dir.path().join("big.html");
    let f = std::fs::File::create(&big).expect("create");
    f.set_len(REPORT_LIMIT + 1).expect("set_len");
    let e = import_file(&big).expect_err("over the limit");
    assert!(
        matches!(e, ImportError::Input(InputError::TooLarge { size, limit, grew: false, .. })
            if size == REPORT_LIMIT + 1 && limit == REPORT_LIMIT),
        "{e:?}"
    );
    let msg = e.to_string();
    assert!(
        msg.contains("big.html")
            && msg.contains("67108865 bytes")
            && msg.contains("64.0 MiB limit"),
        "{msg}"
    );

    let start = Instant::now();
    f.set_len(64 << 30).expect("set_len 64 GiB");
    let e = load(&big).expect_err("64 GiB refused");
    assert!(e.to_string().contains("68719476736 bytes"), "{e}");
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
}

/// A file whose metadata says it is small but which yields more (as a file growing while read
/// would) is cut at the limit and refused: /proc/self/maps reports size 0 but has kilobytes.
#[cfg(target_os = "linux")]
#[test]
fn reading_stops_at_the_limit_when_the_size_lies() {
    let maps = Path::new("/proc/self/maps");
    assert_eq!(std::fs::metadata(maps).expect("stat").len(), 0);
    let e = read_bounded_bytes(maps, 100, "a test input").expect_err("over 100 bytes");
    assert!(
        matches!(
            e,
            InputError::TooLarge {
                size: 101,
                limit: 100,
                grew: true,
                ..
            }
        ),
        "{e:?}"
    );
    assert!(e.to_string().contains("at least 101 bytes"), "{e}");
    let e = for_each_line(maps, 100, "a test input", |_, _| Ok::<_, InputError>(()))
        .expect_err("lines over 100 bytes");
    assert!(
        matches!(e, InputError::TooLarge { grew: true, .. }),
        "{e:?}"
    );
    // Within the limit it is read whole.
    assert!(read_bounded(maps, REPORT_LIMIT, "a test input").is_ok());
}

/// Invalid UTF-8 is an error naming the file and the offset, never a panic; a UTF-8 BOM is
/// dropped, so a result.json saved by an editor that adds one still loads.
#[test]
fn invalid_utf8_is_an_error_and_a_bom_is_dropped() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = dir.path().join("bad.txt");
    std::fs::write(&bad, b"Transactional I/O Performance\n\xff\xfe").expect("write");
    let e = import_file(&bad).expect_err("not UTF-8");
    assert!(
        matches!(
            e,
            ImportError::Input(InputError::NotUtf8 { offset: 30, .. })
        ),
        "{e:?}"
    );
    assert!(e.to_string().contains("bad.txt"), "{e}");

    let bom = dir.path().join("result.json");
    let mut bytes = "\u{feff}".as_bytes().to_vec();
    bytes.extend(std::fs::read(fixture("mbxstress-result.json")).expect("fixture"));
    std::fs::write(&bom, bytes).expect("write");
    let r = load(&bom).expect("result.json with a BOM");
    assert_eq!(r.transactional.len(), 2);
}

/// The report's other inputs are bounded too: an over-limit samples.jsonl (sparse), a test.log
/// that is a FIFO, samples.jsonl with invalid UTF-8 on line 2, and a report.html in the way
/// that is a FIFO are each refused, naming the file; none blocks.
#[test]
#[cfg(unix)]
fn report_inputs_are_bounded() {
    let dir = tempfile::tempdir().expect("tempdir");
    let run = dir.path().to_path_buf();
    write_json(&run.join("result.json"), &result_json());

    let samples = run.join("samples.jsonl");
    std::fs::File::create(&samples)
        .and_then(|f| f.set_len(SAMPLES_LIMIT + 1))
        .expect("sparse samples");
    let e = write_report(&run, None).expect_err("samples over the limit");
    assert!(
        matches!(&e, ReportError::Input(InputError::TooLarge { path, .. }) if path == &samples),
        "{e:?}"
    );
    assert!(e.to_string().contains("512.0 MiB limit"), "{e}");

    std::fs::write(&samples, b"{\"instances\": []}\n{\"a\": \"\xff\"}\n").expect("write");
    let e = write_report(&run, None).expect_err("invalid UTF-8");
    assert!(
        matches!(
            &e,
            ReportError::Input(InputError::NotUtf8 { offset: 25, .. })
        ),
        "{e:?}"
    );
    std::fs::remove_file(&samples).expect("rm");

    let log = run.join("test.log");
    mkfifo(&log);
    let r = run.clone();
    let e = within_10s(move || {
        write_report(&r, None)
            .map(|_| ())
            .map_err(|e| e.to_string())
    })
    .expect_err("test.log FIFO refused");
    assert!(e.contains("test.log") && e.contains("FIFO"), "{e}");
    std::fs::remove_file(&log).expect("rm");

    let html = run.join("report.html");
    mkfifo(&html);
    let r = run.clone();
    let e = within_10s(move || {
        write_report(&r, None)
            .map(|_| ())
            .map_err(|e| e.to_string())
    })
    .expect_err("report.html FIFO not overwritten");
    assert!(e.contains("not written by mbxstress"), "{e}");
    std::fs::remove_file(&html).expect("rm");

    // Without samples and log (optional) the report is written.
    write_report(&run, None).expect("report");
}

/// esrp sums an interrupted, 0.001 s result only with warnings: the input, its server row and
/// the aggregate carry the flags; a complete, passing result carries none.
#[test]
fn esrp_flags_an_interrupted_result() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = dir.path().join("interrupted.json");
    write_json(&bad, &interrupted_json());
    let r = load(&bad).expect("load");
    let codes: Vec<_> = r.flags.iter().map(|f| f.code).collect();
    assert_eq!(codes, ["interrupted", "verdict_failed", "too_short"]);

    let good = load(&fixture("mbxstress-result.json")).expect("load");
    assert!(good.flags.is_empty(), "{:?}", good.flags);
    let jetstress = load(&fixture("dell-ps6210e-esrp-performance.txt")).expect("load");
    assert!(jetstress.flags.is_empty(), "{:?}", jetstress.flags);

    let s = summarize(&[good, r, jetstress]);
    assert_eq!(s.servers.len(), 3);
    assert!(s.servers[0].flags.is_empty());
    assert_eq!(
        s.servers[1].flags,
        ["interrupted", "verdict_failed", "too_short"]
    );
    assert!(s.servers[2].flags.is_empty());
    let agg = s.aggregate.as_ref().expect("aggregate");
    assert_eq!(agg.flags, ["interrupted", "verdict_failed", "too_short"]);
    assert_eq!(s.warnings.len(), 3);
    assert!(s
        .warnings
        .iter()
        .all(|w| w.source.ends_with("interrupted.json")));
    assert!(
        s.warnings[2].message.contains("0.001 s"),
        "{}",
        s.warnings[2].message
    );
    let json = serde_json::to_value(&s).expect("json");
    assert_eq!(json["warnings"][0]["code"], "interrupted");
    assert_eq!(json["servers"][1]["flags"][0], "interrupted");
    // The contract's keys are unchanged.
    assert!(json["servers"][1]["db_transfers_per_s"].is_number());
}

/// A stop reason in either shape (`test.stop_reason`, or `stopped.reason`/`message`) is flagged.
#[test]
fn stop_reason_is_flagged() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().join("result.json");
    let mut v = result_json();
    v["test"]["stop_reason"] = "io_error: no space left on device".into();
    write_json(&p, &v);
    let r = load(&p).expect("load");
    assert_eq!(r.flags.len(), 1, "{:?}", r.flags);
    assert_eq!(r.flags[0].code, "stopped");
    assert!(
        r.flags[0].message.contains("no space left"),
        "{:?}",
        r.flags
    );
    let mut v = result_json();
    v["stopped"] = serde_json::json!({ "reason": "completed", "message": "" });
    write_json(&p, &v);
    assert!(load(&p).expect("load").flags.is_empty());
}

/// report.html of an interrupted result opens with a visible banner saying why, before the
/// Test Summary; a complete, passing result has none.
#[test]
fn report_has_a_banner_for_an_interrupted_result() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_json(&dir.path().join("result.json"), &interrupted_json());
    let (files, flags) = write_report_with_flags(dir.path(), None).expect("report");
    assert_eq!(flags.len(), 3);
    let html = std::fs::read_to_string(&files[0]).expect("html");
    let banner = html.find("class=\"banner\"").expect("banner");
    let summary = html.find("Test Summary</h2>").expect("summary");
    assert!(banner < summary);
    for needle in [
        "interrupted before the end",
        "0.001 s",
        "completed_duration_s",
    ] {
        assert!(html[banner..summary].contains(needle), "{needle}");
    }

    let good = tempfile::tempdir().expect("tempdir");
    write_json(&good.path().join("result.json"), &result_json());
    let (files, flags) = write_report_with_flags(good.path(), None).expect("report");
    assert!(flags.is_empty());
    let html = std::fs::read_to_string(&files[0]).expect("html");
    assert!(!html.contains("class=\"banner\""));
}

/// A Jetstress report whose Overall Test Result is Fail is flagged.
#[test]
fn failed_jetstress_report_is_flagged() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().join("failed.txt");
    let text = std::fs::read_to_string(fixture("dell-ps6210e-esrp-performance.txt"))
        .expect("fixture")
        .replacen(
            "Overall Test Result **Pass**",
            "Overall Test Result **Fail**",
            1,
        );
    std::fs::write(&p, text).expect("write");
    let r = import_file(&p).expect("import");
    assert_eq!(r.flags.len(), 1);
    assert_eq!(r.flags[0].code, "verdict_failed");
    let s = summarize(&[r]);
    assert_eq!(s.warnings.len(), 1);
}
