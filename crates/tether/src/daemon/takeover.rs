//! When a daemon hands over to a newer build (R-DAEMON-12): a pure state machine, fed
//! events and the time, returning decisions with their reasons. The server does the I/O
//! ([`super::server`]): it holds new turns, waits for the running ones, persists, starts the
//! successor and exits.
//!
//! The states: **serving**; **draining** for a successor (new prompt turns are held, the
//! running ones are waited for, until a deadline); **handing over** (final: the daemon
//! persists every session, closes its editors' connections so their forwarders reconnect
//! through R-DAEMON-8's path, starts the successor's binary and exits). A drain whose
//! deadline passes with a turn still running is **refused**: the held turns run, the daemon
//! keeps serving (the newer editor included), and the next connection of a newer build asks
//! again. A running turn is never cut short.

use std::cmp::Ordering;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use serde::{Deserialize, Serialize};

/// The default bound on a drain: how long a daemon waits for its running turns to end
/// before it refuses a takeover (`tether daemon run --drain-secs`,
/// `TETHER_DAEMON_DRAIN_SECS`). Long enough for most turns to finish; short enough that
/// prompts held meanwhile do not wait long.
pub const DEFAULT_DRAIN_SECS: u64 = 30;

/// What tells builds of one protocol version apart, and which is newer ([`Identity::newer_than`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Identity {
    /// The package version (`CARGO_PKG_VERSION`), semver.
    pub version: String,
    /// The binary's modification time, nanoseconds since the Unix epoch (0 when it cannot
    /// be read): the same datum [`super::build::build_id_of`] tells two builds of one
    /// version apart by.
    pub modified_ns: u64,
}

impl Identity {
    /// The identity of the `tether` binary at `exe`, built from this library.
    #[must_use]
    pub fn of(exe: &std::path::Path) -> Self {
        let modified_ns = std::fs::metadata(exe)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
            .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
        Self {
            version: env!("CARGO_PKG_VERSION").to_owned(),
            modified_ns,
        }
    }

    /// The running binary's identity.
    #[must_use]
    pub fn of_this_process() -> Self {
        Self::of(&std::env::current_exe().unwrap_or_default())
    }

    /// Whether `self` is a newer build than `other`. The rule: the higher semver version
    /// is newer (a pre-release below its release); for one version, the binary modified
    /// later is newer (a rebuild, or a package installed later: cargo writes the binary
    /// when it links it, an installer when it installs it). Equal versions and times, or
    /// unreadable times (0), are never newer: no takeover without a clear order, and the
    /// order is total, so two builds never take over from each other in turn.
    ///
    /// Origin: R-DAEMON-12 ("a newer build takes over from an older daemon") and
    /// [`super::build::build_id_of`], whose version and modification time already tell
    /// builds apart.
    #[must_use]
    pub fn newer_than(&self, other: &Self) -> bool {
        match compare_versions(&self.version, &other.version) {
            Ordering::Greater => true,
            Ordering::Less => false,
            Ordering::Equal => {
                self.modified_ns != 0
                    && other.modified_ns != 0
                    && self.modified_ns > other.modified_ns
            }
        }
    }
}

/// Semver precedence of `a` and `b` (`MAJOR.MINOR.PATCH[-PRE][+BUILD]`): numbers compared
/// as numbers, a pre-release below its release, pre-releases compared as text, build
/// metadata ignored. A part that is not a number counts as 0.
fn compare_versions(a: &str, b: &str) -> Ordering {
    fn parts(v: &str) -> ([u64; 3], Option<&str>) {
        let v = v.split('+').next().unwrap_or(v);
        let (core, pre) = match v.split_once('-') {
            Some((core, pre)) => (core, Some(pre)),
            None => (v, None),
        };
        let mut nums = [0; 3];
        for (slot, part) in nums.iter_mut().zip(core.split('.')) {
            *slot = part.parse().unwrap_or(0);
        }
        (nums, pre)
    }
    let (an, ap) = parts(a);
    let (bn, bp) = parts(b);
    an.cmp(&bn).then_with(|| match (ap, bp) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Greater,
        (Some(_), None) => Ordering::Less,
        (Some(a), Some(b)) => a.cmp(b),
    })
}

