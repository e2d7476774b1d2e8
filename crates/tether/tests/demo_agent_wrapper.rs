//! `tether demo-agent`, the agent wrapper of `tether demo --agent X` where there is no `sh`
//! (Windows): its staged start failures count down, then it finds the agent's plain command
//! name on `PATH` as the server does, runs it on its own standard streams, writes the pids
//! the demo's crash step ends, and exits with the agent's exit code. Run here on Unix with
//! `sh` as the agent; the windows suite runs it under Wine with the real agents
//! (`tests/wine/real-agents.sh`, `tether.exe demo --agent X`).
#![cfg(unix)]

use std::io::Write;
use std::process::{Command, Stdio};

fn wrapper(dir: &std::path::Path, command: &[&str], stdin: &str) -> std::process::Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tether"))
        .arg("demo-agent")
        .arg("--fail-file")
        .arg(dir.join("fail"))
        .arg("--pid-file")
        .arg(dir.join("pids"))
        .arg("--")
        .args(command)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start tether demo-agent");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
        .expect("write stdin");
    child
        .wait_with_output()
        .expect("wait for tether demo-agent")
}

#[test]
fn starts_fail_as_armed_then_the_agent_runs_found_on_path_with_its_exit_code() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("fail"), "2").expect("arm");
    let agent = ["sh", "-c", "cat; echo \"pid $$\"; exit 7"];
    for left in ["1", "0"] {
        let out = wrapper(dir.path(), &agent, "");
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("injected start failure"),
            "{out:?}"
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("fail")).expect("count"),
            left
        );
        assert!(!dir.path().join("pids").exists(), "no agent was started");
    }
    // The count is spent: `sh` is found on PATH and runs on the wrapper's own stdio.
    let out = wrapper(dir.path(), &agent, "hello agent\n");
    assert_eq!(out.status.code(), Some(7), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.starts_with("hello agent\n"), "{stdout}");
    let pids = std::fs::read_to_string(dir.path().join("pids")).expect("pid file");
    let pids: Vec<&str> = pids.split_whitespace().collect();
    assert_eq!(pids.len(), 2, "{pids:?}");
    assert_eq!(
        stdout.trim_end().rsplit(' ').next(),
        Some(pids[1]),
        "{stdout}"
    );
}

#[test]
fn a_command_not_on_path_names_where_it_was_looked_for() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = wrapper(dir.path(), &["tether-no-such-agent"], "");
    assert_eq!(out.status.code(), Some(127), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("`tether-no-such-agent` was not found"),
        "{stderr}"
    );
}
