//! mbx-io is the bottom of the workspace above the leaf: it depends on no other mbxstress crate
//! but mbx-core (issue 26; issue 37 for the leaf), so the configuration and result models can
//! change without rebuilding or touching the I/O layer.

#[test]
fn mbx_io_depends_on_no_other_workspace_crate_but_the_leaf() {
    let manifest = include_str!("../Cargo.toml");
    let named: Vec<&str> = manifest
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with('#') && l.starts_with("mbx-"))
        .filter(|l| !l.starts_with("mbx-core."))
        .collect();
    assert!(
        named.is_empty(),
        "mbx-io's Cargo.toml names workspace crates: {named:?}"
    );
}