/// A newer build that asked to take over: who, and the binary to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Successor {
    /// Its identity.
    pub identity: Identity,
    /// Its build id (for the log).
    pub build: String,
    /// Its binary, started as `daemon run` once this daemon has handed over.
    pub exe: PathBuf,
}

/// The daemon a successor took over from (R-DAEMON-12), as `tether daemon status` reports
/// it: `{"pid": 1064, "build": "40fe185753b1"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Predecessor {
    /// Its process id.
    pub pid: u32,
    /// Its build ([`super::server::DaemonOptions::build`]).
    pub build: String,
}

impl Predecessor {
    /// The `--took-over-from` argument: `PID/BUILD`.
    #[must_use]
    pub fn to_arg(&self) -> String {
        format!("{}/{}", self.pid, self.build)
    }

    /// Parses `PID/BUILD` ([`Self::to_arg`]).
    ///
    /// # Errors
    /// A text not of that shape (a decimal pid, `/`, a non-empty build), said in words.
    pub fn parse(arg: &str) -> Result<Self, String> {
        let shape = || format!("--took-over-from wants PID/BUILD, got {arg:?}");
        let (pid, build) = arg.split_once('/').ok_or_else(shape)?;
        let pid = pid.parse().map_err(|_| shape())?;
        if build.is_empty() {
            return Err(shape());
        }
        Ok(Self {
            pid,
            build: build.to_owned(),
        })
    }
}

/// What the machine is fed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A client said hello (its build's identity, and its binary when it may succeed).
    Hello(Successor),
    /// No turn runs and no client that cannot reconnect (an ACP client) is connected.
    Drained,
    /// Time passed (the drain's deadline may have come).
    Tick,
}

/// What the daemon does, each with the reason it is logged with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Nothing changes.
    Keep(String),
    /// Hold new turns and wait for the running ones until `deadline`.
    Drain {
        /// The build it will hand over to.
        successor: Successor,
        /// When to give up.
        deadline: Instant,
        /// Why.
        reason: String,
    },
    /// Persist, let every editor go, start `successor`, exit.
    HandOver {
        /// The build it hands over to.
        successor: Successor,
        /// Why.
        reason: String,
    },
    /// Give the takeover up: admit the held turns again, keep serving.
    Refuse(String),
}

impl Decision {
    /// The reason it is logged with.
    #[must_use]
    pub fn reason(&self) -> &str {
        match self {
            Self::Keep(r) | Self::Refuse(r) => r,
            Self::Drain { reason, .. } | Self::HandOver { reason, .. } => reason,
        }
    }
}

/// Where the daemon stands.
#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    Serving,
    Draining {
        successor: Successor,
        deadline: Instant,
    },
    HandingOver,
}

/// The takeover state machine of one daemon (see the module's documentation).
#[derive(Debug, Clone)]
pub struct Takeover {
    me: Identity,
    drain: Duration,
    state: State,
}

impl Takeover {
    /// A daemon of identity `me` that drains at most `drain` for a successor.
    #[must_use]
    pub fn new(me: Identity, drain: Duration) -> Self {
        Self {
            me,
            drain,
            state: State::Serving,
        }
    }

    /// Whether the daemon drains now (new turns are held).
    #[must_use]
    pub fn draining(&self) -> bool {
        matches!(self.state, State::Draining { .. })
    }

    /// The build it drains for, while it drains.
    #[must_use]
    pub fn successor(&self) -> Option<&Successor> {
        match &self.state {
            State::Draining { successor, .. } => Some(successor),
            _ => None,
        }
    }

    /// The drain's deadline, while it drains.
    #[must_use]
    pub fn deadline(&self) -> Option<Instant> {
        match &self.state {
            State::Draining { deadline, .. } => Some(*deadline),
            _ => None,
        }
    }

