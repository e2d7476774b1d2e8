//! Tether's release tasks, run as `cargo xtask <task>` (the alias in `.cargo/config.toml`;
//! rust-analyzer's xtask pattern: the tasks are Rust, so they need nothing but cargo).
//!
//! Tasks:
//! - `dist [--target TRIPLE]... [--no-vsix] [--build-only]`: the release set in `<checkout>/target/dist/`
//!   (see [`dist`]).

mod archive;
mod dist;
mod targets;

use std::process::ExitCode;

const USAGE: &str = "\
usage: cargo xtask dist [--target TRIPLE]... [--no-vsix] [--build-only]

  dist          build the release set into <checkout>/target/dist/: for each target
                tether-<version>-<target>.tar.gz (.zip for Windows), the VS Code packages
                tether-<version>-<platform>.vsix and tether-<version>.vsix, and SHA256SUMS
  --target      build only this target (repeatable); default: every target
  --no-vsix     only the server archives (no Node needed)
  --build-only  only the release builds (into cargo's target folder), nothing packaged";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("dist") => dist::Options::parse(&args[1..]).and_then(|opts| dist::run(&opts)),
        Some("-h" | "--help") => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Some(other) => Err(format!("unknown task `{other}`\n\n{USAGE}")),
        None => Err(USAGE.to_owned()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("xtask: error: {err}");
            ExitCode::FAILURE
        }
    }
}
