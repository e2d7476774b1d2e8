//! One writer per session (R-SYNC-7): the lease, as a pure decision. Fed what the remote
//! holds, who we are and the clock; returns what to do. I/O is in [`crate::engine`].
//!
//! * **Object storage** has compare-and-swap: the lease is one object, taken with a
//!   create-only put (`If-None-Match: *`) when there is none and replaced with a put
//!   conditional on the version read (`If-Match: <etag>`). Two machines racing for it: one
//!   put wins, the other gets a precondition failure and reads again. Each taking raises
//!   the **epoch**, and every segment carries its writer's epoch, so a machine that lost
//!   the lease while cut off is fenced: its later segments never continue the line
//!   ([`crate::merge`], rule 3).
//! * **A sync folder** has no compare-and-swap across machines: each machine writes its own
//!   `lease-<M>` file, and the lease in force is the unexpired one with the highest epoch
//!   (ties: the lower machine id). It is advisory: two machines that take it while apart
//!   both write, and the merge keeps both branches as a fork (R-SYNC-8).
//!
//! A lease lasts [`TTL_MS`] from its last renewal and is renewed when less than half is
//! left; a machine holding it renews on every push. Taking a lease another machine holds
//! and has not let expire is only done when the user asks ("Continue here").

use serde::{Deserialize, Serialize};

/// How long a lease lasts after its last renewal: 10 minutes, in milliseconds. Long
/// enough that a machine pushing a turn every few minutes keeps it, short enough that a
/// machine that went away (lid closed, network gone) frees its sessions within minutes.
pub const TTL_MS: i64 = 10 * 60 * 1000;

/// A lease record (sealed JSON in the lease object).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Lease {
    /// Holder's machine id.
    pub holder: String,
    /// Holder's name for people.
    pub holder_name: String,
    /// The fencing epoch: 1 for the first taking, one more at each taking after.
    pub epoch: u64,
    /// Unix time in milliseconds after which the lease is free.
    pub expires_ms: i64,
}

/// What the caller wants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Want {
    /// To write (push a turn): take the lease if it is free or ours.
    Write,
    /// The user chose "Continue here": take it even from a live holder.
    TakeOver,
}

/// The decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Ours and fresh: write under `epoch`.
    Hold {
        /// The epoch to write under.
        epoch: u64,
    },
    /// Write this record (create it when there is none, else replace the version read),
    /// then write under its epoch.
    Put(Lease),
    /// Another machine holds it: do not write; tell the user who and until when.
    HeldElsewhere(Lease),
}

/// Decides, given the lease in force (`current`; `None` when there is none), this machine's
/// id and name, the time `now_ms` (Unix milliseconds) and what is wanted.
pub fn decide(
    current: Option<&Lease>,
    me: &str,
    my_name: &str,
    now_ms: i64,
    want: Want,
) -> Decision {
    let fresh = |epoch| Lease {
        holder: me.to_owned(),
        holder_name: my_name.to_owned(),
        epoch,
        expires_ms: now_ms + TTL_MS,
    };
    match current {
        None => Decision::Put(fresh(1)),
        Some(l) if l.holder == me => {
            if l.expires_ms - now_ms > TTL_MS / 2 {
                Decision::Hold { epoch: l.epoch }
            } else if l.expires_ms > now_ms {
                // Renewal keeps the epoch: nobody else held it in between.
                Decision::Put(fresh(l.epoch))
            } else {
                // It lapsed: someone may have written under it meanwhile (a folder's
                // advisory lease), so ours is a new taking.
                Decision::Put(fresh(l.epoch + 1))
            }
        }
        Some(l) if l.expires_ms <= now_ms || want == Want::TakeOver => {
            Decision::Put(fresh(l.epoch + 1))
        }
        Some(l) => Decision::HeldElsewhere(l.clone()),
    }
}

/// The lease in force among a sync folder's per-machine lease files: the unexpired one
/// with the highest epoch (ties: the lower holder id); when all have expired, the one with
/// the highest epoch (its epoch still counts: the next taking must exceed it).
pub fn in_force(leases: &[Lease], now_ms: i64) -> Option<Lease> {
    let best = |it: &mut dyn Iterator<Item = &Lease>| {
        it.max_by(|a, b| a.epoch.cmp(&b.epoch).then_with(|| b.holder.cmp(&a.holder)))
            .cloned()
    };
    best(&mut leases.iter().filter(|l| l.expires_ms > now_ms)).or_else(|| {
        best(&mut leases.iter()).map(|mut l| {
            // Expired: report it as such, keeping its epoch.
            l.expires_ms = l.expires_ms.min(now_ms);
            l
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(holder: &str, epoch: u64, expires_ms: i64) -> Lease {
        Lease {
            holder: holder.into(),
            holder_name: format!("{holder}-name"),
            epoch,
            expires_ms,
        }
    }

    #[test]
    fn decisions() {
        let now = 1_000_000_000;
        let t = TTL_MS;
        let put = |epoch| Decision::Put(lease("me", epoch, now + t));
        let rows: Vec<(&str, Option<Lease>, Want, Decision)> = vec![
            ("none: take epoch 1", None, Want::Write, put(1)),
            (
                "ours, fresh: hold",
                Some(lease("me", 4, now + t)),
                Want::Write,
                Decision::Hold { epoch: 4 },
            ),
            (
                "ours, past half: renew, same epoch",
                Some(lease("me", 4, now + t / 2)),
                Want::Write,
                put(4),
            ),
            (
                "ours, lapsed: retake, next epoch",
                Some(lease("me", 4, now - 1)),
                Want::Write,
                put(5),
            ),
            (
                "theirs, live: held elsewhere",
                Some(lease("b", 7, now + 1)),
                Want::Write,
                Decision::HeldElsewhere(lease("b", 7, now + 1)),
            ),
            (
                "theirs, expired: take, next epoch",
                Some(lease("b", 7, now)),
                Want::Write,
                put(8),
            ),
            (
                "theirs, live, continue here: take over",
                Some(lease("b", 7, now + t)),
                Want::TakeOver,
                put(8),
            ),
            (
                "ours, take over: just hold",
                Some(lease("me", 2, now + t)),
                Want::TakeOver,
                Decision::Hold { epoch: 2 },
            ),
        ];
        for (name, cur, want, expect) in rows {
            assert_eq!(
                decide(cur.as_ref(), "me", "me-name", now, want),
                expect,
                "{name}"
            );
        }
    }

    #[test]
    fn the_folder_lease_in_force() {
        let now = 5_000;
        assert_eq!(in_force(&[], now), None);
        let live_a = lease("a", 3, now + 10);
        let live_b = lease("b", 3, now + 10);
        let dead_c = lease("c", 9, now - 10);
        // Unexpired beats a higher expired epoch; equal epochs: the lower id.
        assert_eq!(
            in_force(&[live_b.clone(), dead_c.clone(), live_a.clone()], now),
            Some(live_a)
        );
        assert_eq!(
            in_force(&[live_b.clone(), lease("z", 4, now + 1)], now)
                .unwrap()
                .holder,
            "z"
        );
        // All expired: the highest epoch, reported expired.
        let got = in_force(&[dead_c.clone(), lease("a", 2, now - 1)], now).unwrap();
        assert_eq!((got.holder.as_str(), got.epoch), ("c", 9));
        assert!(got.expires_ms <= now);
    }
}
