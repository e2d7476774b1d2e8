//! `docs/protocol.md` and the code must name the same methods: a method registered in code
//! but missing from the doc fails this test, and so does a documented method the code does
//! not have.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use serde_json::Value;
use tether::server::config::ServerConfig;

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

// ---------------------------------------------------------------------------------------
// The configuration blocks of README.md ("Configuration reference") and docs/protocol.md
// (`initialize`): each claims to be every field of `initializationOptions` with its default.

fn repo_file(path: &str) -> String {
    let full = format!("{}/../../{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{path} is not readable: {e}"))
}

/// The first ```json block after `heading` (a line of the doc), parsed.
fn json_block_after(doc: &str, heading: &str) -> Value {
    let at = doc
        .lines()
        .position(|line| line == heading)
        .unwrap_or_else(|| panic!("no heading {heading:?}"));
    let rest: Vec<&str> = doc.lines().skip(at).collect();
    let open = rest
        .iter()
        .position(|line| *line == "```json")
        .unwrap_or_else(|| panic!("no ```json block after {heading:?}"));
    let body: Vec<&str> = rest[open + 1..]
        .iter()
        .take_while(|line| **line != "```")
        .copied()
        .collect();
    serde_json::from_str(&body.join("\n"))
        .unwrap_or_else(|e| panic!("the block after {heading:?} is not JSON: {e}"))
}

/// Every key path of a JSON object (`storage.dir`, `agents.claude.command`, …) with its value.
fn leaves(value: &Value, prefix: &str, out: &mut BTreeMap<String, Value>) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (key, child) in map {
                let path = if prefix.is_empty() {
                    key.clone()
                } else {
                    format!("{prefix}.{key}")
                };
                leaves(child, &path, out);
            }
        }
        other => {
            out.insert(prefix.to_owned(), other.clone());
        }
    }
}

fn check_configuration_block(file: &str, heading: &str) {
    let block = json_block_after(&repo_file(file), heading);
    let defaults = ServerConfig::default();
    // 1. The block parses as the configuration type, and what it says are the defaults.
    let parsed = ServerConfig::from_options(Some(block.clone()))
        .unwrap_or_else(|e| panic!("{file}'s configuration block is refused: {e}"));
    assert_eq!(
        parsed, defaults,
        "{file}'s configuration block differs from ServerConfig::default()"
    );
    // 2. Every field is there: each key the defaults serialize to, with that value.
    let (mut in_doc, mut in_code) = (BTreeMap::new(), BTreeMap::new());
    leaves(&block, "", &mut in_doc);
    leaves(&serde_json::to_value(&defaults).unwrap(), "", &mut in_code);
    let missing: Vec<_> = in_code
        .keys()
        .filter(|k| !in_doc.contains_key(*k))
        .collect();
    assert!(
        missing.is_empty(),
        "{file}'s configuration block leaves out {missing:?}"
    );
    for (path, value) in &in_code {
        assert_eq!(&in_doc[path], value, "{file}: `{path}`");
    }
    // 3. A key the defaults do not serialize is an optional field left out when absent
    //    (`agents.NAME.cwd`): shown as null, and a real field (a value for it is read).
    for (path, value) in in_doc.iter().filter(|(k, _)| !in_code.contains_key(*k)) {
        assert_eq!(value, &Value::Null, "{file}: `{path}` is not a default");
        let mut set = block.clone();
        let mut slot = &mut set;
        for key in path.split('.') {
            slot = &mut slot[key];
        }
        *slot = Value::String("/tmp".into());
        let read = ServerConfig::from_options(Some(set))
            .unwrap_or_else(|e| panic!("{file}: `{path}` is not a field: {e}"));
        assert_ne!(read, defaults, "{file}: `{path}` is not read");
    }
}

#[test]
fn the_readme_configuration_block_is_every_field_with_its_default() {
    check_configuration_block("README.md", "## Configuration reference");
}

#[test]
fn the_protocol_doc_configuration_block_is_every_field_with_its_default() {
    check_configuration_block("docs/protocol.md", "### initialize");
}

