//! `docs/requirements.md` is the one place requirements live, and the repository stands
//! alone: no source or doc file may point at requirement material kept outside it, every
//! requirement id cited anywhere (`R-<AREA>-<n>`, or a range `R-<AREA>-<n>..<m>`) must be
//! defined in `docs/requirements.md`, and each id is defined there exactly once.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Folder names never walked: build output, dependencies, VCS data, generated files.
const SKIP_DIRS: &[&str] = &[
    "target",
    "node_modules",
    ".git",
    "dist",
    "test-artifacts",
    "__pycache__",
    ".pytest_cache",
];

/// Paths (relative to the repository root, `/`-separated) never walked: fuzz inputs are
/// arbitrary bytes, and the others are ignored build or test output (`editors/vscode/out`
/// is the TypeScript compiler's, left by any earlier build of the extension).
const SKIP_PATHS: &[&str] = &[
    "fuzz/corpus",
    "tests/artifacts",
    "editors/visualstudio/build",
    "editors/vscode/out",
];

/// Extensions of the source, doc, config and data files that are checked.
const EXTENSIONS: &[&str] = &[
    "rs",
    "ts",
    "js",
    "mjs",
    "md",
    "sh",
    "lua",
    "py",
    "cs",
    "csproj",
    "toml",
    "json",
    "jsonl",
    "yml",
    "yaml",
    "ini",
    "txt",
    "vsct",
    "vsixmanifest",
];

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn relative(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .to_string_lossy()
        .replace('\\', "/")
}

/// Every checked file under the repository root, with its path relative to the root.
fn files() -> Vec<(String, String)> {
    let root = repo_root();
    let mut out = Vec::new();
    let mut stack = vec![root.clone()];
    while let Some(dir) = stack.pop() {
        let entries = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
        for entry in entries {
            let entry = entry.expect("a directory entry");
            let path = entry.path();
            let rel = relative(&root, &path);
            let name = entry.file_name().to_string_lossy().into_owned();
            let kind = entry.file_type().expect("a file type");
            if kind.is_dir() {
                if !SKIP_DIRS.contains(&name.as_str()) && !SKIP_PATHS.contains(&rel.as_str()) {
                    stack.push(path);
                }
            } else if kind.is_file() {
                let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
                if EXTENSIONS.contains(&ext) {
                    // Non-UTF-8 files hold no comments worth checking.
                    if let Ok(text) = std::fs::read_to_string(&path) {
                        out.push((rel, text));
                    }
                }
            }
        }
    }
    out.sort();
    assert!(
        out.iter().any(|(p, _)| p == "docs/requirements.md"),
        "docs/requirements.md not found under {}",
        root.display()
    );
    out
}

/// Lowercase markers of requirement material kept outside the repository. Built from parts
/// so that this file does not contain them itself.
fn outside_markers() -> Vec<String> {
    let seed = "seed";
    let field = "field";
    vec![
        format!("{seed} 0"),
        format!("{seed}s 0"),
        format!("{seed}-00"),
        format!("{field}-notes"),
        format!("{field} notes"),
        format!("shared/{seed}s"),
    ]
}

