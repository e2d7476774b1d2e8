//! `tether sessions show ID` for a session that is not in Tether's cache but in an agent's
//! own store (R-HIST-1): its latest turns, read from the end of the agent's file
//! (R-HIST-2), as a table or JSON. Stores are located from this process's environment.

use std::path::Path;

use serde_json::{Value, json};
use tether_history::{AgentKind, Env, ReadOptions, SessionInfo, Transcript, find_session};

/// Longest turn text shown in the table, in characters.
const TEXT_CHARS: usize = 80;

/// Session `session_id` from the first agent store that has it (looked for from workspace
/// `root` first), with its listing entry and latest turns; `Ok(None)` when no store has it.
///
/// # Errors
/// The id cannot name a file, or the file cannot be read (the message names the file).
pub fn load(
    session_id: &str,
    root: &Path,
    env: &Env,
) -> Result<Option<(AgentKind, SessionInfo, Transcript)>, String> {
    let Some(found) =
        find_session(&AgentKind::ALL, env, session_id, Some(root)).map_err(|e| e.to_string())?
    else {
        return Ok(None);
    };
    let store = tether_history::locate(found.agent, env)
        .ok_or_else(|| format!("{}'s store is not located", found.agent.display_name()))?;
    let info = store.summary(&found.path).map_err(|e| e.to_string())?;
    let transcript = found
        .read(&ReadOptions::default())
        .map_err(|e| e.to_string())?;
    Ok(Some((found.agent, info, transcript)))
}

/// `{agent, summary, snapshot, complete, skippedLines, tornTail, unknownRecords,
/// unknownTypes, passedOver, passedOverNote}`: `complete` says the whole file was read,
/// `passedOver` how many of its lines and records were left out (`passedOverNote` in
/// words, `null` when none).
#[must_use]
pub fn render_json(agent: AgentKind, info: &SessionInfo, t: &Transcript) -> Value {
    json!({
        "agent": agent.name(),
        "summary": info,
        "snapshot": t.snapshot,
        "complete": t.complete,
        "skippedLines": t.skipped_lines + t.oversized_lines,
        "tornTail": t.torn_tail,
        "unknownRecords": t.unknown_records,
        "unknownTypes": t.unknown_types,
        "passedOver": t.passed_over(),
        "passedOverNote": t.passed_over_note(),
    })
}

/// The `Turns` line: how many are shown, whether they are all of the file's, and what was
/// passed over (never "all of them" when something was).
fn turns_line(t: &Transcript) -> String {
    let shown = t.snapshot.chat_turns.len();
    match (t.complete, t.passed_over_note()) {
        (true, None) => format!("showing the last {shown} (all of them)"),
        (true, Some(note)) => {
            format!("showing the last {shown} (the whole file was read; passed over: {note})")
        }
        (false, None) => format!("showing the last {shown} (older turns not read)"),
        (false, Some(note)) => {
            format!("showing the last {shown} (older turns not read; passed over: {note})")
        }
    }
}

/// The session's fields, then its turns (`#`, time, role, text on one line).
#[must_use]
pub fn render_table(agent: AgentKind, info: &SessionInfo, t: &Transcript) -> String {
    let mut out = String::new();
    let mut field = |k: &str, v: &str| out.push_str(&format!("{k:<16}{v}\n"));
    field("Session", &info.session_id);
    field(
        "Agent",
        &format!("{} (its own store)", agent.display_name()),
    );
    field("File", &info.path.display().to_string());
    field("Size", &format!("{} bytes", info.size_bytes));
    if let Some(title) = &info.title {
        field("Title", title);
    }
    field("Working dir", info.cwd.as_deref().unwrap_or("-"));
    field("Started (UTC)", info.started_utc.as_deref().unwrap_or("-"));
    field("Updated (UTC)", info.updated_utc.as_deref().unwrap_or("-"));
    field("Turns", &turns_line(t));
    if !t.snapshot.chat_turns.is_empty() {
        out.push('\n');
        for (i, turn) in t.snapshot.chat_turns.iter().enumerate() {
            let role = format!("{:?}", turn.role).to_lowercase();
            // A call that ran a subagent names the id that shows its transcript.
            let subagent = turn
                .metadata
                .as_ref()
                .and_then(|m| m.get("toolCall"))
                .and_then(|c| c.get("subagentSessionId"))
                .and_then(Value::as_str)
                .map(|id| format!(" (subagent: tether sessions show {id})"))
                .unwrap_or_default();
            let text: String = turn
                .text
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .chars()
                .take(TEXT_CHARS)
                .collect();
            out.push_str(&format!(
                "{:>3}  {:<24}  {:<9}  {text}{subagent}\n",
                i + 1,
                turn.timestamp_utc,
                role
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn transcript(complete: bool, skipped: u64, unknown: &[&str]) -> Transcript {
        Transcript {
            snapshot: tether_store::model::SessionSnapshot::default(),
            complete,
            bytes_read: 0,
            skipped_lines: skipped,
            oversized_lines: 0,
            torn_tail: false,
            unknown_records: unknown.len() as u64,
            unknown_types: unknown.iter().map(|s| (*s).to_owned()).collect(),
            known_records: 1,
        }
    }

    /// "All of them" only when the whole file was read and nothing passed over.
    #[test]
    fn the_turns_line_never_claims_all_when_lines_were_passed_over() {
        assert_eq!(
            turns_line(&transcript(true, 0, &[])),
            "showing the last 0 (all of them)"
        );
        assert_eq!(
            turns_line(&transcript(true, 2, &["x"])),
            "showing the last 0 (the whole file was read; passed over: 2 lines not JSON, 1 \
             record of unknown type (x))"
        );
        assert_eq!(
            turns_line(&transcript(false, 0, &[])),
            "showing the last 0 (older turns not read)"
        );
    }
}