    /// Feeds `event`, happening at `now`; returns what to do.
    pub fn on(&mut self, event: Event, now: Instant) -> Decision {
        match (&self.state, event) {
            (State::HandingOver, _) => Decision::Keep("handing over already".into()),
            (State::Serving, Event::Hello(client)) => {
                if !client.identity.newer_than(&self.me) {
                    return Decision::Keep(format!(
                        "client build {} ({}) is not newer than this daemon ({})",
                        client.build,
                        show(&client.identity),
                        show(&self.me)
                    ));
                }
                let deadline = now + self.drain;
                self.state = State::Draining {
                    successor: client.clone(),
                    deadline,
                };
                Decision::Drain {
                    reason: format!(
                        "client build {} ({}) is newer than this daemon ({}): holding new turns and waiting up to {:?} for the running ones, then handing over",
                        client.build,
                        show(&client.identity),
                        show(&self.me),
                        self.drain
                    ),
                    successor: client,
                    deadline,
                }
            }
            (State::Serving, Event::Drained | Event::Tick) => {
                Decision::Keep("serving; no takeover asked".into())
            }
            (
                State::Draining {
                    successor,
                    deadline,
                },
                Event::Hello(client),
            ) => {
                if client.identity.newer_than(&successor.identity) {
                    let reason = format!(
                        "client build {} ({}) is newer than the successor waited for ({}): it succeeds instead, same deadline",
                        client.build,
                        show(&client.identity),
                        show(&successor.identity)
                    );
                    let deadline = *deadline;
                    self.state = State::Draining {
                        successor: client,
                        deadline,
                    };
                    Decision::Keep(reason)
                } else {
                    Decision::Keep(format!(
                        "draining for build {} already; client build {} served meanwhile",
                        successor.build, client.build
                    ))
                }
            }
            (State::Draining { successor, .. }, Event::Drained) => {
                let successor = successor.clone();
                self.state = State::HandingOver;
                Decision::HandOver {
                    reason: format!(
                        "no turn runs: persisting every session and handing over to build {} ({})",
                        successor.build,
                        successor.exe.display()
                    ),
                    successor,
                }
            }
            (
                State::Draining {
                    successor,
                    deadline,
                },
                Event::Tick,
            ) => {
                if now < *deadline {
                    return Decision::Keep("draining; the deadline has not come".into());
                }
                let reason = format!(
                    "a turn still runs after {:?}: takeover by build {} refused (a turn is never cut short); serving on, the next connection of a newer build asks again",
                    self.drain, successor.build
                );
                self.state = State::Serving;
                Decision::Refuse(reason)
            }
        }
    }
}

