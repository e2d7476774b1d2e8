//! What the readers' test files share: where the fixtures are, and a transcript's chat turns
//! in the shape the tests compare (`role: text`).

// Each test file uses a part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use tether_history::Transcript;
use tether_store::model::ChatRole;

/// `tests/fixtures`: the files the real agents wrote (see its README).
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// `role: text` per chat turn, oldest first.
pub fn turns(t: &Transcript) -> Vec<String> {
    t.snapshot
        .chat_turns
        .iter()
        .map(|c| {
            let role = match c.role {
                ChatRole::User => "user",
                ChatRole::Assistant => "assistant",
                ChatRole::Status => "status",
            };
            format!("{role}: {}", c.text)
        })
        .collect()
}
