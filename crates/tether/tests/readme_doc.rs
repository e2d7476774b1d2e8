//! README.md's per-editor feature table ("Editor set-up") against the shims' source: a claim
//! that VS Code or Visual Studio does something must be backed by its code naming the
//! protocol method or recovery action, and a "no" by its code not naming it. A shim that
//! gains or loses a feature fails this test until the table says so.
//!
//! Cell grammar (columns "VS Code" and "Visual Studio"): `yes…` = every token of the row's
//! first cell appears in the shim's source; `no…` = none does; otherwise the backticked
//! tokens of the cell = exactly the row's tokens that appear. A token is a backticked name in
//! the first cell (`session/list`, `retry`; one ending in `:` is a prefix, `handoff:`), found
//! in the source as a string literal (`"…"`, `'…'` or `` `…` ``) outside comments.

use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// The code lines (comment lines left out) of every source file under `dir` with one of
/// `exts`.
fn source_lines(dir: &Path, exts: &[&str]) -> Vec<String> {
    let mut lines = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| exts.contains(&e))
            {
                let text = std::fs::read_to_string(&path).unwrap();
                lines.extend(
                    text.lines()
                        .filter(|l| {
                            let t = l.trim_start();
                            !(t.starts_with("//") || t.starts_with('*') || t.starts_with("/*"))
                        })
                        .map(str::to_owned),
                );
            }
        }
    }
    assert!(!lines.is_empty(), "no source under {}", dir.display());
    lines
}

/// Whether `token` is a string literal in `lines` (a prefix when it ends in `:`).
fn names(lines: &[String], token: &str) -> bool {
    let prefix = token.ends_with(':');
    lines.iter().any(|line| {
        ['"', '\'', '`'].iter().any(|q| {
            let open = format!("{q}{token}");
            if prefix {
                line.contains(&open)
            } else {
                line.contains(&format!("{open}{q}"))
            }
        })
    })
}

fn backticked(cell: &str) -> Vec<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

struct Row {
    feature: String,
    cells: Vec<String>,
}

fn feature_table() -> (Vec<String>, Vec<Row>) {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let section = &readme[readme
        .find("\n## Editor set-up\n")
        .expect("## Editor set-up")..];
    let mut lines = section
        .lines()
        .skip_while(|l| !l.starts_with("| feature |"));
    let split = |l: &str| -> Vec<String> {
        l.trim()
            .trim_matches('|')
            .split(" | ")
            .map(|c| c.trim().to_owned())
            .collect()
    };
    let header = split(lines.next().expect("the feature table"));
    let rows = lines
        .skip(1)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let cells = split(l);
            Row {
                feature: cells[0].clone(),
                cells,
            }
        })
        .collect();
    (header, rows)
}

#[test]
fn the_feature_table_matches_what_each_shim_implements() {
    let (header, rows) = feature_table();
    assert!(
        rows.len() >= 10,
        "the feature table has {} rows",
        rows.len()
    );
    let shims = [
        ("VS Code", repo().join("editors/vscode/src"), &["ts"][..]),
        (
            "Visual Studio",
            repo().join("editors/visualstudio/src"),
            &["cs", "vsct"][..],
        ),
    ];
    let mut wrong = Vec::new();
    for (name, dir, exts) in shims {
        let column = header
            .iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("no column {name:?} in {header:?}"));
        let source = source_lines(&dir, exts);
        for row in &rows {
            let tokens = backticked(&row.feature);
            assert!(!tokens.is_empty(), "row {:?} names no method", row.feature);
            let cell = &row.cells[column];
            let present: Vec<&String> = tokens.iter().filter(|t| names(&source, t)).collect();
            let claimed: Vec<String> = if cell.starts_with("yes") {
                tokens.clone()
            } else if cell.starts_with("no") {
                Vec::new()
            } else {
                backticked(cell)
            };
            let present: Vec<String> = present.into_iter().cloned().collect();
            if present != claimed {
                wrong.push(format!(
                    "{name}, {:?}: the table says {cell:?} ({claimed:?}); the source names {present:?}",
                    row.feature
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "README.md's feature table is out of step:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_token_search_sees_literals_and_not_comments() {
    let lines: Vec<String> = [
        "const a = 'session/list';",
        "public const string Retry = \"retry\";",
        "if (id.startsWith('handoff:')) {}",
    ]
    .map(str::to_owned)
    .to_vec();
    assert!(names(&lines, "session/list"));
    assert!(names(&lines, "retry"));
    assert!(names(&lines, "handoff:"));
    assert!(!names(&lines, "session/lis"));
    assert!(!names(&lines, "new"));
}
