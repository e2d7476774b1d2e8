//! ARCHITECTURE.md's list of the binary's subcommands ("Entry points", "The binary") is the
//! list `tether --help` prints: a subcommand added, renamed or removed fails here until the
//! map says so.

use std::process::Command;

/// The subcommands `tether --help` lists (clap's "Commands:" section, `help` aside).
fn subcommands() -> Vec<String> {
    let out = Command::new(env!("CARGO_BIN_EXE_tether"))
        .arg("--help")
        .env("TETHER_REMOTE", "off")
        .output()
        .expect("tether --help runs");
    assert!(out.status.success(), "tether --help: {}", out.status);
    let text = String::from_utf8(out.stdout).expect("utf-8 help");
    text.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_architecture_map_names_every_subcommand_and_no_other() {
    let map = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../ARCHITECTURE.md"
    ))
    .expect("ARCHITECTURE.md");
    let entry = map
        .split("- **The binary.**")
        .nth(1)
        .and_then(|rest| rest.split("\n- **").next())
        .expect("ARCHITECTURE.md has a \"The binary\" entry point");
    let listed: Vec<String> = entry
        .split('`')
        .skip(1)
        .step_by(2)
        .filter_map(|code| code.split_whitespace().next())
        .filter(|word| {
            *word != "tether" && word.chars().all(|c| c.is_ascii_lowercase() || c == '-')
        })
        .map(str::to_owned)
        .collect();
    let shown = subcommands();
    assert!(shown.len() >= 6, "read tether --help: {shown:?}");
    for name in &shown {
        assert!(
            listed.contains(name),
            "ARCHITECTURE.md does not list `{name}`: {listed:?}"
        );
    }
    // Hidden subcommands may be listed too; anything else listed must exist.
    for name in &listed {
        assert!(
            shown.contains(name) || name == "scripted-agent",
            "ARCHITECTURE.md lists `{name}`, which tether --help does not show: {shown:?}"
        );
    }
}
