//! The atomic replace: `MoveFileExW` with `MOVEFILE_REPLACE_EXISTING` and
//! `MOVEFILE_WRITE_THROUGH` (the rename reaches the disk before the call returns: Windows has
//! no directory sync to make it durable later), retried while another process holds the
//! target.
//!
//! An antivirus scanner, the search indexer or an editor that opens a file without
//! `FILE_SHARE_DELETE` makes a rename over it fail with `ERROR_SHARING_VIOLATION` or
//! `ERROR_ACCESS_DENIED` until it closes its handle, usually within moments. Those two
//! errors are retried with the bounded exponential backoff of [`crate::backoff`]
//! ([`Backoff::REPLACE`]: 2 s in all, after Go's `cmd/go/internal/robustio`); then the
//! replace fails with an error naming the file and the holder. Every other error fails at
//! once. `ERROR_ACCESS_DENIED` also means a target that is read-only or a folder; those are
//! retried too, as Go does, and fail after the budget with the same error.

use std::io;
use std::os::windows::ffi::OsStrExt;
use std::path::Path;

use windows_sys::Win32::Foundation::{ERROR_ACCESS_DENIED, ERROR_SHARING_VIOLATION};
use windows_sys::Win32::Storage::FileSystem::{
    MOVEFILE_REPLACE_EXISTING, MOVEFILE_WRITE_THROUGH, MoveFileExW,
};

use crate::backoff::{Backoff, Failure, Retrying, retry};

/// Whether `error` is one another process's open handle on the target causes:
/// `ERROR_SHARING_VIOLATION` (32) or `ERROR_ACCESS_DENIED` (5).
#[must_use]
pub fn is_held(error: &io::Error) -> bool {
    error
        .raw_os_error()
        .is_some_and(|c| c == ERROR_SHARING_VIOLATION as i32 || c == ERROR_ACCESS_DENIED as i32)
}

