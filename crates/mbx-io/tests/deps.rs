//! mbx-io is the bottom of the workspace: it depends on no other mbxstress crate (issue 26), so
//! the configuration and result models can change without rebuilding or touching the I/O layer.

#[test]
fn mbx_io_depends_on_no_other_workspace_crate() {
    let manifest = include_str!("../Cargo.toml");
    let named: Vec<&str> = manifest
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with('#') && l.starts_with("mbx-"))
        .collect();
    assert!(
        named.is_empty(),
        "mbx-io's Cargo.toml names workspace crates: {named:?}"
    );
}
