//! A session carried over into a new agent session (the agent lost it), loaded again
//! later: the replay holds every turn once, in order (R-ACP-3, R-ACP-4).

use super::*;

/// The replay of a load as (kind, text) pairs of its chunk updates, each turn's chunks
/// joined (an agent's answer streams in several); Tether's notices (`[tether] …`) stand
/// alone.
fn replayed_turns(updates: &[Update]) -> Vec<(String, String)> {
    let mut turns: Vec<(String, String)> = Vec::new();
    for u in updates {
        let Some(text) = u.text() else { continue };
        let notice = |t: &str| t.starts_with("[tether] ");
        match turns.last_mut() {
            Some((kind, joined)) if *kind == u.kind && !notice(text) && !notice(joined) => {
                joined.push_str(text);
            }
            _ => turns.push((u.kind.clone(), text.to_owned())),
        }
    }
    turns
}

/// A session carried over (the agent lost it) and loaded again later, by a client of the
/// same process and one of the daemon's: the replay holds every turn once, in order, the
/// turns of the session the agent lost (kept in its archived cache), the one notice of the
/// carry-over, then the turns after it (R-ACP-3, R-ACP-4).
#[tokio::test]
async fn a_later_load_of_a_carried_over_session_replays_every_turn_once_in_order() {
    for remote in [Remote::Off, Remote::Daemon] {
        let mut acp = Acp::new();
        let mut first = acp.client(remote).await;
        let sid = first.new_session(acp.ws(), STEP).await.unwrap();
        prompt(&first, &sid, "remember 42").await;
        first.shutdown().await;
        if remote == Remote::Daemon {
            // The daemon still runs the session: it is shut down so the agent is asked
            // to load it again.
            acp.stop_daemon();
        }
        std::fs::remove_file(acp.world.path().join(format!("agent/sessions/{sid}.json"))).unwrap();
        let mut second = acp.client(remote).await;
        second.load_session(&sid, acp.ws(), STEP * 2).await.unwrap();
        assert_eq!(prompt(&second, &sid, "what number?").await, "end_turn");
        second.shutdown().await;
        if remote == Remote::Daemon {
            acp.stop_daemon();
        }

        let mut third = acp.client(remote).await;
        let loaded = third.load_session(&sid, acp.ws(), STEP * 2).await.unwrap();
        let replay: Vec<Update> = third
            .updates()
            .into_iter()
            .take(loaded.updates_before)
            .collect();
        assert!(replay.iter().all(|u| u.session_id == sid), "{replay:?}");
        let turns = replayed_turns(&replay);
        let kinds: Vec<&str> = turns.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            kinds,
            [
                "user_message_chunk",
                "agent_message_chunk",
                "agent_message_chunk",
                "user_message_chunk",
                "agent_message_chunk"
            ],
            "{remote:?}: {turns:?}"
        );
        assert_eq!(turns[0].1, "remember 42", "{remote:?}: {turns:?}");
        assert!(
            turns[1].1.starts_with("echo: remember 42"),
            "{remote:?}: {turns:?}"
        );
        assert!(
            turns[2].1.starts_with("[tether] ")
                && turns[2]
                    .1
                    .contains("context carried over into a new session: 2 of 2 turns"),
            "{remote:?}: the notice: {turns:?}"
        );
        assert_eq!(turns[3].1, "what number?", "{remote:?}: {turns:?}");
        assert!(turns[4].1.contains("what number?"), "{remote:?}: {turns:?}");
        let notices = replay
            .iter()
            .filter_map(Update::text)
            .filter(|t| t.starts_with("[tether] "))
            .count();
        assert_eq!(notices, 1, "{remote:?}: one notice: {turns:?}");
        assert_schema(&replay);
        third.shutdown().await;
        if remote == Remote::Daemon {
            acp.stop_daemon();
        }
    }
}
