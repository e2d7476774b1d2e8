//! Journal events and the materialized session state they fold into.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::held::{BlobRef, Held, hold, refs_under};
use crate::model::{
    Approvals, ChatTurn, DiffSession, ExecTurn, Extra, SessionContext, SessionMeta,
    SessionSnapshot, SessionStats, Telemetry, UiState,
};
use crate::summary::FIRST_PROMPT_CHARS;

/// A 128-bit fingerprint (truncated SHA-256) of a value's canonical serialization; used to
/// find which parts of a snapshot changed since the last write.
pub(crate) type Fp = [u8; 16];

pub(crate) fn fp_bytes(bytes: &[u8]) -> Fp {
    let d = Sha256::digest(bytes);
    let mut out = [0u8; 16];
    out.copy_from_slice(&d[..16]);
    out
}

pub(crate) fn fp_of<T: Serialize>(v: &T) -> Fp {
    fp_bytes(&serde_json::to_vec(v).unwrap_or_default())
}

/// Fingerprint of a stored value as its typed form would serialize (so a snapshot read back
/// and persisted again is recognised as unchanged).
pub(crate) fn fp_stored<T: Serialize + for<'de> Deserialize<'de>>(v: &Value) -> Fp {
    match serde_json::from_value::<T>(v.clone()) {
        Ok(t) => fp_of(&t),
        Err(_) => fp_of(v),
    }
}

/// The snapshot sections other than the two turn lists, by their journal name.
pub(crate) const SECTIONS: &[&str] = &[
    "diffSessions",
    "approvals",
    "uiState",
    "context",
    "telemetry",
    "extra",
];

/// A section in the caller's typed form, kept to tell whether the next snapshot changed it
/// (a structural equality check: no serialization or hashing on the persist path).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum SectionVal {
    Diff(Vec<DiffSession>),
    Approvals(Approvals),
    Ui(UiState),
    Context(SessionContext),
    Telemetry(Option<Telemetry>),
    Extra(Extra),
}

impl SectionVal {
    /// The section `name` of `snap` (cloned).
    pub fn of(name: &str, snap: &SessionSnapshot) -> SectionVal {
        match name {
            "diffSessions" => SectionVal::Diff(snap.diff_sessions.clone()),
            "approvals" => SectionVal::Approvals(snap.approvals.clone()),
            "uiState" => SectionVal::Ui(snap.ui_state.clone()),
            "context" => SectionVal::Context(snap.context.clone()),
            "telemetry" => SectionVal::Telemetry(snap.telemetry.clone()),
            _ => SectionVal::Extra(snap.extra.clone()),
        }
    }

    /// Whether `snap`'s section of the same name equals this one.
    pub fn matches(&self, snap: &SessionSnapshot) -> bool {
        match self {
            SectionVal::Diff(v) => *v == snap.diff_sessions,
            SectionVal::Approvals(v) => *v == snap.approvals,
            SectionVal::Ui(v) => *v == snap.ui_state,
            SectionVal::Context(v) => *v == snap.context,
            SectionVal::Telemetry(v) => *v == snap.telemetry,
            SectionVal::Extra(v) => *v == snap.extra,
        }
    }

    /// The typed form of a stored section value, if it parses.
    pub fn from_stored(name: &str, v: &Value) -> Option<SectionVal> {
        let v = v.clone();
        Some(match name {
            "diffSessions" => SectionVal::Diff(serde_json::from_value(v).ok()?),
            "approvals" => SectionVal::Approvals(serde_json::from_value(v).ok()?),
            "uiState" => SectionVal::Ui(serde_json::from_value(v).ok()?),
            "context" => SectionVal::Context(serde_json::from_value(v).ok()?),
            "telemetry" => SectionVal::Telemetry(serde_json::from_value(v).ok()?),
            "extra" => SectionVal::Extra(serde_json::from_value(v).ok()?),
            _ => return None,
        })
    }

    /// The JSON form written to the journal.
    pub fn to_value(&self) -> serde_json::Result<Value> {
        match self {
            SectionVal::Diff(v) => serde_json::to_value(v),
            SectionVal::Approvals(v) => serde_json::to_value(v),
            SectionVal::Ui(v) => serde_json::to_value(v),
            SectionVal::Context(v) => serde_json::to_value(v),
            SectionVal::Telemetry(v) => serde_json::to_value(v),
            SectionVal::Extra(v) => serde_json::to_value(v),
        }
    }
}

