//! `tether classify --corpus FILE` as a user runs it: the built binary on a small corpus file,
//! its printed numbers checked one by one, and its refusal of unreadable lines.

use std::process::Command;

fn tether() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tether"))
}

/// Five cases: two rate limits (one misclassified on purpose: a bare 429 expected as a quota),
/// an authentication failure, a server error with two acceptable kinds, a session not found.
const CORPUS: &str = r#"{"id":"rl","input":{"source":"http","status":429,"headers":{"retry-after":"7"}},"expect":"rateLimited"}
{"id":"auth","input":{"source":"acp","method":"session/prompt","error":{"code":-32603,"message":"Internal error: Failed to authenticate. API Error: 401 {\"type\":\"error\",\"error\":{\"type\":\"authentication_error\",\"message\":\"invalid x-api-key\"}}"}},"expect":["authentication"]}

{"id":"5xx","input":{"source":"http","status":503,"body":"upstream connect error"},"expect":["network","serverError"]}
{"id":"quota-as-429","input":{"source":"http","status":429},"expect":"quotaExceeded"}
{"id":"gone","input":{"source":"acp","method":"session/load","error":{"code":-32002,"message":"Resource not found"}},"expect":"sessionExpired"}
"#;

fn corpus_file(text: &str) -> tempfile::NamedTempFile {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    std::io::Write::write_all(&mut f, text.as_bytes()).unwrap();
    f
}

/// The row of the per-kind table for `kind`, split on whitespace.
fn row<'a>(stdout: &'a str, kind: &str) -> Vec<&'a str> {
    stdout
        .lines()
        .find(|l| l.split_whitespace().next() == Some(kind) && l.contains('%'))
        .unwrap_or_else(|| panic!("no table row for {kind} in:\n{stdout}"))
        .split_whitespace()
        .collect()
}

#[test]
fn corpus_prints_precision_recall_and_the_confusion_matrix() {
    let file = corpus_file(CORPUS);
    let out = tether()
        .args(["classify", "--corpus"])
        .arg(file.path())
        .args(["--now", "2026-11-22T00:00:00Z"])
        .output()
        .expect("run tether");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(
        stdout.contains("5 cases, 4 classified as expected (80.0%)"),
        "{stdout}"
    );
    // kind, expected, classified, correct, precision, recall.
    assert_eq!(
        row(&stdout, "rateLimited"),
        ["rateLimited", "1", "2", "1", "50.0%", "100.0%"]
    );
    assert_eq!(
        row(&stdout, "quotaExceeded"),
        ["quotaExceeded", "1", "0", "0", "-", "0.0%"]
    );
    assert_eq!(
        row(&stdout, "authentication"),
        ["authentication", "1", "1", "1", "100.0%", "100.0%"]
    );
    assert_eq!(
        row(&stdout, "serverError"),
        ["serverError", "1", "1", "1", "100.0%", "100.0%"]
    );
    assert_eq!(
        row(&stdout, "sessionExpired"),
        ["sessionExpired", "1", "1", "1", "100.0%", "100.0%"]
    );
    // The matrix: header of classified kinds, then the quotaExceeded row holds its one case
    // under rateLimited.
    let matrix: Vec<&str> = stdout
        .lines()
        .skip_while(|l| !l.starts_with("confusion matrix"))
        .collect();
    let header: Vec<&str> = matrix[1].split_whitespace().collect();
    assert_eq!(
        header,
        [
            "expected",
            "\\",
            "got",
            "sessionExpired",
            "serverError",
            "rateLimited",
            "quotaExceeded",
            "authentication"
        ],
        "{stdout}"
    );
    let quota_row: Vec<&str> = matrix
        .iter()
        .find(|l| l.starts_with("quotaExceeded"))
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(quota_row, ["quotaExceeded", "0", "0", "1", "0", "0"]);
    assert!(
        stdout.contains("line 5 (quota-as-429): expected quotaExceeded, got rateLimited"),
        "blank lines count: {stdout}"
    );
}

#[test]
fn corpus_refuses_unreadable_input_naming_the_line() {
    let bad = format!(
        "{}\n{{\"input\":{{\"source\":\"http\",\"status\":429}},\"expect\":\"ratelimited\"}}\n",
        CORPUS.lines().next().unwrap()
    );
    let file = corpus_file(&bad);
    let out = tether()
        .args(["classify", "--corpus"])
        .arg(file.path())
        .output()
        .expect("run tether");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("{}:2: ", file.path().display())),
        "{stderr}"
    );
    assert!(stderr.contains("unknown kind \"ratelimited\""), "{stderr}");
    assert!(out.stdout.is_empty());

    let out = tether()
        .args(["classify", "--corpus", "/nonexistent/tether-corpus.jsonl"])
        .output()
        .expect("run tether");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("cannot read /nonexistent/tether-corpus.jsonl"),
        "{out:?}"
    );
}

#[test]
fn corpus_report_to_a_closed_pipe_is_not_a_crash() {
    let file = corpus_file(CORPUS);
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = tether()
        .args(["classify", "--corpus"])
        .arg(file.path())
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .expect("run tether");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}
