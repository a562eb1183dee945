//! mbx-core is the leaf of the workspace: it depends on no mbxstress crate, so every crate may
//! use it without a circle.

#[test]
fn mbx_core_depends_on_no_workspace_crate() {
    let manifest = include_str!("../Cargo.toml");
    let named: Vec<&str> = manifest
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with('#') && l.starts_with("mbx-"))
        .collect();
    assert!(
        named.is_empty(),
        "mbx-core's Cargo.toml names workspace crates: {named:?}"
    );
}