/// The full state at one point: written every so often so a resume reads only the journal
/// from here on. Chat and exec turns are the most recent window, with the absolute index of
/// the first.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Checkpoint {
    pub chat_base: u64,
    pub chat: Vec<Value>,
    pub exec_base: u64,
    pub exec: Vec<Value>,
    pub sections: BTreeMap<String, Value>,
    pub meta: SessionMeta,
    pub stats: SessionStats,
    pub created_utc: String,
    /// Absent from checkpoints written before it was recorded: then `Unknown`.
    #[serde(default = "FirstPrompt::unknown")]
    pub first_prompt: FirstPrompt,
}

/// Where the transcript's first user turn is, as far as the journal read so far tells:
/// what `session/list` shows for a session without a title. Kept through checkpoints, so
/// a reader that starts at the last checkpoint still knows it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "k", rename_all = "camelCase")]
pub enum FirstPrompt {
    /// The transcript has no user turn (a new session, or one read from its start).
    #[default]
    None,
    /// Chat turn `index` is the first user turn; `excerpt` is its text on one line, at
    /// most [`FIRST_PROMPT_CHARS`] characters, as stored (secrets already redacted).
    At { index: u64, excerpt: String },
    /// Not known: the state starts at a checkpoint that did not record it, and the turns
    /// before its window are not read.
    Unknown,
}

impl FirstPrompt {
    fn unknown() -> Self {
        FirstPrompt::Unknown
    }

    /// The excerpt, when a first user turn is known.
    pub fn excerpt(&self) -> Option<&str> {
        match self {
            FirstPrompt::At { excerpt, .. } => Some(excerpt),
            FirstPrompt::None | FirstPrompt::Unknown => None,
        }
    }

    /// After chat turns from absolute index `from` on were replaced by `turns`: a first
    /// user turn before `from` stays; otherwise it is the first user turn of `turns`, or
    /// none (everything before `from` had none). Unknown stays unknown unless `from` is 0.
    fn after_splice(&self, from: u64, turns: &[Value]) -> FirstPrompt {
        match self {
            FirstPrompt::At { index, .. } if *index < from => return self.clone(),
            FirstPrompt::Unknown if from > 0 => return FirstPrompt::Unknown,
            _ => {}
        }
        turns
            .iter()
            .enumerate()
            .find(|(_, t)| t.get("role").and_then(Value::as_str) == Some("user"))
            .map_or(FirstPrompt::None, |(k, t)| FirstPrompt::At {
                index: from + k as u64,
                excerpt: one_line(t.get("text").and_then(Value::as_str).unwrap_or_default()),
            })
    }
}

/// `text` on one line (whitespace runs as one space), cut to [`FIRST_PROMPT_CHARS`]
/// characters with an ellipsis.
fn one_line(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= FIRST_PROMPT_CHARS {
        return line;
    }
    let mut cut: String = line.chars().take(FIRST_PROMPT_CHARS - 1).collect();
    cut.push('…');
    cut
}

/// What one journal line records.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "camelCase")]
pub(crate) enum Body {
    /// Full state (the full snapshot of R-STORE-3's manifest approach).
    Checkpoint(Box<Checkpoint>),
    /// Chat turns from absolute index `from` on are replaced by `turns` (an append when
    /// `from` is the current count; a truncation when `turns` is empty).
    Chat { from: u64, turns: Vec<Value> },
    /// Exec turns from `from` on are replaced by `turns`.
    Exec { from: u64, turns: Vec<Value> },
    /// One whole section replaced.
    Section { name: String, value: Value },
    /// Session metadata replaced.
    Meta { meta: SessionMeta },
    /// Resume statistics replaced.
    Resume { stats: SessionStats },
}

/// A journal event: sequence number, time, body.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Event {
    pub seq: u64,
    pub utc: String,
    #[serde(flatten)]
    pub body: Body,
}

/// The session as the journal describes it, keeping only the last `window` turns of each
/// list in memory.
#[derive(Debug, Clone, Default)]
pub(crate) struct State {
    pub seq: u64,
    pub created_utc: String,
    pub updated_utc: String,
    pub chat_base: u64,
    /// The windowed chat turns, each with its long strings held by blob reference
    /// ([`Held`]): read them whole through [`crate::codec::Codec::resolve`].
    pub chat: Vec<Held>,
    /// The caller's form of each windowed chat turn, to tell whether the next snapshot
    /// changed it ([`Seen`]).
    pub chat_seen: Vec<Seen>,
    pub exec_base: u64,
    pub exec: Vec<Value>,
    pub exec_fp: Vec<Fp>,
    pub sections: BTreeMap<String, Value>,
    pub section_seen: BTreeMap<String, SectionVal>,
    pub meta: SessionMeta,
    pub stats: SessionStats,
    pub first_prompt: FirstPrompt,
}

