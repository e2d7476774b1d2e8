//! Merging every machine's segments of one session into its history (R-SYNC-4, R-SYNC-8).
//! Pure: fed segment headers, returns the main line, the forks and what waits.
//!
//! Segments form a tree by their `parent` links. The rules:
//!
//! 1. A segment whose parent is not (yet) here **waits**, with everything under it: a sync
//!    engine delivers objects in any order, and a session is never shown with a hole.
//! 2. At every segment, its children are ordered by **epoch, highest first** (the lease
//!    holder's writes win: fencing, R-SYNC-7), then by time, then by machine id. The first
//!    continues the line; each other child starts a **fork**.
//! 3. A child with a **lower epoch than its parent** was written by a machine that had
//!    lost the lease: it never continues a line, it is always a fork.
//! 4. Several first segments (no parent) are ordered the same way: the first is the root.
//!
//! A fork keeps its whole branch (following rule 2 inside it; forks of forks are listed
//! too): both sides are kept, named by machine and time, and nothing is interleaved.

use std::collections::{BTreeMap, BTreeSet};

use crate::segment::SegmentId;

/// What the merge needs of a segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// The segment.
    pub id: SegmentId,
    /// What it continues.
    pub parent: Option<SegmentId>,
    /// Its writer's lease epoch.
    pub epoch: u64,
    /// Its RFC 3339 UTC push time (compared as text: the format is fixed-width UTC).
    pub at: String,
}

/// A branch that left the main line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fork {
    /// The segment both sides continue (`None`: they share no segment).
    pub from: Option<SegmentId>,
    /// The branch, oldest first.
    pub line: Vec<SegmentId>,
}

/// The session's history.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct History {
    /// The main line, oldest first.
    pub main: Vec<SegmentId>,
    /// Branches off it (or off other forks), in the order met.
    pub forks: Vec<Fork>,
    /// Segments waiting for a parent that has not arrived.
    pub waiting: Vec<SegmentId>,
}