#[test]
fn no_file_cites_requirement_sources_outside_the_repository() {
    let markers = outside_markers();
    let mut hits = Vec::new();
    for (path, text) in files() {
        for (n, line) in text.lines().enumerate() {
            let lower = line.to_lowercase();
            if let Some(m) = markers.iter().find(|m| lower.contains(m.as_str())) {
                hits.push(format!("{path}:{}: `{m}` in: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(
        hits.is_empty(),
        "cite requirements by their id in docs/requirements.md (R-<AREA>-<n>), and facts by a \
         public or in-repository source, not by material outside the repository:\n{}",
        hits.join("\n")
    );
}

/// Every `R-<AREA>-<n>` in `text` (not preceded by a letter, digit, `-` or `_`), with the
/// end of a range `R-<AREA>-<n>..<m>` as a second id.
fn cited_ids(text: &str) -> Vec<String> {
    let b = text.as_bytes();
    let mut ids = Vec::new();
    let mut i = 0;
    while i + 2 < b.len() {
        let starts = b[i] == b'R'
            && b[i + 1] == b'-'
            && (i == 0
                || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'-' || b[i - 1] == b'_'));
        if !starts {
            i += 1;
            continue;
        }
        let area_start = i + 2;
        let mut j = area_start;
        while j < b.len() && b[j].is_ascii_uppercase() {
            j += 1;
        }
        if j == area_start || j >= b.len() || b[j] != b'-' {
            i += 1;
            continue;
        }
        let num_start = j + 1;
        let mut k = num_start;
        while k < b.len() && b[k].is_ascii_digit() {
            k += 1;
        }
        // Digits followed by a letter or `_` (`R-X-3b`) make some other token, not an id.
        let clean_end = k == b.len() || !(b[k].is_ascii_alphanumeric() || b[k] == b'_');
        if k == num_start || !clean_end {
            i += 1;
            continue;
        }
        let area = &text[area_start..j];
        ids.push(format!("R-{area}-{}", &text[num_start..k]));
        if text[k..].starts_with("..") {
            let end_start = k + 2;
            let mut e = end_start;
            while e < b.len() && b[e].is_ascii_digit() {
                e += 1;
            }
            if e > end_start {
                ids.push(format!("R-{area}-{}", &text[end_start..e]));
            }
        }
        i = k;
    }
    ids
}

/// The ids `docs/requirements.md` defines: list entries that start with `- **R-…**`, with
/// the number of times each is defined.
fn defined_ids(doc: &str) -> BTreeMap<String, usize> {
    let mut ids = BTreeMap::new();
    for line in doc.lines() {
        if let Some(rest) = line.trim_start().strip_prefix("- **")
            && let Some((id, _)) = rest.split_once("**")
            && cited_ids(id).first().map(String::as_str) == Some(id)
        {
            *ids.entry(id.to_owned()).or_insert(0) += 1;
        }
    }
    ids
}

fn requirements_doc() -> String {
    std::fs::read_to_string(repo_root().join("docs/requirements.md"))
        .expect("docs/requirements.md is readable")
}

#[test]
fn requirement_ids_are_defined_once() {
    let defined = defined_ids(&requirements_doc());
    assert!(
        defined.len() >= 10,
        "docs/requirements.md defines too few ids ({}); entries look like `- **R-<AREA>-<n>** — …`",
        defined.len()
    );
    let twice: Vec<_> = defined.iter().filter(|(_, n)| **n > 1).collect();
    assert!(
        twice.is_empty(),
        "ids defined more than once in docs/requirements.md: {twice:?}"
    );
}

#[test]
fn every_cited_requirement_id_exists() {
    let defined = defined_ids(&requirements_doc());
    let mut missing: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (path, text) in files() {
        for (n, line) in text.lines().enumerate() {
            for id in cited_ids(line) {
                if !defined.contains_key(&id) {
                    missing
                        .entry(id)
                        .or_default()
                        .insert(format!("{path}:{}", n + 1));
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "requirement ids cited but not defined in docs/requirements.md: {missing:#?}"
    );
}

#[test]
fn the_id_scanner_finds_ids_and_ranges_only() {
    assert_eq!(
        cited_ids("(R-RESUME-3), R-ONESHOT-1..6; HDR-X-1, R-x-1, R-A-1b, XR-A-2"),
        ["R-RESUME-3", "R-ONESHOT-1", "R-ONESHOT-6"]
    );
}

/// Whether `line` cites a tracker number (the word issue, or issues, then a number, with or
/// without `#`), which no reader of the repository can look up. Public issues are cited as
/// `owner/repo#N` instead.
fn cites_an_issue_number(line: &str) -> bool {
    let lower = line.to_lowercase();
    let word = "issue";
    lower.match_indices(word).any(|(at, _)| {
        let before = lower[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '-' || c == '_') {
            return false;
        }
        let rest = lower[at + word.len()..]
            .strip_prefix('s')
            .unwrap_or(&lower[at + word.len()..]);
        let rest = rest.strip_prefix(' ').unwrap_or("");
        let rest = rest.strip_prefix('#').unwrap_or(rest);
        rest.starts_with(|c: char| c.is_ascii_digit())
    })
}

#[test]
fn no_file_cites_an_issue_number() {
    let hits: Vec<String> = files()
        .into_iter()
        .flat_map(|(path, text)| {
            text.lines()
                .enumerate()
                .filter(|(_, line)| cites_an_issue_number(line))
                .map(|(n, line)| format!("{path}:{}: {}", n + 1, line.trim()))
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(
        hits.is_empty(),
        "cite a requirement id (docs/requirements.md) or a docs section, not an issue number:\n{}",
        hits.join("\n")
    );
}

#[test]
fn the_issue_number_scanner_finds_tracker_numbers_only() {
    let n = 13;
    assert!(cites_an_issue_number(&format!("bounded (issue {n}).")));
    assert!(cites_an_issue_number(&format!("Issues {n} and 14")));
    assert!(cites_an_issue_number(&format!("see issue #{n}")));
    assert!(!cites_an_issue_number(&format!(
        "anthropics/claude-code#{n}"
    )));
    assert!(!cites_an_issue_number("an issue with the cache"));
    assert!(!cites_an_issue_number(&format!("reissue {n} tokens")));
}

#[test]
fn the_area_index_lists_every_area() {
    let doc = requirements_doc();
    let index = doc
        .lines()
        .skip_while(|l| !l.starts_with("Areas:"))
        .take_while(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    let areas: Vec<&str> = doc
        .lines()
        .filter(|l| l.starts_with("## "))
        .filter_map(|l| l.rsplit_once("(R-")?.1.strip_suffix(')'))
        .collect();
    assert!(areas.len() >= 10, "areas found: {areas:?}");
    let missing: Vec<_> = areas
        .iter()
        .filter(|a| !index.contains(&format!("[{a}](#")))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/requirements.md's area index leaves out {missing:?}"
    );
}

/// A citation of an ARCHITECTURE.md section (the file name, then a comma or an opening
/// parenthesis, then the section's name in double quotes) names a heading that exists; the
/// heading may go on after the name cited (Hostile input, of Hostile input (fuzzing)).
#[test]
fn cited_architecture_sections_exist() {
    let root = repo_root();
    let arch = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let headings: Vec<&str> = arch
        .lines()
        .filter_map(|l| l.strip_prefix("## ").or_else(|| l.strip_prefix("### ")))
        .collect();
    let mut wrong = Vec::new();
    for (path, text) in files() {
        for (n, line) in text.lines().enumerate() {
            for (at, _) in line.match_indices("ARCHITECTURE.md") {
                let rest = line[at + "ARCHITECTURE.md".len()..].trim_start_matches('`');
                let Some(quoted) = rest
                    .strip_prefix(", \"")
                    .or_else(|| rest.strip_prefix(" (\""))
                else {
                    continue;
                };
                let Some(name) = quoted.split('"').next().filter(|q| quoted.len() > q.len()) else {
                    continue;
                };
                if !headings.iter().any(|h| h.starts_with(name)) {
                    wrong.push(format!("{path}:{}: {name:?}", n + 1));
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "ARCHITECTURE.md has no such heading:\n{}",
        wrong.join("\n")
    );
}
