//! Whether the hub's saves of each session work, and what editors are told (R-STORE-15):
//! the first save of a session that fails (an editor's `session/persist`, a turn the hub
//! caches by itself while an agent streams, the session recorded as it opens or resumes)
//! publishes a `cannotSave` banner under the session; later failures say nothing more; the
//! next save of the session that works clears it. The decision is [`record`], pure: fed the
//! session's banner slot (its [`crate::sessions::SessionState::cannot_save`]) and the save's
//! outcome; publishing it is the caller's.

use tether_store::StoreError;

use super::Hub;
use super::events::Event;
use crate::protocol::{BannerKind, BannerParams};

impl Hub {
    /// Records how a save of `session_id` went and tells its editors when that changes
    /// what they should see ([`record`]).
    pub(super) async fn saved(
        &self,
        session_id: &str,
        outcome: std::result::Result<(), &StoreError>,
    ) {
        if let Err(err) = outcome {
            tracing::warn!(session = session_id, error = %err, disk_full = err.is_disk_full(), device_error = err.is_device_error(), "a save failed");
        }
        let event = self.sessions.with(session_id, |s| {
            record(&mut s.cannot_save, session_id, outcome)
        });
        if let Some(event) = event {
            self.emit(Some(session_id), event).await;
        }
    }
}

/// The banner id of session `session_id`'s save failures.
pub(super) fn banner_id(session_id: &str) -> String {
    format!("cannotSave:{session_id}")
}

/// Records how a save of `session_id` went in its banner slot `failing` (the banner up while
/// its saves fail); returns the event to publish under the session, if any: a banner on its
/// first failure, its clearing on the first save that works after failures.
pub(super) fn record(
    failing: &mut Option<BannerParams>,
    session_id: &str,
    outcome: std::result::Result<(), &StoreError>,
) -> Option<Event> {
    match outcome {
        Ok(()) => failing.take().map(|_| Event::BannerCleared {
            id: banner_id(session_id),
        }),
        Err(_) if failing.is_some() => None,
        Err(err) => {
            let banner = BannerParams {
                id: banner_id(session_id),
                session_id: Some(session_id.to_owned()),
                kind: BannerKind::CannotSave,
                message: message(err),
                dismissible: false,
            };
            *failing = Some(banner.clone());
            Some(Event::Banner(banner))
        }
    }
}

impl Hub {
    /// The `cannotSave` banner up for `session_id` (its last save failed), for an editor
    /// that attaches to it (R-STORE-15).
    #[must_use]
    pub fn cannot_save_banner(&self, session_id: &str) -> Option<BannerParams> {
        self.sessions.with(session_id, |s| s.cannot_save.clone())
    }
}

/// The banner's text: "Tether cannot save this session: the disk is full" (and where),
/// "…: the disk reports an I/O error" (with the error, which says where: a failing disk,
/// `EIO`),
/// or the error itself.
fn message(err: &StoreError) -> String {
    let kept = "What was saved before is kept; saving resumes by itself once it works again.";
    let at = err
        .path()
        .map(|p| format!(" ({})", p.display()))
        .unwrap_or_default();
    if err.is_disk_full() {
        format!("Tether cannot save this session: the disk is full{at}. {kept}")
    } else if err.is_device_error() {
        format!("Tether cannot save this session: the disk reports an I/O error ({err}). {kept}")
    } else {
        format!("Tether cannot save this session: {err}. {kept}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn io(kind: std::io::ErrorKind) -> StoreError {
        StoreError::Io {
            op: "write",
            path: "/cache/s/journal".into(),
            source: std::io::Error::from(kind),
        }
    }

    /// What editors are told over a run of saves of two sessions: one banner per session
    /// on its first failure, nothing on later ones, a clearing on the first success after.
    #[test]
    fn a_banner_once_per_failing_session_cleared_by_the_next_save_that_works() {
        use std::io::ErrorKind::{PermissionDenied, StorageFull};
        let mut slots: std::collections::HashMap<&str, Option<BannerParams>> =
            std::collections::HashMap::new();
        // (session, outcome: None = saved, Some(kind) = failed; what is published)
        let table: &[(&str, Option<std::io::ErrorKind>, &str)] = &[
            ("a", None, "nothing"),
            ("a", Some(StorageFull), "banner"),
            ("a", Some(StorageFull), "nothing"),
            ("b", Some(PermissionDenied), "banner"),
            ("a", Some(PermissionDenied), "nothing"),
            ("a", None, "cleared"),
            ("a", None, "nothing"),
            ("b", None, "cleared"),
            ("a", Some(StorageFull), "banner"),
        ];
        for (i, (session, outcome, want)) in table.iter().enumerate() {
            let err = outcome.map(io);
            let slot = slots.entry(session).or_default();
            let event = record(slot, session, err.as_ref().map_or(Ok(()), Err));
            let got = match &event {
                None => "nothing",
                Some(Event::Banner(b)) => {
                    assert_eq!(b.id, format!("cannotSave:{session}"));
                    assert_eq!(b.session_id.as_deref(), Some(*session));
                    assert_eq!(b.kind, BannerKind::CannotSave);
                    "banner"
                }
                Some(Event::BannerCleared { id }) => {
                    assert_eq!(id, &format!("cannotSave:{session}"));
                    "cleared"
                }
                Some(other) => panic!("row {i}: {other:?}"),
            };
            assert_eq!(got, *want, "row {i}: {session} {outcome:?}");
        }
    }

    #[test]
    fn the_message_says_the_disk_is_full_and_where_or_names_the_error() {
        let full = message(&io(std::io::ErrorKind::StorageFull));
        assert!(
            full.starts_with(
                "Tether cannot save this session: the disk is full (/cache/s/journal)."
            ),
            "{full}"
        );
        assert!(io(std::io::ErrorKind::QuotaExceeded).is_disk_full());
        let eio = StoreError::Io {
            op: "fsync",
            path: "/cache/s/journal".into(),
            source: tether_store::sys::device_error(),
        };
        let failing = message(&eio);
        assert!(
            failing.starts_with(
                "Tether cannot save this session: the disk reports an I/O error (fsync failed for /cache/s/journal: "
            ),
            "{failing}"
        );
        let other = message(&io(std::io::ErrorKind::PermissionDenied));
        assert!(!io(std::io::ErrorKind::PermissionDenied).is_disk_full());
        assert!(
            other.starts_with("Tether cannot save this session: ") && !other.contains("full"),
            "{other}"
        );
    }
}
