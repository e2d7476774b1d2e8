//! The command line as a user runs it: the real binary as a child process.

use std::process::Command;

fn tether() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tether"))
}

#[test]
fn version_names_the_package_version() {
    let out = tether().arg("--version").output().expect("run tether");
    assert!(out.status.success(), "tether --version failed: {out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        stdout.trim(),
        format!("tether {}", env!("CARGO_PKG_VERSION"))
    );
}