/// What a body's turns looked like in the caller's form, when the writer knows it;
/// `Compute` derives it from the stored values.
pub(crate) enum Fps {
    /// Fingerprints (exec turns, sections).
    Known(Vec<Fp>),
    /// The caller's chat turns.
    Chat(Vec<ChatTurn>),
    /// The caller's section (boxed: it is much larger than the other variants).
    Section(Box<SectionVal>),
    Compute,
}

fn splice<L, T>(
    base: &mut u64,
    list: &mut Vec<L>,
    fps: &mut Vec<T>,
    from: u64,
    turns: Vec<L>,
    new_fps: Vec<T>,
    window: usize,
) {
    if from < *base {
        list.clear();
        fps.clear();
        *base = from;
    } else {
        let keep = ((from - *base) as usize).min(list.len());
        list.truncate(keep);
        fps.truncate(keep);
        // A gap (from beyond the end) cannot come from our writer; keep indices honest by
        // restarting the window at `from`.
        if *base + list.len() as u64 != from {
            list.clear();
            fps.clear();
            *base = from;
        }
    }
    list.extend(turns);
    fps.extend(new_fps);
    trim(base, list, fps, window);
}

fn trim<L, T>(base: &mut u64, list: &mut Vec<L>, fps: &mut Vec<T>, window: usize) {
    if list.len() > window {
        let drop = list.len() - window;
        list.drain(..drop);
        fps.drain(..drop.min(fps.len()));
        *base += drop as u64;
    }
}

/// What [`State::chat_seen`] holds of a chat turn: up to this many bytes of text (64 KiB),
/// the turn itself; past it, the turn's text length and fingerprint. The stored form of a
/// long turn ([`State::chat`]) holds its text by blob reference, not in memory (`held.rs`);
/// a copy here would hold it again: 50 sessions that each streamed a 60-second turn of 1,000
/// text chunks a second would keep 1.4 MB each (`benches/daemon.rs`, load; R-DAEMON-10),
/// as the two copies once did 2 × 1.4 MB. This length is the codec's default inline maximum
/// (`blob_inline_max_bytes`). Chat turns are a few KB as a rule, so nearly every turn is still compared by
/// equality (a memcmp, cheaper than hashing the window on every persist); a longer one is
/// hashed only when its text has the length remembered.
pub(crate) const SEEN_TEXT_BYTES: usize = 64 << 10;

/// The caller's form of one windowed chat turn, as [`State::chat_seen`] keeps it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Seen {
    /// Not known (a stored turn that does not parse as a chat turn): any turn differs.
    Unknown,
    /// A turn whose text is at most [`SEEN_TEXT_BYTES`]: compared by equality (boxed:
    /// a turn is much larger inline than a digest).
    Turn(Box<ChatTurn>),
    /// A longer turn: its text's length in bytes and the fingerprint of its serialization
    /// ([`fp_of`]).
    Digest { text_len: usize, fp: Fp },
}

impl Seen {
    /// What is kept of `turn`.
    pub fn of(turn: ChatTurn) -> Seen {
        if turn.text.len() <= SEEN_TEXT_BYTES {
            Seen::Turn(Box::new(turn))
        } else {
            Seen::Digest {
                text_len: turn.text.len(),
                fp: fp_of(&turn),
            }
        }
    }

    /// What is kept of a stored turn (its typed form, when it parses).
    pub fn of_stored(v: &Value) -> Seen {
        serde_json::from_value(v.clone()).map_or(Seen::Unknown, Seen::of)
    }

    /// Whether `turn` is the turn remembered.
    pub fn matches(&self, turn: &ChatTurn) -> bool {
        match self {
            Seen::Unknown => false,
            Seen::Turn(t) => **t == *turn,
            Seen::Digest { text_len, fp } => turn.text.len() == *text_len && fp_of(turn) == *fp,
        }
    }
}

impl State {
    pub fn chat_total(&self) -> u64 {
        self.chat_base + self.chat.len() as u64
    }

    pub fn exec_total(&self) -> u64 {
        self.exec_base + self.exec.len() as u64
    }

