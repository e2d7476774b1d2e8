//! Turns held in memory by their blob references: a long string of a windowed chat turn
//! stays on disk, where the journal already keeps it (`codec.rs`: a string longer than
//! `blob_inline_max_bytes` is a content-addressed blob file, made durable before the record
//! that names it), and is read back only when the turn is wanted whole: a resume
//! ([`crate::Store::load`]), a history page served from memory ([`crate::Store::chat_page`]).
//! A checkpoint names the same blobs again without reading them.
//!
//! Why: a daemon holding 50 sessions that each streamed a 60-second turn of 1,000 text
//! chunks a second kept each turn's 1.4 MB of text in the store's window, 69 MB in all, beside
//! the hub's own kept events (`benches/daemon.rs`, load; R-DAEMON-10). The store's memory per
//! session is now bounded by the window's turn count and `blob_inline_max_bytes` (64 KiB per
//! string), not by how long a turn is.

use serde_json::Value;

/// A string of a stored value that is held on disk as a blob, not in memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BlobRef {
    /// Where the string is, as a JSON pointer (RFC 6901): within the journal event when it
    /// comes from or goes to the codec, within the turn when a [`Held`] keeps it.
    pub pointer: String,
    /// The blob file's name (the SHA-256 of its content, keyed for encrypted sessions).
    pub name: String,
    /// The blob file's size in bytes (sealed, for encrypted sessions), as the journal
    /// records it.
    pub bytes: u64,
}

/// A windowed chat turn as [`crate::state::State::chat`] keeps it: its stored value, except
/// that each string named in `blobs` is empty here and read back from its blob file when
/// the turn is wanted whole ([`crate::codec::Codec::resolve`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Held {
    pub value: Value,
    pub blobs: Vec<BlobRef>,
}

impl Held {
    /// A turn held whole (nothing of it in a blob, or its blobs not known).
    pub fn whole(value: Value) -> Held {
        Held {
            value,
            blobs: Vec::new(),
        }
    }

    /// `value` with the strings at `blobs`' pointers (within `value`) taken out. A pointer
    /// that does not name a string of `value` is not kept: that string stays in memory.
    pub fn new(mut value: Value, blobs: Vec<BlobRef>) -> Held {
        let blobs = blobs
            .into_iter()
            .filter(|b| match value.pointer_mut(&b.pointer) {
                Some(Value::String(s)) => {
                    *s = String::new();
                    true
                }
                _ => false,
            })
            .collect();
        Held { value, blobs }
    }

    /// The turn's `id`, when it has one.
    pub fn id(&self) -> Option<&str> {
        self.value.get("id").and_then(Value::as_str)
    }
}

/// `values` (the items of the array at `prefix`, e.g. `/turns`, of a journal event) held by
/// the blob references among `refs` that point into them; references elsewhere in the
/// event (a section's long string) are not for these items and are left out.
pub(crate) fn hold(prefix: &str, values: Vec<Value>, refs: &[BlobRef]) -> Vec<Held> {
    let mut per: Vec<Vec<BlobRef>> = vec![Vec::new(); values.len()];
    for r in refs {
        let Some(rest) = r
            .pointer
            .strip_prefix(prefix)
            .and_then(|p| p.strip_prefix('/'))
        else {
            continue;
        };
        let (index, inner) = rest.split_once('/').unwrap_or((rest, ""));
        if let (Ok(i), false) = (index.parse::<usize>(), inner.is_empty())
            && let Some(list) = per.get_mut(i)
        {
            list.push(BlobRef {
                pointer: format!("/{inner}"),
                ..r.clone()
            });
        }
    }
    values
        .into_iter()
        .zip(per)
        .map(|(v, b)| Held::new(v, b))
        .collect()
}

/// The blob references of `turns` as they will be within a journal event that lists them
/// under `prefix` (e.g. `/chat` in a checkpoint), for the codec to write as they are.
pub(crate) fn refs_under(prefix: &str, turns: &[Held]) -> Vec<BlobRef> {
    turns
        .iter()
        .enumerate()
        .flat_map(|(i, t)| {
            t.blobs.iter().map(move |b| BlobRef {
                pointer: format!("{prefix}/{i}{}", b.pointer),
                ..b.clone()
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn r(pointer: &str, name: &str) -> BlobRef {
        BlobRef {
            pointer: pointer.into(),
            name: name.into(),
            bytes: 9,
        }
    }

    #[test]
    fn refs_go_to_their_turn_and_back_to_the_event() {
        let turns = vec![
            json!({"id": "a", "text": "short"}),
            json!({"id": "b", "text": "long one", "extra": {"x/y": "long two"}}),
        ];
        let refs = [
            r("/turns/1/text", "n1"),
            r("/turns/1/extra/x~1y", "n2"),
            // Not under `/turns`: a section's blob.
            r("/value/doc", "n3"),
            // Past the list, or the whole item: not a string of a turn.
            r("/turns/7/text", "n4"),
            r("/turns/0", "n5"),
        ];
        let held = hold("/turns", turns, &refs);
        assert_eq!(held[0], Held::whole(json!({"id": "a", "text": "short"})));
        assert_eq!(
            held[1].value,
            json!({"id": "b", "text": "", "extra": {"x/y": ""}})
        );
        assert_eq!(held[1].id(), Some("b"));
        assert_eq!(
            held[1].blobs,
            vec![r("/text", "n1"), r("/extra/x~1y", "n2")]
        );
        assert_eq!(
            refs_under("/chat", &held),
            vec![r("/chat/1/text", "n1"), r("/chat/1/extra/x~1y", "n2")]
        );
    }

    #[test]
    fn a_pointer_that_names_no_string_keeps_the_value_whole() {
        let held = Held::new(json!({"text": 5}), vec![r("/text", "n"), r("/none", "m")]);
        assert_eq!(held, Held::whole(json!({"text": 5})));
    }
}
