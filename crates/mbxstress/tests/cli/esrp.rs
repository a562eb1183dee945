//! `esrp` accounts for every input (issue 25, case 13): a Stress result has its own section, a
//! duplicate is counted once and named, a result without instances is named as excluded, and
//! nothing summarized is exit 2.

use std::path::{Path, PathBuf};

use crate::common::mbx;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../mbx-report/tests/fixtures")
        .join(name)
}

fn s(p: &Path) -> &str {
    p.to_str().expect("UTF-8 path")
}

/// The fixture result (a complete Performance result of machine `vm`, two instances), changed
/// by `edit`, written as `dir/name`.
fn result(dir: &Path, name: &str, edit: impl FnOnce(&mut serde_json::Value)) -> PathBuf {
    let text = std::fs::read_to_string(fixture("mbxstress-result.json")).expect("fixture");
    let mut v: serde_json::Value = serde_json::from_str(&text).expect("fixture JSON");
    edit(&mut v);
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_string_pretty(&v).expect("json")).expect("write");
    path
}

fn stress(v: &mut serde_json::Value) {
    v["test"]["type"] = "stress".into();
    v["test"]["machine"] = "stressbox".into();
}

/// A run refused before measuring: no instances.
fn refused(v: &mut serde_json::Value) {
    v["instances"] = serde_json::json!([]);
    v["test"]["machine"] = "refused".into();
}

fn sources(v: &serde_json::Value, key: &str) -> Vec<String> {
    v[key]
        .as_array()
        .unwrap_or_else(|| panic!("{key}: {v}"))
        .iter()
        .map(|x| x["source"].as_str().expect("source").to_string())
        .collect()
}