    /// The full state with the last `window` turns of each list, and the blobs its chat
    /// turns' long strings are held in (pointers within the checkpoint's journal event),
    /// for the codec to name as they are ([`crate::codec::Codec::encode`]).
    pub fn checkpoint(&self, window: usize) -> (Checkpoint, Vec<BlobRef>) {
        let cs = self.chat.len().saturating_sub(window);
        let es = self.exec.len().saturating_sub(window);
        let chat = &self.chat[cs..];
        let checkpoint = Checkpoint {
            chat_base: self.chat_base + cs as u64,
            chat: chat.iter().map(|t| t.value.clone()).collect(),
            exec_base: self.exec_base + es as u64,
            exec: self.exec[es..].to_vec(),
            sections: self.sections.clone(),
            meta: self.meta.clone(),
            stats: self.stats.clone(),
            created_utc: self.created_utc.clone(),
            first_prompt: self.first_prompt.clone(),
        };
        (checkpoint, refs_under("/chat", chat))
    }

    /// Folds one event in, holding every chat turn whole. `window` bounds the turns kept.
    #[cfg(test)]
    pub fn apply(&mut self, seq: u64, utc: &str, body: Body, fps: Fps, window: usize) {
        self.apply_held(seq, utc, body, fps, &[], window);
    }

