//! The lines of an agent's stderr that say why it failed.
//!
//! An agent that dies at start-up usually prints a stack trace and then a footer: Node.js
//! ends every uncaught error with `Node.js v20.20.2`, Rust's panic message is followed by
//! `note: run with RUST_BACKTRACE=1 …`, Python's traceback ends with the exception but
//! Node's error object ends with `}`. The last line of stderr is then the one line that
//! says nothing (R-CLASS-7: the message names the cause). [`reason`] picks the line
//! that names the error instead, pure and table-tested against stderr captured from the
//! real runtimes.

use std::sync::LazyLock;

use regex::Regex;

/// A line that names an error: `Error: ENOENT: …`, `TypeError: …`, `ValueError: …`,
/// `java.lang.IllegalStateException: …`, `error: …`, `error[E0425]: …`, `fatal: …`,
/// `FATAL …`, `panic: …` (Go), `… panicked at …` (Rust).
static CAUSE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?x)
        ^\s*(?:Uncaught\s+)?(?:[A-Za-z_][\w.$]*)?(?:Error|Exception)\b\s*(?::|\[|$)
        | ^\s*(?:error|fatal|FATAL|ERROR|panic)(?:\[[^\]]*\])?\s*:
        | \bpanicked\s+at\b",
    )
    .expect("static regex")
});

/// A line that never says why: a stack frame, the runtime's version footer, a hint, the
/// closing brace of a printed error object, a source excerpt's caret.
static NOISE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?x)
        ^\s*at\s
        | ^Node\.js\s+v\d
        | ^note:\s+run\s+with
        | ^\s*[}\])]+\s*$
        | ^\s*\^+\s*$
        | ^\s*(?:errno|code|syscall|path):\s",
    )
    .expect("static regex")
});

/// The reason in `stderr`, as one line: the last line that names an error (with the line
/// after it when the error's message follows on its own line, as a Rust panic's does),
/// else the last line that is not noise (see [`NOISE`]), else the last non-empty line.
/// `None` when `stderr` has no visible text. Lines are trimmed; the result is at most
/// 400 characters (cut at a character boundary).
#[must_use]
pub fn reason(stderr: &str) -> Option<String> {
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let found = if let Some(i) = lines.iter().rposition(|l| CAUSE.is_match(l)) {
        let line = lines[i];
        // `thread 'main' panicked at src/main.rs:2:5:` puts the message on the next line.
        match lines.get(i + 1) {
            Some(next) if line.ends_with(':') && !NOISE.is_match(next) => {
                format!("{line} {next}")
            }
            _ => line.to_owned(),
        }
    } else {
        (*lines
            .iter()
            .rev()
            .find(|l| !NOISE.is_match(l))
            .or(lines.last())?)
        .to_owned()
    };
    Some(cut(&found, 400))
}

fn cut(s: &str, max_chars: usize) -> String {
    match s.char_indices().nth(max_chars) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::reason;

    /// Node.js 20.20.2 running claude-agent-acp 0.23.1 in a folder that was deleted
    /// (captured here; paths shortened).
    const NODE_DELETED_CWD: &str = "node:internal/bootstrap/switches/does_own_process_state:144
    cachedCwd = rawMethods.cwd();
                           ^

Error: ENOENT: no such file or directory, uv_cwd
    at wrappedCwd (node:internal/bootstrap/switches/does_own_process_state:144:28)
    at WD (file:///x/node_modules/@anthropic-ai/claude-agent-sdk/sdk.mjs:17:385)
    at ModuleJob.run (node:internal/modules/esm/module_job:325:25)
    at async asyncRunEntryPointWithESMLoader (node:internal/modules/run_main:117:5) {
  errno: -2,
  code: 'ENOENT',
  syscall: 'uv_cwd'
}

Node.js v20.20.2
";

    /// Python 3.11 (captured here).
    const PYTHON: &str = "Traceback (most recent call last):
  File \"<string>\", line 1, in <module>
ValueError: bad thing
";

    /// Rust 1.95's panic message (captured here).
    const RUST_PANIC: &str = "
thread 'main' panicked at src/main.rs:2:5:
boom
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace
";

    #[test]
    fn the_line_that_says_why_is_chosen() {
        let table: &[(&str, Option<&str>)] = &[
            (
                NODE_DELETED_CWD,
                Some("Error: ENOENT: no such file or directory, uv_cwd"),
            ),
            (PYTHON, Some("ValueError: bad thing")),
            (
                RUST_PANIC,
                Some("thread 'main' panicked at src/main.rs:2:5: boom"),
            ),
            (
                "node:internal/modules/cjs/loader:1228\n  throw err;\n  ^\n\nError: Cannot find module '/x/dist/index.js'\n    at Module._resolveFilename (node:internal/modules/cjs/loader:1225:15) {\n  code: 'MODULE_NOT_FOUND',\n  requireStack: []\n}\n\nNode.js v20.20.2\n",
                Some("Error: Cannot find module '/x/dist/index.js'"),
            ),
            (
                "error: unexpected argument '--acp' found\n\nUsage: agent [OPTIONS]\n\nFor more information, try '--help'.\n",
                Some("error: unexpected argument '--acp' found"),
            ),
            (
                "panic: runtime error: index out of range [3] with length 3\n\ngoroutine 1 [running]:\nmain.main()\n\t/x/main.go:5 +0x1d\nexit status 2\n",
                Some("panic: runtime error: index out of range [3] with length 3"),
            ),
            // No error line: the last line that is not noise.
            (
                "starting agent\nlistening on stdio\nNode.js v20.20.2\n",
                Some("listening on stdio"),
            ),
            ("only one line", Some("only one line")),
            // Nothing but noise: still the last line, rather than nothing.
            ("Node.js v20.20.2\n", Some("Node.js v20.20.2")),
            ("", None),
            ("\n  \n", None),
        ];
        for (stderr, want) in table {
            assert_eq!(reason(stderr).as_deref(), *want, "stderr:\n{stderr}");
        }
    }

    #[test]
    fn a_long_reason_is_cut_at_a_character() {
        let long = format!("Error: {}", "é".repeat(1000));
        let got = reason(&long).expect("a reason");
        assert_eq!(got.chars().count(), 401);
        assert!(got.ends_with('…'));
    }
}
