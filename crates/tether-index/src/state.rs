//! The incremental scan's bookkeeping (R-INDEX-2): what was seen of a session file when it
//! was last indexed ([`Seen`]), what it is now ([`Now`]), and what to read of it
//! ([`plan`]). Pure: the scan (`lib.rs`) stats the files and applies the plan.

/// How an agent writes its session files, which decides how a change is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Growth {
    /// Append-only JSON Lines (Claude Code, Codex, Copilot CLI): a longer file is read
    /// from the offset reached last time.
    Appended,
    /// Rewritten or updated in place (Gemini CLI, whose records update earlier ones;
    /// opencode's database rows; Tether's cache): a change re-reads the one session.
    Rewritten,
}

/// A file as last indexed: its size in bytes, its mtime in nanoseconds since the epoch
/// (for an opencode session or a cached one, its update time in milliseconds), and the
/// offset up to which it was read (just past the last whole line).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seen {
    /// Size in bytes when indexed.
    pub size: u64,
    /// Modification stamp when indexed.
    pub mtime: i64,
    /// Bytes read: the offset just past the last whole line indexed.
    pub offset: u64,
}

/// A file as it is now: size in bytes and modification stamp (as in [`Seen`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Now {
    /// Size in bytes.
    pub size: u64,
    /// Modification stamp.
    pub mtime: i64,
}

/// What to read of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plan {
    /// Nothing: unchanged since it was indexed.
    Skip,
    /// The bytes from this offset on (the file grew; what was indexed stays).
    From(u64),
    /// The whole session again, its old entry replaced (new, shrunk, or rewritten).
    Whole,
}

/// What to read of a file last seen as `seen` (`None`: never indexed) and now `now`
/// (R-INDEX-2): nothing when size and mtime are unchanged; for an [`Growth::Appended`] file
/// that grew (or whose torn last line was completed), the bytes from the offset reached;
/// otherwise the whole session, replacing its entry (a shorter file was truncated or
/// rewritten; a file of the same size with a new mtime was rewritten in place).
#[must_use]
pub fn plan(growth: Growth, seen: Option<Seen>, now: Now) -> Plan {
    let Some(seen) = seen else {
        return Plan::Whole;
    };
    if seen.size == now.size && seen.mtime == now.mtime {
        return Plan::Skip;
    }
    match growth {
        Growth::Appended if now.size > seen.size && seen.offset <= seen.size => {
            Plan::From(seen.offset)
        }
        _ => Plan::Whole,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_change_is_read_as_little_as_it_can_be() {
        let seen = Seen {
            size: 100,
            mtime: 5,
            offset: 90,
        };
        let now = |size, mtime| Now { size, mtime };
        let cases = [
            (Growth::Appended, None, now(100, 5), Plan::Whole, "new"),
            (
                Growth::Appended,
                Some(seen),
                now(100, 5),
                Plan::Skip,
                "same",
            ),
            (
                Growth::Appended,
                Some(seen),
                now(150, 6),
                Plan::From(90),
                "grew",
            ),
            (
                Growth::Appended,
                Some(seen),
                now(100, 6),
                Plan::Whole,
                "touched",
            ),
            (
                Growth::Appended,
                Some(seen),
                now(40, 6),
                Plan::Whole,
                "shrunk",
            ),
            (
                Growth::Rewritten,
                Some(seen),
                now(150, 6),
                Plan::Whole,
                "doc grew",
            ),
            (
                Growth::Rewritten,
                Some(seen),
                now(100, 5),
                Plan::Skip,
                "doc same",
            ),
            (Growth::Rewritten, None, now(1, 1), Plan::Whole, "doc new"),
        ];
        for (growth, seen, now, want, name) in cases {
            assert_eq!(plan(growth, seen, now), want, "{name}");
        }
    }
}