/// One `MoveFileExW(from, to, MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH)`.
fn move_once(from: &[u16], to: &[u16]) -> io::Result<()> {
    // SAFETY: both are NUL-terminated wide strings that outlive the call.
    if unsafe {
        MoveFileExW(
            from.as_ptr(),
            to.as_ptr(),
            MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH,
        )
    } == 0
    {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Renames `from` to `to`, replacing `to` if it exists, retrying while another process
/// holds `to` (or `from`) open ([`Backoff::REPLACE`]); each retry is logged at debug level.
///
/// # Errors
/// An error other than a sharing violation or a denied access, at once; after the budget,
/// an error of the last one's kind naming `to`, the holder problem and the time waited.
pub fn replace(from: &Path, to: &Path) -> io::Result<()> {
    replace_observed(from, to, &Backoff::REPLACE, |r| {
        tracing::debug!(
            to = %to.display(),
            failures = r.failures,
            delay_ms = r.delay.as_millis(),
            "replace blocked by another process's handle ({}); trying again",
            r.error
        );
    })
}

/// [`replace`] with its schedule and an observer of each retry (the tests wait on it).
///
/// # Errors
/// As [`replace`].
pub fn replace_observed(
    from: &Path,
    to: &Path,
    policy: &Backoff,
    observe: impl FnMut(&Retrying<'_>),
) -> io::Result<()> {
    let wide = |p: &Path| -> Vec<u16> { p.as_os_str().encode_wide().chain(Some(0)).collect() };
    let (wide_from, wide_to) = (wide(from), wide(to));
    match retry(policy, || move_once(&wide_from, &wide_to), is_held, observe) {
        Ok(()) => Ok(()),
        Err(Failure::Other(e)) => Err(e),
        Err(Failure::Held {
            last,
            attempts,
            waited,
        }) => {
            tracing::warn!(
                to = %to.display(),
                attempts,
                waited_ms = waited.as_millis(),
                "replace gave up: the file stayed held by another process ({last})"
            );
            Err(io::Error::new(
                last.kind(),
                format!(
                    "cannot replace {} with {}: another process (an antivirus scanner, the \
                     search indexer, an editor) kept it open without sharing it for deletion \
                     through {attempts} attempts over {:.1} s ({last})",
                    to.display(),
                    from.display(),
                    waited.as_secs_f64()
                ),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::windows::fs::OpenOptionsExt;
    use std::sync::mpsc;
    use windows_sys::Win32::Foundation::{ERROR_FILE_NOT_FOUND, ERROR_PATH_NOT_FOUND};
    use windows_sys::Win32::Storage::FileSystem::{FILE_SHARE_READ, FILE_SHARE_WRITE};

    #[test]
    fn only_a_holder_s_errors_are_retried() {
        let table = [
            (ERROR_SHARING_VIOLATION, true),
            (ERROR_ACCESS_DENIED, true),
            (ERROR_FILE_NOT_FOUND, false),
            (ERROR_PATH_NOT_FOUND, false),
        ];
        for (code, held) in table {
            assert_eq!(
                is_held(&io::Error::from_raw_os_error(code as i32)),
                held,
                "{code}"
            );
        }
        assert!(!is_held(&io::Error::other("no OS code")));
    }

    /// `to` opened as a scanner opens it: reading, shared for reading and writing, not for
    /// deletion.
    fn hold(to: &Path) -> std::fs::File {
        std::fs::OpenOptions::new()
            .read(true)
            .share_mode(FILE_SHARE_READ | FILE_SHARE_WRITE)
            .open(to)
            .unwrap()
    }

    fn files(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
        let (from, to) = (dir.join("manifest.tmp"), dir.join("manifest.json"));
        std::fs::write(&from, b"new").unwrap();
        std::fs::write(&to, b"old").unwrap();
        (from, to)
    }

    #[test]
    fn a_free_target_is_replaced_at_once() {
        let tmp = tempfile::tempdir().unwrap();
        let (from, to) = files(tmp.path());
        replace_observed(&from, &to, &Backoff::REPLACE, |r| panic!("retried: {r:?}")).unwrap();
        assert_eq!(std::fs::read(&to).unwrap(), b"new");
        assert!(!from.exists());
    }

    /// The target is held; the replace, on another thread, fails, tells of its first retry,
    /// the holder lets go then, and a later attempt replaces the file.
    #[test]
    fn a_target_released_during_the_retries_is_replaced() {
        let tmp = tempfile::tempdir().unwrap();
        let (from, to) = files(tmp.path());
        let holder = hold(&to);
        let (tx, rx) = mpsc::channel();
        let replacer = {
            let (from, to) = (from.clone(), to.clone());
            std::thread::spawn(move || {
                replace_observed(&from, &to, &Backoff::REPLACE, |r| {
                    let _ = tx.send((r.failures, r.error.raw_os_error()));
                })
            })
        };
        let (failures, code) = rx.recv().expect("a first retry while the target is held");
        eprintln!("the held target's error: {code:?}");
        assert_eq!(failures, 1);
        assert!(
            code == Some(ERROR_SHARING_VIOLATION as i32)
                || code == Some(ERROR_ACCESS_DENIED as i32),
            "{code:?}"
        );
        drop(holder);
        replacer
            .join()
            .unwrap()
            .expect("replaced once the holder let go");
        assert_eq!(std::fs::read(&to).unwrap(), b"new");
        assert!(!from.exists());
    }

    /// The target is held through the whole budget: the replace fails naming the file and
    /// the holder, and both files are as they were.
    #[test]
    fn a_target_held_past_the_budget_fails_with_a_clear_error() {
        let tmp = tempfile::tempdir().unwrap();
        let (from, to) = files(tmp.path());
        let holder = hold(&to);
        let mut retries = 0;
        let err = replace_observed(&from, &to, &Backoff::REPLACE, |_| retries += 1).unwrap_err();
        drop(holder);
        let text = err.to_string();
        assert!(text.contains(&to.display().to_string()), "{text}");
        assert!(text.contains("another process"), "{text}");
        assert!(text.contains("without sharing it for deletion"), "{text}");
        assert!(
            retries >= 5,
            "{retries} retries in {:?}",
            Backoff::REPLACE.budget
        );
        assert_eq!(std::fs::read(&to).unwrap(), b"old");
        assert_eq!(std::fs::read(&from).unwrap(), b"new");
    }

    #[test]
    fn another_error_fails_at_once() {
        let tmp = tempfile::tempdir().unwrap();
        let err = replace_observed(
            &tmp.path().join("missing"),
            &tmp.path().join("to"),
            &Backoff::REPLACE,
            |r| panic!("retried: {r:?}"),
        )
        .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound, "{err}");
    }
}
