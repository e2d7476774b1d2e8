//! Windows: every folder the store creates has the owner-only DACL of the platform layer
//! (`tether_sys::create_private_dir`), read back (`tether_sys::check_private`); a root open
//! to others is refused naming it and the `icacls` that fixes it. The exact DACL read back
//! (one entry, the user's SID, nothing inherited) is checked in tether-sys's own tests;
//! under Wine, which reports a DACL made from the Unix mode, these check that nobody but
//! the user (and `LocalSystem`) is allowed. Unix: tests/privacy.rs.
#![cfg(windows)]

mod common;

use std::time::Instant;

use common::*;
use tether_store::*;

#[test]
fn every_folder_created_is_the_user_s_alone() {
    let tmp = Tmp::new();
    let ws = tmp.workspace();
    let store = open(&tmp.root());
    let mut snap = snapshot(1);
    snap.chat_turns.push(chat(1, &"z".repeat(100_000))); // makes a blob
    store
        .persist(
            &ws,
            "private",
            PersistTrigger::Shutdown,
            &snap,
            Instant::now(),
        )
        .unwrap();
    let mut folders = 0;
    let mut stack = vec![tmp.root()];
    while let Some(p) = stack.pop() {
        if std::fs::symlink_metadata(&p).unwrap().is_dir() {
            assert_eq!(
                tether_sys::check_private(&p).unwrap(),
                Ok(()),
                "{}: {:?}",
                p.display(),
                tether_sys::private::read_dacl(&p)
            );
            stack.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
            folders += 1;
        }
    }
    assert!(folders >= 5, "walked {folders} folders");
}

#[test]
fn a_root_open_to_others_is_refused() {
    let tmp = Tmp::new();
    let root = tmp.root();
    // Made by std: it inherits its parent's entries (Administrators on Windows; under
    // Wine, Everyone from the mode 0755).
    std::fs::create_dir(&root).unwrap();
    let err = Store::open(config(&root)).unwrap_err();
    assert_eq!(err.kind(), "notPrivate", "{err}");
    assert_eq!(err.path(), Some(root.as_path()), "{err}");
    assert!(err.to_string().contains("icacls"), "{err}");
}
