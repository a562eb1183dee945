//! Input files are read bounded and only if regular (issue 8, item 7).
//!
//! `fixtures/mbxstress-result.json` is a real result: a copy of
//! bench/fidelity/2026-11-22T013237Z/copies2/result.json (complete, passing, 300 s measured).

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use mbx_report::esrp::load;
use mbx_report::import::{import_file, ImportError};
use mbx_report::input::{
    for_each_line, read_bounded, read_bounded_bytes, InputError, REPORT_LIMIT, SAMPLES_LIMIT,
};
use mbx_report::report::{write_report, ReportError};

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
