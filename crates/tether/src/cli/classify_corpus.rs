//! `tether classify --corpus FILE`: scores the classifier on a JSONL corpus of
//! `{"input": <observation>, "expect": <kind or [kinds]>}` lines and prints the per-kind
//! precision and recall, the confusion matrix and the misclassified lines
//! (`tether_recovery::score`, which documents the line format and the counting).

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use tether_recovery::score::Score;

use super::classify::context;

/// Runs the command. Exit codes: 0 the corpus was scored (whatever the score; also when the
/// reader of stdout stops early), 1 the report could not be written, 2 the file
/// cannot be read, a line is not a corpus line (the message names the file and the line), or
/// an option is malformed.
pub fn run(path: &Path, now: Option<&str>, utc_offset: Option<&str>) -> ExitCode {
    let ctx = match context(now, utc_offset) {
        Ok(ctx) => ctx,
        Err(msg) => {
            eprintln!("tether classify: {msg}");
            return ExitCode::from(2);
        }
    };
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(err) => {
            eprintln!("tether classify: cannot read {}: {err}", path.display());
            return ExitCode::from(2);
        }
    };
    match Score::of_corpus(&text, &ctx) {
        Ok(score) => {
            let report = format!("corpus {}: {}", path.display(), score.render());
            // A reader that stops early (`| head`) is not an error.
            match writeln!(std::io::stdout().lock(), "{report}") {
                Err(err) if err.kind() != std::io::ErrorKind::BrokenPipe => {
                    eprintln!("tether classify: writing the report: {err}");
                    ExitCode::FAILURE
                }
                _ => ExitCode::SUCCESS,
            }
        }
        Err(err) => {
            eprintln!(
                "tether classify: {}:{}: {}",
                path.display(),
                err.line,
                err.message
            );
            eprintln!(
                "each line must be {{\"input\": <observation>, \"expect\": \"<kind>\" or [\"<kind>\", …]}}; see `tether classify --help`"
            );
            ExitCode::from(2)
        }
    }
}