fn show(identity: &Identity) -> String {
    format!(
        "version {}, binary modified {} ns",
        identity.version, identity.modified_ns
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn took_over_from_is_pid_slash_build_and_nothing_else() {
        let p = Predecessor {
            pid: 1064,
            build: "40fe185753b1".to_owned(),
        };
        assert_eq!(p.to_arg(), "1064/40fe185753b1");
        assert_eq!(Predecessor::parse(&p.to_arg()), Ok(p));
        for bad in [
            "",
            "1064",
            "1064/",
            "/40fe185753b1",
            "x/40fe",
            "-1/40fe",
            "99999999999/b",
        ] {
            let err = Predecessor::parse(bad).expect_err(bad);
            assert!(err.contains("PID/BUILD"), "{bad:?}: {err}");
        }
    }

    fn id(version: &str, modified_ns: u64) -> Identity {
        Identity {
            version: version.into(),
            modified_ns,
        }
    }

    fn succ(version: &str, modified_ns: u64) -> Successor {
        Successor {
            identity: id(version, modified_ns),
            build: format!("b{version}-{modified_ns}"),
            exe: PathBuf::from(format!("/opt/tether-{version}-{modified_ns}")),
        }
    }

    #[test]
    fn newer_is_the_higher_version_then_the_later_binary() {
        let cases = [
            (("0.2.0", 1), ("0.1.9", 5), true),
            (("0.1.10", 1), ("0.1.9", 5), true),
            (("0.1.9", 9), ("0.1.10", 1), false),
            (("1.0.0", 1), ("1.0.0-rc.1", 5), true),
            (("1.0.0-rc.2", 1), ("1.0.0-rc.1", 5), true),
            (("1.0.0-rc.1", 9), ("1.0.0", 1), false),
            (("0.1.0+abc", 6), ("0.1.0", 5), true),
            (("0.1.0", 6), ("0.1.0", 5), true),
            (("0.1.0", 5), ("0.1.0", 5), false),
            (("0.1.0", 4), ("0.1.0", 5), false),
            (("0.1.0", 0), ("0.1.0", 5), false),
            (("0.1.0", 6), ("0.1.0", 0), false),
        ];
        for ((av, at), (bv, bt), want) in cases {
            assert_eq!(
                id(av, at).newer_than(&id(bv, bt)),
                want,
                "{av}@{at} newer than {bv}@{bt}"
            );
            if want {
                assert!(!id(bv, bt).newer_than(&id(av, at)), "never both ways");
            }
        }
    }

    /// One row: the event fed, seconds after the start, and the decision expected (its
    /// kind, and a word of its reason).
    type Row = (Event, u64, &'static str, &'static str);

    fn run(rows: &[Row]) {
        let t0 = Instant::now();
        let mut machine = Takeover::new(id("0.1.0", 100), Duration::from_secs(30));
        for (n, (event, at, kind, word)) in rows.iter().enumerate() {
            let decision = machine.on(event.clone(), t0 + Duration::from_secs(*at));
            let got = match &decision {
                Decision::Keep(_) => "keep",
                Decision::Drain { .. } => "drain",
                Decision::HandOver { .. } => "handover",
                Decision::Refuse(_) => "refuse",
            };
            assert_eq!(got, *kind, "row {n}: {decision:?}");
            assert!(
                decision.reason().contains(word),
                "row {n}: {:?} lacks {word:?}",
                decision.reason()
            );
        }
    }

    #[test]
    fn the_decision_table() {
        use Event::{Drained, Hello, Tick};
        // An older or equal client is served; a newer one starts a drain; drained: hand over.
        run(&[
            (Hello(succ("0.1.0", 100)), 0, "keep", "not newer"),
            (Hello(succ("0.0.9", 900)), 0, "keep", "not newer"),
            (Drained, 1, "keep", "no takeover asked"),
            (Tick, 1, "keep", "no takeover asked"),
            (Hello(succ("0.1.0", 200)), 2, "drain", "holding new turns"),
            (Tick, 20, "keep", "deadline has not come"),
            (Hello(succ("0.1.0", 150)), 21, "keep", "served meanwhile"),
            (Drained, 25, "handover", "b0.1.0-200"),
            (Hello(succ("0.2.0", 1)), 26, "keep", "handing over already"),
            (Tick, 99, "keep", "handing over already"),
        ]);
        // A turn outlives the bound: refused, serving again, and the next newer hello
        // asks again.
        run(&[
            (Hello(succ("0.1.0", 200)), 0, "drain", "30s"),
            (Tick, 29, "keep", "deadline has not come"),
            (Tick, 30, "refuse", "never cut short"),
            (Drained, 31, "keep", "no takeover asked"),
            (Hello(succ("0.1.0", 200)), 40, "drain", "newer"),
            (Drained, 41, "handover", "handing over"),
        ]);
        // An even newer build during a drain becomes the successor.
        run(&[
            (Hello(succ("0.1.0", 200)), 0, "drain", "newer"),
            (Hello(succ("0.1.1", 1)), 5, "keep", "succeeds instead"),
            (Drained, 6, "handover", "b0.1.1-1"),
        ]);
    }

    #[test]
    fn the_deadline_is_the_drain_bound_after_the_newer_hello() {
        let t0 = Instant::now();
        let mut machine = Takeover::new(id("0.1.0", 100), Duration::from_secs(7));
        assert!(!machine.draining());
        let Decision::Drain { deadline, .. } = machine.on(Event::Hello(succ("0.1.0", 101)), t0)
        else {
            panic!("drains")
        };
        assert_eq!(deadline, t0 + Duration::from_secs(7));
        assert_eq!(machine.deadline(), Some(deadline));
        assert!(machine.draining());
        assert!(matches!(
            machine.on(Event::Tick, deadline),
            Decision::Refuse(_)
        ));
        assert!(!machine.draining());
        assert_eq!(machine.deadline(), None);
    }
}
