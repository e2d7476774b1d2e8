//! `docs/protocol.md` and the code must name the same methods: a method registered in code
//! but missing from the doc fails this test, and so does a documented method the code does
//! not have.

use std::collections::BTreeSet;

use tether::protocol::{STANDARD_METHODS_DOCUMENTED, notify};
use tether::server::REGISTERED_METHODS;

fn documented_methods() -> BTreeSet<String> {
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/protocol.md"
    ))
    .expect("docs/protocol.md is readable");
    doc.lines()
        .filter_map(|line| line.strip_prefix("### "))
        .map(|heading| heading.trim().to_owned())
        .collect()
}

#[test]
fn every_registered_method_is_documented_and_every_documented_method_exists() {
    let in_code: BTreeSet<String> = REGISTERED_METHODS
        .iter()
        .chain(notify::SERVER_TO_CLIENT)
        .chain(STANDARD_METHODS_DOCUMENTED)
        .map(|m| (*m).to_owned())
        .collect();
    let in_doc = documented_methods();
    let undocumented: Vec<_> = in_code.difference(&in_doc).collect();
    let unimplemented: Vec<_> = in_doc.difference(&in_code).collect();
    assert!(
        undocumented.is_empty(),
        "methods in code without a `### <method>` section in docs/protocol.md: {undocumented:?}"
    );
    assert!(
        unimplemented.is_empty(),
        "methods documented in docs/protocol.md that the code does not have: {unimplemented:?}"
    );
}

#[test]
fn every_method_section_has_an_example_exchange() {
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/protocol.md"
    ))
    .unwrap();
    let mut sections = doc.split("\n### ").skip(1);
    let missing: Vec<String> = sections
        .by_ref()
        .filter(|section| {
            let name = section.lines().next().unwrap_or_default();
            // $/progress and window/logMessage are standard LSP with no Tether-specific body.
            !STANDARD_METHODS_DOCUMENTED[1..].contains(&name) && !section.contains("```json")
        })
        .map(|s| s.lines().next().unwrap_or_default().to_owned())
        .collect();
    assert!(
        missing.is_empty(),
        "sections without an example exchange: {missing:?}"
    );
}
