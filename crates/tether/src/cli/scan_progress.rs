//! The progress bar of `tether sessions list --all` (R-HIST-6): on stderr, only when
//! stderr is a terminal, and only once the scan has taken longer than [`SHOW_AFTER`];
//! it counts the agents' stores scanned and the session files summarized, and is cleared
//! when the scan ends, so stdout (the table or the JSON) is all that stays. A fast scan,
//! a pipe or a redirected stderr never sees it.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How long a scan runs before its bar appears: 200 ms (a scan that ends sooner shows
/// nothing; R-HIST-6: "a progress bar when the scan takes longer than a moment").
pub const SHOW_AFTER: Duration = Duration::from_millis(200);

/// The bar's line: spinner, stores done of all, the store being scanned, files done of
/// those found so far.
const TEMPLATE: &str = "{spinner} scanning agents' stores {msg}: {pos}/{len} session files";

/// A scan's progress, drawn on a target that is only attached once [`SHOW_AFTER`] (or the
/// given delay) has passed.
#[derive(Debug)]
pub struct ScanProgress {
    bar: ProgressBar,
    started: Instant,
    after: Duration,
    /// The target, until the bar is shown; `None` once shown or when it never will be.
    pending: Option<ProgressDrawTarget>,
    stores_done: usize,
    stores: usize,
}

impl ScanProgress {
    /// Progress of a scan of `stores` stores on this process's stderr: drawn after
    /// [`SHOW_AFTER`] when stderr is a terminal, never otherwise.
    #[must_use]
    pub fn stderr(stores: usize) -> Self {
        let target = std::io::stderr()
            .is_terminal()
            .then(ProgressDrawTarget::stderr);
        Self::with_target(target, stores, SHOW_AFTER)
    }

    /// Progress that is never drawn.
    #[must_use]
    pub fn hidden() -> Self {
        Self::with_target(None, 0, SHOW_AFTER)
    }

    /// Progress of a scan of `stores` stores, drawn on `target` once `after` has passed
    /// (checked at each step); `None` draws nothing.
    #[must_use]
    pub fn with_target(target: Option<ProgressDrawTarget>, stores: usize, after: Duration) -> Self {
        let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::hidden());
        if let Ok(style) = ProgressStyle::with_template(TEMPLATE) {
            bar.set_style(style);
        }
        let progress = Self {
            bar,
            started: Instant::now(),
            after,
            pending: target,
            stores_done: 0,
            stores,
        };
        progress.set_message("");
        progress
    }

    /// A store's scan begins: `files` session files were found in it for the workspace.
    pub fn store(&mut self, name: &str, files: usize) {
        self.stores_done += 1;
        self.bar.inc_length(files as u64);
        self.set_message(name);
        self.step();
    }

    /// One session file summarized (or found unreadable).
    pub fn file(&mut self) {
        self.bar.inc(1);
        self.step();
    }

    /// The scan is over: the bar, if it was shown, is cleared.
    pub fn finish(self) {
        self.bar.finish_and_clear();
    }

    fn set_message(&self, name: &str) {
        let name = if name.is_empty() {
            String::new()
        } else {
            format!(" ({name})")
        };
        self.bar
            .set_message(format!("{}/{}{name}", self.stores_done, self.stores));
    }

    /// Attaches the target once the delay has passed.
    fn step(&mut self) {
        if self.pending.is_some()
            && self.started.elapsed() >= self.after
            && let Some(target) = self.pending.take()
        {
            self.bar.set_draw_target(target);
            self.bar.enable_steady_tick(Duration::from_millis(100));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use indicatif::TermLike;
    use std::sync::{Arc, Mutex};

    /// A terminal that keeps what is written to it.
    #[derive(Debug, Clone, Default)]
    struct Screen(Arc<Mutex<String>>);

    impl TermLike for Screen {
        fn width(&self) -> u16 {
            120
        }
        fn move_cursor_up(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_down(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_right(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_left(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn write_line(&self, s: &str) -> std::io::Result<()> {
            self.write_str(&format!("{s}\n"))
        }
        fn write_str(&self, s: &str) -> std::io::Result<()> {
            self.0.lock().unwrap().push_str(s);
            Ok(())
        }
        fn clear_line(&self) -> std::io::Result<()> {
            Ok(())
        }
        fn flush(&self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn scan(after: Duration) -> String {
        let screen = Screen::default();
        let target = ProgressDrawTarget::term_like(Box::new(screen.clone()));
        let mut progress = ScanProgress::with_target(Some(target), 2, after);
        progress.store("Codex", 3);
        for _ in 0..3 {
            progress.file();
        }
        progress.store("opencode", 1);
        progress.file();
        progress.finish();
        screen.0.lock().unwrap().clone()
    }

    #[test]
    fn a_slow_scan_counts_stores_and_files_on_the_terminal() {
        let drawn = scan(Duration::ZERO);
        assert!(
            drawn.contains("scanning agents' stores") && drawn.contains("session files"),
            "{drawn:?}"
        );
        assert!(
            drawn.contains("1/2 (Codex)") || drawn.contains("2/2 (opencode)"),
            "{drawn:?}"
        );
    }

    #[test]
    fn a_fast_scan_and_a_scan_without_terminal_draw_nothing() {
        assert_eq!(scan(Duration::from_secs(3600)), "");
        let mut progress = ScanProgress::with_target(None, 1, Duration::ZERO);
        progress.store("Codex", 1);
        progress.file();
        assert!(progress.pending.is_none() && progress.bar.is_hidden());
        progress.finish();
    }
}