    /// Folds one event in. `blobs` are the blobs the event's record names (pointers within
    /// the event, as the codec gives them): the chat turns' strings among them are held by
    /// reference ([`Held`]), not in memory. `window` bounds the turns kept.
    pub fn apply_held(
        &mut self,
        seq: u64,
        utc: &str,
        body: Body,
        fps: Fps,
        blobs: &[BlobRef],
        window: usize,
    ) {
        self.seq = seq;
        self.updated_utc = utc.to_owned();
        match body {
            Body::Checkpoint(c) => {
                let c = *c;
                self.created_utc = c.created_utc;
                self.chat_seen = c.chat.iter().map(Seen::of_stored).collect();
                self.exec_fp = c.exec.iter().map(fp_stored::<ExecTurn>).collect();
                self.chat_base = c.chat_base;
                // An older checkpoint whose window starts at the transcript's start still
                // tells where the first prompt is.
                let first_prompt = match c.first_prompt {
                    FirstPrompt::Unknown if c.chat_base == 0 => {
                        FirstPrompt::None.after_splice(0, &c.chat)
                    }
                    known => known,
                };
                self.chat = hold("/chat", c.chat, blobs);
                self.exec_base = c.exec_base;
                self.exec = c.exec;
                self.section_seen = c
                    .sections
                    .iter()
                    .filter_map(|(k, v)| Some((k.clone(), SectionVal::from_stored(k, v)?)))
                    .collect();
                self.sections = c.sections;
                self.meta = c.meta;
                self.stats = c.stats;
                self.first_prompt = first_prompt;
                // A checkpoint may carry a longer window than this reader keeps.
                trim(
                    &mut self.chat_base,
                    &mut self.chat,
                    &mut self.chat_seen,
                    window,
                );
                trim(
                    &mut self.exec_base,
                    &mut self.exec,
                    &mut self.exec_fp,
                    window,
                );
            }
            Body::Chat { from, turns } => {
                let seen = match fps {
                    Fps::Chat(t) if t.len() == turns.len() => t.into_iter().map(Seen::of).collect(),
                    _ => turns.iter().map(Seen::of_stored).collect(),
                };
                self.first_prompt = self.first_prompt.after_splice(from, &turns);
                splice(
                    &mut self.chat_base,
                    &mut self.chat,
                    &mut self.chat_seen,
                    from,
                    hold("/turns", turns, blobs),
                    seen,
                    window,
                );
            }
            Body::Exec { from, turns } => {
                let new_fps = match fps {
                    Fps::Known(f) if f.len() == turns.len() => f,
                    _ => turns.iter().map(fp_stored::<ExecTurn>).collect(),
                };
                splice(
                    &mut self.exec_base,
                    &mut self.exec,
                    &mut self.exec_fp,
                    from,
                    turns,
                    new_fps,
                    window,
                );
            }
            Body::Section { name, value } => {
                let seen = match fps {
                    Fps::Section(v) => Some(*v),
                    _ => SectionVal::from_stored(&name, &value),
                };
                match seen {
                    Some(v) => self.section_seen.insert(name.clone(), v),
                    None => self.section_seen.remove(&name),
                };
                self.sections.insert(name, value);
            }
            Body::Meta { meta } => self.meta = meta,
            Body::Resume { stats } => self.stats = stats,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn first_prompt_follows_every_kind_of_splice() {
        let user = |t: &str| json!({"role": "user", "text": t});
        let agent = json!({"role": "assistant", "text": "hi"});
        let at = |index: u64, excerpt: &str| FirstPrompt::At {
            index,
            excerpt: excerpt.into(),
        };
        // (before, from, turns, after)
        let cases: Vec<(FirstPrompt, u64, Vec<Value>, FirstPrompt)> = vec![
            // A first user turn arrives after a greeting.
            (
                FirstPrompt::None,
                0,
                vec![agent.clone(), user("a  b\nc")],
                at(1, "a b c"),
            ),
            // Appending after it changes nothing.
            (at(1, "a"), 5, vec![user("later")], at(1, "a")),
            // Replacing from its index on takes the replacement's first user turn.
            (at(1, "a"), 1, vec![agent.clone(), user("b")], at(2, "b")),
            // Truncating it away with nothing new: none.
            (at(3, "a"), 2, vec![], FirstPrompt::None),
            // No user turn yet and an append from the middle: none still (nothing before).
            (FirstPrompt::None, 4, vec![agent.clone()], FirstPrompt::None),
            (FirstPrompt::None, 4, vec![user("x")], at(4, "x")),
            // Unknown stays unknown unless the whole transcript is rewritten.
            (
                FirstPrompt::Unknown,
                7,
                vec![user("x")],
                FirstPrompt::Unknown,
            ),
            (FirstPrompt::Unknown, 0, vec![user("x")], at(0, "x")),
            (FirstPrompt::Unknown, 0, vec![], FirstPrompt::None),
        ];
        for (before, from, turns, after) in cases {
            assert_eq!(
                before.after_splice(from, &turns),
                after,
                "{before:?} then {from}: {turns:?}"
            );
        }
    }

    #[test]
    fn a_checkpoint_without_the_first_prompt_reads_as_unknown_unless_it_starts_at_zero() {
        let old = |chat_base: u64| {
            let mut v = serde_json::to_value(Checkpoint {
                chat_base,
                chat: vec![json!({"role": "user", "text": "q"})],
                ..Checkpoint::default()
            })
            .unwrap();
            v.as_object_mut().unwrap().remove("firstPrompt");
            serde_json::from_value::<Checkpoint>(v).unwrap()
        };
        for (base, want) in [
            (5, FirstPrompt::Unknown),
            (
                0,
                FirstPrompt::At {
                    index: 0,
                    excerpt: "q".into(),
                },
            ),
        ] {
            let mut s = State::default();
            s.apply(
                1,
                "t",
                Body::Checkpoint(Box::new(old(base))),
                Fps::Compute,
                10,
            );
            assert_eq!(s.first_prompt, want, "checkpoint at {base}");
        }
    }

    #[test]
    fn splice_appends_replaces_truncates_and_windows() {
        let mut s = State::default();
        let turns = |r: std::ops::Range<u64>| r.map(|i| json!(i)).collect::<Vec<_>>();
        s.apply(
            1,
            "t",
            Body::Chat {
                from: 0,
                turns: turns(0..5),
            },
            Fps::Compute,
            3,
        );
        assert_eq!(
            (
                s.chat_base,
                s.chat.iter().map(|t| t.value.clone()).collect::<Vec<_>>()
            ),
            (2, turns(2..5))
        );
        s.apply(
            2,
            "t",
            Body::Chat {
                from: 5,
                turns: turns(5..6),
            },
            Fps::Compute,
            3,
        );
        assert_eq!(
            (
                s.chat_base,
                s.chat.iter().map(|t| t.value.clone()).collect::<Vec<_>>()
            ),
            (3, turns(3..6))
        );
        s.apply(
            3,
            "t",
            Body::Chat {
                from: 4,
                turns: vec![],
            },
            Fps::Compute,
            3,
        );
        assert_eq!(
            (
                s.chat_base,
                s.chat.iter().map(|t| t.value.clone()).collect::<Vec<_>>(),
                s.chat_total()
            ),
            (3, turns(3..4), 4)
        );
        s.apply(
            4,
            "t",
            Body::Chat {
                from: 1,
                turns: turns(1..2),
            },
            Fps::Compute,
            3,
        );
        assert_eq!(
            (
                s.chat_base,
                s.chat.iter().map(|t| t.value.clone()).collect::<Vec<_>>(),
                s.chat_total()
            ),
            (1, turns(1..2), 2)
        );
        assert_eq!(s.chat_seen.len(), s.chat.len());
    }
}
