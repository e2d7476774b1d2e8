//! Claude Code's own session file, carried between machines (R-SYNC-9): what `tether-sync`
//! needs to send the lines a machine's file gained and to write another machine's lines where
//! Claude Code looks for them here.
//!
//! Claude Code appends one JSON record per line to `<config>/projects/<project folder of the
//! cwd>/<session id>.jsonl` and never rewrites a line, so another machine's file is rebuilt by
//! appending the lines it gained, each with its `cwd` moved from the writer's folder to this
//! machine's (the same rewrite as [`crate::rehome_claude_session`]: only the top-level `cwd`
//! value, checked by parsing each rewritten line back). Then `session/load` of the session id
//! finds it here, and the agent continues its own conversation.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::claude::ClaudeStore;
use crate::claude_rehome::{
    Line, RehomeError, create_private_dirs, cwd_text, io, rehome_line, target_dir, trim_separators,
    windows_spelling,
};
use crate::store::validate_id;

/// The file of Claude Code session `session_id` recorded in working directory `cwd`, when
/// it exists.
#[must_use]
pub fn session_file(store: &ClaudeStore, session_id: &str, cwd: &Path) -> Option<PathBuf> {
    validate_id(session_id).ok()?;
    let name = format!("{session_id}.jsonl");
    store
        .project_dirs(cwd)
        .into_iter()
        .map(|d| d.join(&name))
        .find(|p| p.is_file())
}

/// Writes `lines` (whole JSONL lines of Claude Code session `session_id`, recorded in
/// `old_cwd` on another machine) to this machine's file of it for `new_cwd`, each line's
/// `cwd` moved under `new_cwd`; appended, or replacing the file when `replace` (the first
/// lines of the file). The file and its folders are created owner-only; the file is
/// `fsync`ed. Returns the file's path.
///
/// # Errors
/// [`RehomeError::InvalidId`], [`RehomeError::InvalidPath`]; [`RehomeError::Unrewritable`]
/// (nothing written); [`RehomeError::Io`].
pub fn write_moved_lines(
    store: &ClaudeStore,
    session_id: &str,
    old_cwd: &Path,
    new_cwd: &Path,
    lines: &[u8],
    replace: bool,
) -> Result<PathBuf, RehomeError> {
    validate_id(session_id)
        .map_err(|_| RehomeError::InvalidId(session_id.chars().take(140).collect()))?;
    let (old, new) = (recorded_cwd(old_cwd)?, cwd_text(new_cwd)?);
    let dir = target_dir(store, new);
    let path = dir.join(format!("{session_id}.jsonl"));
    let mut out = Vec::with_capacity(lines.len() + lines.len() / 8);
    for (n, line) in lines.split_inclusive(|b| *b == b'\n').enumerate() {
        let body = line.strip_suffix(b"\n").unwrap_or(line);
        match rehome_line(body, old, new) {
            Line::Rewritten(text) => out.extend_from_slice(&text),
            Line::Kept | Line::NotJson => out.extend_from_slice(body),
            Line::Unrewritable => {
                return Err(RehomeError::Unrewritable {
                    path: path.clone(),
                    line: n as u64 + 1,
                });
            }
        }
        out.push(b'\n');
    }
    create_private_dirs(&dir)?;
    let mut options = tether_store::sys::private_options();
    options.create(true);
    if replace {
        options.write(true).truncate(true);
    } else {
        options.append(true);
    }
    let mut file = options.open(&path).map_err(io(&path))?;
    file.write_all(&out).map_err(io(&path))?;
    file.sync_all().map_err(io(&path))?;
    tether_store::sys::sync_dir(&dir).map_err(io(&dir))?;
    Ok(path)
}

/// The working directory another machine recorded, as text: absolute by the rule of the
/// system that wrote it (a Linux `/home/…` read on Windows, a `C:\…` read on Linux:
/// `tether_store::roots`), UTF-8, not a root; without a trailing separator.
fn recorded_cwd(path: &Path) -> Result<&str, RehomeError> {
    let bad = |reason| RehomeError::InvalidPath {
        path: path.to_owned(),
        reason,
    };
    let text = path.to_str().ok_or_else(|| bad("not UTF-8"))?;
    if !tether_store::roots::is_absolute_root(text) {
        return Err(bad("not an absolute path"));
    }
    let windows = windows_spelling(text);
    let trimmed = trim_separators(text, windows);
    let body = trimmed.trim_end_matches(['/', '\\']);
    if body.is_empty() || (windows && body.len() <= 2) {
        return Err(bad("a file system root"));
    }
    Ok(trimmed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_move_to_this_machines_folder_and_are_appended() {
        let home = tempfile::tempdir().unwrap();
        let store = ClaudeStore::at(home.path().join(".claude"));
        let old = Path::new("/home/ada/work/app");
        let new = home.path().join("src/app");
        let first = b"{\"type\":\"user\",\"cwd\":\"/home/ada/work/app\",\"message\":\"hi\"}\n{\"type\":\"summary\"}\n";
        let path = write_moved_lines(&store, "s-1", old, &new, first, true).unwrap();
        assert_eq!(session_file(&store, "s-1", &new), Some(path.clone()));
        let second = b"{\"cwd\":\"/home/ada/work/app/sub\",\"type\":\"assistant\"}\n";
        write_moved_lines(&store, "s-1", old, &new, second, false).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[0]["cwd"], new.to_str().unwrap());
        assert_eq!(lines[1], serde_json::json!({"type": "summary"}));
        assert_eq!(lines[2]["cwd"], new.join("sub").to_str().unwrap());
        // Replacing starts the file again.
        write_moved_lines(&store, "s-1", old, &new, second, true).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), 1);
        assert!(write_moved_lines(&store, "../x", old, &new, second, true).is_err());
        // Recorded on the other system: a Windows folder read here is absolute too; roots and
        // relative folders are refused.
        let win = br#"{"cwd":"C:\\Users\\ada\\app","type":"user"}"#;
        let mut line = win.to_vec();
        line.push(b'\n');
        let path = write_moved_lines(
            &store,
            "s-2",
            Path::new(r"C:\Users\ada\app"),
            &new,
            &line,
            true,
        )
        .unwrap();
        let back: serde_json::Value =
            serde_json::from_str(std::fs::read_to_string(&path).unwrap().trim()).unwrap();
        assert_eq!(back["cwd"], new.to_str().unwrap());
        for bad in ["/", r"C:\", "relative/app"] {
            assert!(
                write_moved_lines(&store, "s-3", Path::new(bad), &new, &line, true).is_err(),
                "{bad}"
            );
        }
    }
}