#[test]
fn a_stress_result_alone_is_summarized_in_its_own_section() {
    let dir = tempfile::tempdir().expect("tempdir");
    let st = result(dir.path(), "stress.json", stress);
    let run = mbx(&["esrp", s(&st)]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout
            .contains("stress (per server; ESRP reports the Stress test apart"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("\nstressbox   "), "{}", run.stdout);
    let v = mbx(&["esrp", s(&st), "--json"]).json();
    assert_eq!(sources(&v, "stress"), [s(&st)]);
    assert!(sources(&v, "servers").is_empty());
    assert!(v["aggregate"].is_null());
}

#[test]
fn a_stress_result_beside_a_performance_result_is_not_in_the_aggregate() {
    let dir = tempfile::tempdir().expect("tempdir");
    let perf = fixture("mbxstress-result.json");
    let st = result(dir.path(), "stress.json", stress);
    let one = mbx(&["esrp", s(&perf), "--json"]).json();
    let run = mbx(&["esrp", s(&perf), s(&st), "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v = run.json();
    assert_eq!(sources(&v, "servers"), [s(&perf)]);
    assert_eq!(sources(&v, "stress"), [s(&st)]);
    assert_eq!(v["aggregate"], one["aggregate"]);
}

#[test]
fn the_same_result_twice_is_counted_once_and_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    let perf = fixture("mbxstress-result.json");
    let copy = dir.path().join("copy.json");
    std::fs::copy(&perf, &copy).expect("copy");
    let one = mbx(&["esrp", s(&perf), "--json"]).json();
    let run = mbx(&["esrp", s(&perf), s(&perf), s(&copy), "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v = run.json();
    assert_eq!(sources(&v, "servers"), [s(&perf)]);
    assert_eq!(v["aggregate"], one["aggregate"]);
    assert_eq!(v["aggregate"]["source"], "1 servers");
    assert_eq!(sources(&v, "excluded"), [s(&perf), s(&copy)]);
    assert_eq!(v["excluded"][0]["code"], "duplicate");
    assert_eq!(v["excluded"][1]["code"], "duplicate");
    let msg = v["excluded"][1]["message"].as_str().expect("message");
    assert!(
        msg.contains(&format!("the same measurement as {}", s(&perf))),
        "{msg}"
    );

    let run = mbx(&["esrp", s(&perf), s(&perf)]);
    let line = format!(
        "excluded: {} (vm): {} was given more than once: counted once",
        s(&perf),
        s(&perf)
    );
    assert!(run.stdout.contains(&line), "{}", run.stdout);
}

#[test]
fn a_result_without_instances_is_named_as_excluded() {
    let dir = tempfile::tempdir().expect("tempdir");
    let perf = fixture("mbxstress-result.json");
    let none = result(dir.path(), "refused.json", refused);
    let run = mbx(&["esrp", s(&perf), s(&none)]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains(&format!(
            "excluded: {} (refused): no instance's transactional I/O was measured",
            s(&none)
        )),
        "{}",
        run.stdout
    );
    let v = mbx(&["esrp", s(&perf), s(&none), "--json"]).json();
    assert_eq!(sources(&v, "servers"), [s(&perf)]);
    assert_eq!(sources(&v, "excluded"), [s(&none)]);
    assert_eq!(v["excluded"][0]["code"], "no_instances");
    assert_eq!(v["excluded"][0]["machine"], "refused");
}

#[test]
fn nothing_to_summarize_is_exit_2() {
    let dir = tempfile::tempdir().expect("tempdir");
    let none = result(dir.path(), "refused.json", refused);
    let run = mbx(&["esrp", s(&none)]);
    assert_eq!(run.code, 2, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("excluded: "), "{}", run.stdout);
    assert!(
        run.stderr
            .contains("error: nothing to summarize: none of the 1 inputs"),
        "{}",
        run.stderr
    );
    let run = mbx(&["esrp", s(&none), "--json"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_eq!(run.json()["excluded"][0]["code"], "no_instances");
}

/// Issue 35, item 6: a real report whose unneeded section's title is cut short (as the text of
/// the Dell ESRP paper's PDF had it) is read by `import` and `esrp` with exit 0 and a warning
/// naming the section; a needed section lost is exit 2 naming it.
#[test]
fn damage_in_an_unneeded_section_is_a_warning_and_in_a_needed_one_an_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text =
        std::fs::read_to_string(fixture("dell-ps6210e-esrp-performance.txt")).expect("fixture");
    let title = "\nBackground Database Maintenance I/O Performance\n";
    assert!(text.contains(title));
    let cut = dir.path().join("cut.txt");
    std::fs::write(
        &cut,
        text.replacen(title, "\nBackground Database Maintenance I/O P\t\n", 1),
    )
    .expect("write");
    let run = mbx(&["import", s(&cut)]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains("6 transactional I/O rows")
            && run
                .stdout
                .contains("damaged input: line 102: section title")
            && run
                .stdout
                .contains("read as \"Background Database Maintenance I/O Performance\""),
        "{}",
        run.stdout
    );
    let run = mbx(&["esrp", s(&cut), "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v = run.json();
    crate::common::close(&v["servers"][0]["db_transfers_per_s"], 1056.711, 0.001);
    assert_eq!(v["warnings"][0]["code"], "damaged_input");
    // Cut beyond reading: skipped, named, the summary unchanged.
    std::fs::write(&cut, text.replacen(title, "\nBackgro\n", 1)).expect("write");
    let run = mbx(&["esrp", s(&cut)]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("1056.71"), "{}", run.stdout);
    assert!(
        run.stdout.contains("no readable section title") && run.stdout.contains("\"Backgro\""),
        "{}",
        run.stdout
    );
    // The needed section's title lost: exit 2 naming the section.
    let lost = dir.path().join("lost.txt");
    std::fs::write(
        &lost,
        text.replacen("\nTransactional I/O Performance\n", "\nTransac\n", 1),
    )
    .expect("write");
    for cmd in ["import", "esrp"] {
        let run = mbx(&[cmd, s(&lost)]);
        assert_eq!(run.code, 2, "{cmd}: {}\n{}", run.stdout, run.stderr);
        assert!(
            run.stderr
                .contains("table \"Transactional I/O Performance\"")
                && run.stderr.contains("not found in this Performance report"),
            "{cmd}: {}",
            run.stderr
        );
    }
}
