//! `tether`: see `tether --help`.

use clap::Parser;

/// Keeps AI coding agent sessions alive across failures, rate limits and editor restarts.
#[derive(Parser, Debug)]
#[command(name = "tether", version, about)]
struct Cli {}

fn main() {
    let _cli = Cli::parse();
}