#[test]
fn every_configuration_field_has_a_row_in_the_protocol_doc_table() {
    let doc = repo_file("docs/protocol.md");
    let block = json_block_after(&doc, "### initialize");
    let mut fields = BTreeMap::new();
    leaves(&block, "", &mut fields);
    let section = &doc[doc.find("### initialize").unwrap()..];
    let section = &section[..section.find("\n## ").unwrap()];
    let rows: Vec<&str> = section
        .lines()
        .filter_map(|l| l.strip_prefix("| `")?.split('`').next())
        .collect();
    for path in fields.keys() {
        let path = path.replacen("agents.claude", "agents.NAME", 1);
        assert!(
            rows.iter()
                .any(|row| path == *row || path.starts_with(&format!("{row}."))),
            "`{path}` has no row in docs/protocol.md's initialize table (rows: {rows:?})"
        );
    }
}

// ---------------------------------------------------------------------------------------
// The errors table of docs/protocol.md against the codes the server can send.

fn documented_error_codes() -> BTreeSet<i64> {
    let doc = repo_file("docs/protocol.md");
    let section = &doc[doc.find("\n## Errors\n").expect("an Errors section")..];
    section
        .lines()
        .filter_map(|l| l.strip_prefix("| `")?.split('`').next()?.parse().ok())
        .collect()
}

#[test]
fn the_errors_table_names_every_code_the_server_sends_and_no_other() {
    let in_code: BTreeSet<i64> = tether::protocol::code::ALL.iter().copied().collect();
    assert_eq!(
        in_code.len(),
        tether::protocol::code::ALL.len(),
        "code::ALL lists a code twice"
    );
    assert_eq!(documented_error_codes(), in_code);
    // -32002 has two meanings, and the table gives both.
    let doc = repo_file("docs/protocol.md");
    let rows = doc.lines().filter(|l| l.starts_with("| `-32002` |"));
    let meanings: Vec<&str> = rows.collect();
    assert!(
        meanings.iter().any(|r| r.contains("not initialized"))
            && meanings.iter().any(|r| r.contains("unknown session")),
        "-32002 must be documented as both \"server not initialized\" and \"unknown session\": {meanings:?}"
    );
}

/// Every JSON-RPC error the crate's source can produce, as a literal code or through
/// tower-lsp-server's constructors, is one of `code::ALL`: a new code cannot be sent
/// without being added there, and so to the table.
#[test]
fn every_error_code_in_the_source_is_in_code_all() {
    let constructors = [
        ("Error::parse_error()", -32700),
        ("Error::invalid_request()", -32600),
        ("Error::method_not_found()", -32601),
        ("Error::invalid_params(", -32602),
        ("Error::internal_error()", -32603),
        ("Error::request_cancelled()", -32800),
        ("ErrorCode::ServerNotInitialized", -32002),
        ("ErrorCode::RequestCancelled", -32800),
        ("ErrorCode::ContentModified", -32801),
    ];
    let all: BTreeSet<i64> = tether::protocol::code::ALL.iter().copied().collect();
    let mut found: BTreeMap<i64, String> = BTreeMap::new();
    let root = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/src"));
    let mut stack = vec![root];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            for (n, line) in text.lines().enumerate() {
                let code_part = line.split("//").next().unwrap_or_default();
                let at = format!("{}:{}", path.display(), n + 1);
                for (needle, code) in constructors {
                    if code_part.contains(needle) {
                        found.entry(code).or_insert_with(|| at.clone());
                    }
                }
                // Literal codes in the JSON-RPC reserved and LSP ranges: -32768..=-32000.
                let bytes = code_part.as_bytes();
                for (i, _) in code_part.match_indices("-32") {
                    let digits: String = code_part[i + 1..]
                        .chars()
                        .take_while(char::is_ascii_digit)
                        .collect();
                    let before_ok = i == 0 || !bytes[i - 1].is_ascii_alphanumeric();
                    if digits.len() == 5 && before_ok {
                        let code: i64 = -digits.parse::<i64>().unwrap();
                        if (-32768..=-32000).contains(&code) {
                            found.entry(code).or_insert_with(|| at.clone());
                        }
                    }
                }
            }
        }
    }
    let unlisted: Vec<_> = found.iter().filter(|(c, _)| !all.contains(c)).collect();
    assert!(
        unlisted.is_empty(),
        "error codes in the source that protocol::code::ALL (and docs/protocol.md, \"Errors\") do not list: {unlisted:?}"
    );
}