/// Merges `headers` (any order; duplicates by id are ignored).
pub fn merge(headers: &[Header]) -> History {
    let by_id: BTreeMap<&SegmentId, &Header> = headers.iter().map(|h| (&h.id, h)).collect();
    let mut children: BTreeMap<Option<&SegmentId>, Vec<&Header>> = BTreeMap::new();
    let mut waiting = BTreeSet::new();
    for h in by_id.values() {
        match &h.parent {
            Some(p) if !by_id.contains_key(p) => {
                waiting.insert(h.id.clone());
            }
            p => children.entry(p.as_ref()).or_default().push(h),
        }
    }
    for list in children.values_mut() {
        list.sort_by(|a, b| {
            b.epoch
                .cmp(&a.epoch)
                .then_with(|| a.at.cmp(&b.at))
                .then_with(|| a.id.cmp(&b.id))
        });
    }
    let mut history = History::default();
    // Everything under a waiting segment waits too.
    let mut stack: Vec<SegmentId> = waiting.iter().cloned().collect();
    while let Some(id) = stack.pop() {
        for c in children.get(&Some(&id)).into_iter().flatten() {
            if waiting.insert(c.id.clone()) {
                stack.push(c.id.clone());
            }
        }
    }
    history.waiting = waiting.into_iter().collect();

    // Lines to walk: (where it forked from, first segment). The main line first.
    let mut pending: Vec<(Option<SegmentId>, &Header, bool)> = Vec::new();
    let roots = children.get(&None).cloned().unwrap_or_default();
    for (i, r) in roots.iter().enumerate().rev() {
        pending.push((None, r, i == 0));
    }
    while let Some((from, first, is_main)) = pending.pop() {
        let mut line = vec![first.id.clone()];
        let mut at = first;
        let mut forks_here = Vec::new();
        loop {
            let kids = children.get(&Some(&at.id)).cloned().unwrap_or_default();
            let (cont, rest): (Vec<&Header>, Vec<&Header>) = {
                let mut cont = None;
                let mut rest = Vec::new();
                for k in kids {
                    if cont.is_none() && k.epoch >= at.epoch {
                        cont = Some(k);
                    } else {
                        rest.push(k);
                    }
                }
                (cont.into_iter().collect(), rest)
            };
            for r in rest {
                forks_here.push((Some(at.id.clone()), r));
            }
            match cont.first() {
                Some(next) => {
                    line.push(next.id.clone());
                    at = next;
                }
                None => break,
            }
        }
        if is_main {
            history.main = line;
        } else {
            history.forks.push(Fork { from, line });
        }
        for (f, h) in forks_here.into_iter().rev() {
            pending.push((f, h, false));
        }
    }
    history
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(m: &str, seq: u64) -> SegmentId {
        SegmentId {
            machine: m.to_owned(),
            seq,
        }
    }

    /// `"a1<-"` is a root, `"b1<a2"` continues a2; `@e` sets the epoch, `#t` the time.
    fn h(spec: &str) -> Header {
        let (main, time) = spec.split_once('#').unwrap_or((spec, "0"));
        let (main, epoch) = main.split_once('@').unwrap_or((main, "0"));
        let (me, parent) = main.split_once('<').unwrap();
        let parse = |s: &str| id(&s[..1], s[1..].parse().unwrap());
        Header {
            id: parse(me),
            parent: (!parent.is_empty() && parent != "-").then(|| parse(parent)),
            epoch: epoch.parse().unwrap(),
            at: format!("2026-11-28T00:00:{:0>2}Z", time),
        }
    }

    fn ids(list: &[&str]) -> Vec<SegmentId> {
        list.iter()
            .map(|s| id(&s[..1], s[1..].parse().unwrap()))
            .collect()
    }

    #[test]
    fn table() {
        struct Case {
            name: &'static str,
            segs: &'static [&'static str],
            main: &'static [&'static str],
            forks: &'static [(Option<&'static str>, &'static [&'static str])],
            waiting: &'static [&'static str],
        }
        let cases = [
            Case {
                name: "empty",
                segs: &[],
                main: &[],
                forks: &[],
                waiting: &[],
            },
            Case {
                name: "one machine, a chain",
                segs: &["a1<-", "a2<a1", "a3<a2"],
                main: &["a1", "a2", "a3"],
                forks: &[],
                waiting: &[],
            },
            Case {
                name: "order of arrival does not matter",
                segs: &["a3<a2", "a1<-", "a2<a1"],
                main: &["a1", "a2", "a3"],
                forks: &[],
                waiting: &[],
            },
            Case {
                name: "handed over to b and back",
                segs: &["a1<-@1", "a2<a1@1", "b1<a2@2", "b2<b1@2", "a3<b2@3"],
                main: &["a1", "a2", "b1", "b2", "a3"],
                forks: &[],
                waiting: &[],
            },
            Case {
                name: "parent not here yet: waits with its children",
                segs: &["a1<-", "b1<a2", "b2<b1"],
                main: &["a1"],
                forks: &[],
                waiting: &["b1", "b2"],
            },
            Case {
                name: "both wrote offline (same epoch): earlier is main, other a fork",
                segs: &["a1<-@1", "a2<a1@1#5", "b1<a1@1#3", "b2<b1@1#9"],
                main: &["a1", "b1", "b2"],
                forks: &[(Some("a1"), &["a2"])],
                waiting: &[],
            },
            Case {
                name: "fenced: the lease holder's higher epoch wins",
                segs: &["a1<-@1", "a2<a1@1#1", "b1<a1@2#7"],
                main: &["a1", "b1"],
                forks: &[(Some("a1"), &["a2"])],
                waiting: &[],
            },
            Case {
                name: "a stale writer continuing after losing the lease is a fork",
                segs: &["a1<-@1", "b1<a1@2", "a2<b1@1"],
                main: &["a1", "b1"],
                forks: &[(Some("b1"), &["a2"])],
                waiting: &[],
            },
            Case {
                name: "fork of a fork",
                segs: &["a1<-", "a2<a1#1", "b1<a1#2", "b2<b1#3", "c1<b1#4"],
                main: &["a1", "a2"],
                forks: &[(Some("a1"), &["b1", "b2"]), (Some("b1"), &["c1"])],
                waiting: &[],
            },
            Case {
                name: "two first segments",
                segs: &["a1<-#1", "b1<-#2", "b2<b1#3"],
                main: &["a1"],
                forks: &[(None, &["b1", "b2"])],
                waiting: &[],
            },
            Case {
                name: "duplicates are one",
                segs: &["a1<-", "a1<-", "a2<a1"],
                main: &["a1", "a2"],
                forks: &[],
                waiting: &[],
            },
        ];
        for c in cases {
            let headers: Vec<Header> = c.segs.iter().map(|s| h(s)).collect();
            let got = merge(&headers);
            assert_eq!(got.main, ids(c.main), "{}: main", c.name);
            let forks: Vec<Fork> = c
                .forks
                .iter()
                .map(|(from, line)| Fork {
                    from: from.map(|f| ids(&[f])[0].clone()),
                    line: ids(line),
                })
                .collect();
            assert_eq!(got.forks, forks, "{}: forks", c.name);
            assert_eq!(got.waiting, ids(c.waiting), "{}: waiting", c.name);
        }
    }
}
