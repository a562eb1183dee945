//! find-max's files go through the exporters, as report.html does: find-max.json (the answer as
//! written, read back the same) and find-max.html (maud, with the generator tag), written
//! atomically, and a find-max.html mbxstress did not write is not replaced.

use mbx_report::export::{export, Exporter, FindMaxHtmlExporter, FindMaxJsonExporter};
use mbx_result::FindMax;

fn found() -> FindMax {
    FindMax {
        schema: mbx_result::FIND_MAX_SCHEMA.into(),
        machine: "host<1>".into(),
        tool_version: "test".into(),
        start: "2026-11-27T08:00:00Z".into(),
        mailboxes: Some(1200),
        iops: Some(72.0),
        iops_per_mailbox: 0.06,
        steps: Vec::new(),
        end: "converged".into(),
        elapsed_s: 42.0,
        lower_bound: false,
        confirmation: None,
        stop_message: None,
        config: Default::default(),
    }
}

#[test]
fn find_max_files_go_through_the_exporters() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = found();
    let exporters: Vec<Box<dyn Exporter<FindMax>>> =
        vec![Box::new(FindMaxJsonExporter), Box::new(FindMaxHtmlExporter)];
    let written = export(&f, dir.path(), &exporters).expect("export");
    assert_eq!(
        written,
        vec![
            dir.path().join("find-max.json"),
            dir.path().join("find-max.html")
        ]
    );
    let json = std::fs::read_to_string(&written[0]).expect("json");
    assert!(json.ends_with("}\n"), "{json}");
    assert_eq!(
        serde_json::from_str::<FindMax>(&json).expect("read back"),
        f
    );
    let html = std::fs::read_to_string(&written[1]).expect("html");
    assert!(html.contains("<meta name=\"generator\" content=\"mbxstress\">"));
    assert!(html.contains("host&lt;1&gt;"), "escaped by maud");
    assert!(html.contains("1200 mailboxes"), "{html}");
    // Written again over its own files; nothing else is left in the folder.
    export(&f, dir.path(), &exporters).expect("again");
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .expect("dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["find-max.html", "find-max.json"]);
    // A find-max.html that is not ours stays.
    std::fs::write(&written[1], "someone else's page").expect("foreign");
    let e = export(&f, dir.path(), &exporters[1..]).expect_err("refused");
    assert!(e.to_string().contains("not written by mbxstress"), "{e}");
    assert_eq!(
        std::fs::read_to_string(&written[1]).expect("html"),
        "someone else's page"
    );
}
