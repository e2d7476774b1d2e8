//! What the next catch-up must read, from what a file watcher reported (R-INDEX-2): a pure
//! state machine, fed the watcher's changes and a clock, deciding the catch-up's plan. The
//! watcher itself (the I/O) is `keep.rs`.
//!
//! | state before `plan` | plan |
//! |---|---|
//! | never caught up whole, or a change was lost (`Lost`) | `Full` |
//! | the last whole catch-up is [`FULL_EVERY`] old or older | `Full` |
//! | changes noted | `Changed` with exactly those files, stores and the cache |
//! | nothing noted | `Nothing` |
//!
//! A plan is taken out of the state when made; [`Freshness::failed`] puts it back when its
//! catch-up did not finish, so nothing noted is dropped.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// How old the last whole catch-up may be before the next search does one again: 10
/// minutes. The periodic check behind the notifications (R-INDEX-2): it catches what a
/// watcher cannot report (a store folder made after the watch began on a file system
/// without notifications, such as some network mounts) at the cost of one `stat` pass
/// every 10 minutes of searching.
pub const FULL_EVERY: Duration = Duration::from_secs(600);

/// One thing a watcher reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// A file below agent store `store` (its index in [`crate::Sources::agents`]) was made,
    /// written or removed.
    File {
        /// The store's index in the sources.
        store: usize,
        /// The file.
        path: PathBuf,
    },
    /// Agent store `store` must be looked at whole: a folder was made in it (files made
    /// before its watch began are not reported), or its sessions are not files of their own
    /// (opencode's database).
    Store(usize),
    /// Tether's cache changed.
    Cache,
    /// The watcher may have missed changes (its queue overflowed, it failed, or it did not
    /// answer in time): everything is looked at again.
    Lost,
}

/// What the next catch-up reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// Nothing changed since the last catch-up: the index answers as it is.
    Nothing,
    /// Only these changed.
    Changed {
        /// Files of agent stores, by store index (those of a store in `stores` left out).
        files: BTreeSet<(usize, PathBuf)>,
        /// Agent stores looked at whole.
        stores: BTreeSet<usize>,
        /// Whether Tether's cache is looked at.
        cache: bool,
    },
    /// Everything: every store and the cache (`Index::catch_up`).
    Full,
}

/// The changes noted since the last catch-up, and when the last whole one ran.
#[derive(Debug, Clone, Default)]
pub struct Freshness {
    files: BTreeSet<(usize, PathBuf)>,
    stores: BTreeSet<usize>,
    cache: bool,
    lost: bool,
    last_full: Option<Instant>,
}

impl Freshness {
    /// A state that has never caught up: its first plan is `Full`.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Notes one change.
    pub fn note(&mut self, change: Change) {
        match change {
            Change::File { store, path } => {
                self.files.insert((store, path));
            }
            Change::Store(store) => {
                self.stores.insert(store);
            }
            Change::Cache => self.cache = true,
            Change::Lost => self.lost = true,
        }
    }

    /// The plan of the catch-up to run now, taken out of the state: call
    /// [`Self::failed`] with it if that catch-up does not finish.
    pub fn plan(&mut self, now: Instant) -> Plan {
        let due = self
            .last_full
            .is_none_or(|at| now.saturating_duration_since(at) >= FULL_EVERY);
        if self.lost || due {
            *self = Self {
                last_full: Some(now),
                ..Self::default()
            };
            return Plan::Full;
        }
        if self.files.is_empty() && self.stores.is_empty() && !self.cache {
            return Plan::Nothing;
        }
        let stores = std::mem::take(&mut self.stores);
        let mut files = std::mem::take(&mut self.files);
        files.retain(|(store, _)| !stores.contains(store));
        Plan::Changed {
            files,
            stores,
            cache: std::mem::take(&mut self.cache),
        }
    }

    /// The catch-up of `plan` did not finish: what it was to read is read again next time
    /// (a `Full` one is due again at once).
    pub fn failed(&mut self, plan: Plan) {
        match plan {
            Plan::Nothing => {}
            Plan::Full => {
                self.lost = true;
                self.last_full = None;
            }
            Plan::Changed {
                files,
                stores,
                cache,
            } => {
                self.files.extend(files);
                self.stores.extend(stores);
                self.cache |= cache;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(store: usize, name: &str) -> Change {
        Change::File {
            store,
            path: PathBuf::from(name),
        }
    }

    fn changed(files: &[(usize, &str)], stores: &[usize], cache: bool) -> Plan {
        Plan::Changed {
            files: files.iter().map(|(s, p)| (*s, PathBuf::from(p))).collect(),
            stores: stores.iter().copied().collect(),
            cache,
        }
    }

    /// The table: each row is the changes noted after a first, whole catch-up at t0, the
    /// time of the next plan (seconds after t0), and that plan.
    #[test]
    fn each_state_gives_its_plan() {
        let min = 60;
        let rows: Vec<(&str, Vec<Change>, u64, Plan)> = vec![
            ("nothing noted", vec![], 1, Plan::Nothing),
            (
                "a file",
                vec![file(0, "a")],
                1,
                changed(&[(0, "a")], &[], false),
            ),
            (
                "a file twice is read once",
                vec![file(0, "a"), file(0, "a")],
                1,
                changed(&[(0, "a")], &[], false),
            ),
            (
                "files of two stores",
                vec![file(0, "a"), file(1, "b")],
                1,
                changed(&[(0, "a"), (1, "b")], &[], false),
            ),
            (
                "a store looked at whole leaves out its files",
                vec![file(0, "a"), Change::Store(0), file(1, "b")],
                1,
                changed(&[(1, "b")], &[0], false),
            ),
            ("the cache", vec![Change::Cache], 1, changed(&[], &[], true)),
            (
                "a lost change",
                vec![file(0, "a"), Change::Lost],
                1,
                Plan::Full,
            ),
            ("ten minutes later", vec![], 10 * min, Plan::Full),
            (
                "just under ten minutes",
                vec![],
                10 * min - 1,
                Plan::Nothing,
            ),
        ];
        for (what, changes, after, expected) in rows {
            let t0 = Instant::now();
            let mut fresh = Freshness::new();
            assert_eq!(fresh.plan(t0), Plan::Full, "{what}: the first plan");
            for c in changes {
                fresh.note(c);
            }
            let plan = fresh.plan(t0 + Duration::from_secs(after));
            assert_eq!(plan, expected, "{what}");
            // Taken: nothing is left for the plan after it.
            let next = fresh.plan(t0 + Duration::from_secs(after));
            assert_eq!(next, Plan::Nothing, "{what}: taken out");
        }
    }

    /// A catch-up that did not finish gives its plan back: nothing noted is dropped, and a
    /// whole one is due again at once.
    #[test]
    fn a_failed_catch_up_gives_its_plan_back() {
        let t0 = Instant::now();
        let mut fresh = Freshness::new();
        let first = fresh.plan(t0);
        assert_eq!(first, Plan::Full);
        fresh.failed(first);
        assert_eq!(fresh.plan(t0), Plan::Full, "the whole one again");

        fresh.note(file(0, "a"));
        fresh.note(Change::Cache);
        let plan = fresh.plan(t0);
        fresh.note(file(1, "b"));
        fresh.failed(plan);
        assert_eq!(
            fresh.plan(t0),
            changed(&[(0, "a"), (1, "b")], &[], true),
            "the failed plan's changes and the ones noted since"
        );
    }
}
