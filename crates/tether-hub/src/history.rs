//! A session Tether never cached, shown from the agent's own session store (R-HIST-3):
//! `tether_history` finds it by id (in the store of the agent the session's configured
//! command names, else Claude Code's, Codex's, Gemini CLI's, Copilot CLI's, then opencode's), reads its
//! latest turns from the end of the file, and the hub publishes them as
//! [`Event::Restored`] with their [`RestoredSource`], then the stale banner, exactly as for
//! its own cache and before the first agent attempt. When the agent does not know a
//! session whose file is under another project folder, the recovery dialog says where
//! that file is (R-HIST-4). Such a conversation can be carried into a new session
//! (R-HIST-5, `agent_carry`). The files' contents are never logged.

use std::path::Path;

use serde_json::Value;
use tether_history::{
    AgentKind, AgentStore, DEFAULT_MAX_TURNS, Env, Found, ReadOptions, Transcript, find_session,
};
use tether_host::AgentConfig;

use crate::protocol::{BannerKind, BannerParams, RestoredSource, SessionSummary};

use super::carry::Carry;
use super::events::Event;
use super::{Hub, ResumeCtx};
use crate::carry_over;

impl Hub {
    /// Looks `ctx.session_id` up in the agent's own store and, when it is there, publishes
    /// its transcript (stale, with where it came from) and the stale banner, and marks the
    /// resume as showing unconfirmed history (`had_cache`). A store that cannot be read is
    /// logged (its path and the OS error) and the resume goes on as without a cache.
    ///
    /// A file in a format the reader cannot read is not shown as an empty transcript: a
    /// `restoreFailed` banner names the file and the format, and the resume goes on.
    pub(super) async fn restore_from_agent_store(&self, ctx: &mut ResumeCtx) {
        let workspace = ctx.workspace.clone();
        match self
            .try_agent_history(&ctx.agent, &ctx.session_id, &workspace, DEFAULT_MAX_TURNS)
            .await
        {
            Ok(Some((found, transcript))) => self.publish_history(ctx, &found, transcript).await,
            Ok(None) => {}
            Err(err @ tether_history::HistoryError::UnreadableFormat { .. }) => {
                self.log(&ctx.session_id, format!("the agent's own history: {err}"))
                    .await;
                let banner = BannerParams {
                    id: format!("history-unreadable:{}", ctx.session_id),
                    session_id: Some(ctx.session_id.clone()),
                    kind: BannerKind::RestoreFailed,
                    message: format!("The agent's saved transcript is not shown: {err}"),
                    dismissible: true,
                };
                self.emit_for(ctx, Event::Banner(banner)).await;
            }
            Err(err) => {
                self.log(
                    &ctx.session_id,
                    format!("the agent's own history could not be read: {err}"),
                )
                .await;
            }
        }
    }

    /// Session `session_id` of configured agent `agent` in that agent's own store, its
    /// latest `max_turns` turns read; `None` when it is not there (or cannot be read, which
    /// is logged).
    pub(super) async fn read_agent_history(
        &self,
        agent: &str,
        session_id: &str,
        workspace: &Path,
        max_turns: usize,
    ) -> Option<(Found, Transcript)> {
        match self
            .try_agent_history(agent, session_id, workspace, max_turns)
            .await
        {
            Ok(found) => found,
            Err(err) => {
                self.log(
                    session_id,
                    format!("the agent's own history could not be read: {err}"),
                )
                .await;
                None
            }
        }
    }

    /// [`Hub::read_agent_history`], its error returned rather than logged.
    async fn try_agent_history(
        &self,
        agent: &str,
        session_id: &str,
        workspace: &Path,
        max_turns: usize,
    ) -> Result<Option<(Found, Transcript)>, tether_history::HistoryError> {
        let Some(config) = self.config.agents.get(agent).cloned() else {
            return Ok(None);
        };
        let kinds = agent_kinds(&config);
        let env = agent_env(&config);
        let id = session_id.to_owned();
        let workspace = workspace.to_owned();
        let read = tokio::task::spawn_blocking(move || {
            let Some(found) = find_session(&kinds, &env, &id, Some(&workspace))? else {
                return Ok(None);
            };
            let transcript = found.read(&ReadOptions { max_turns })?;
            Ok::<_, tether_history::HistoryError>(Some((found, transcript)))
        })
        .await;
        // A reader that panicked has nothing to show (the join error).
        read.unwrap_or(Ok(None))
    }

    async fn publish_history(&self, ctx: &mut ResumeCtx, found: &Found, transcript: Transcript) {
        ctx.had_cache = true;
        // The conversation can be carried into a new session from the agent's file
        // (R-CARRY-1, `agent_carry`).
        ctx.history = !transcript.snapshot.chat_turns.is_empty();
        self.telemetry_resume_start(ctx, &transcript.snapshot).await;
        self.emit_for(ctx, restored_event(found, &transcript)).await;
        let banner = BannerParams {
            id: format!("stale:{}", ctx.session_id),
            session_id: Some(ctx.session_id.clone()),
            kind: BannerKind::StaleSnapshot,
            // The text names where the transcript came from, so every editor shows it
            // as it shows any banner (they decide nothing).
            message: format!(
                "Showing the transcript saved by {} in {}{}{}; the agent has not confirmed it yet.",
                found.agent.display_name(),
                found.path.display(),
                if transcript.complete {
                    ""
                } else {
                    " (its latest turns only)"
                },
                transcript
                    .passed_over_note()
                    .map(|n| format!(" ({n} passed over)"))
                    .unwrap_or_default()
            ),
            dismissible: true,
        };
        self.emit_for(ctx, Event::Banner(banner)).await;
        self.log_history(&ctx.session_id, found, &transcript).await;
    }

    /// Logs what was read of the agent's store (never its contents).
    pub(super) async fn log_history(
        &self,
        session_id: &str,
        found: &Found,
        transcript: &Transcript,
    ) {
        let turns = transcript.snapshot.chat_turns.len();
        self.log(
            session_id,
            format!(
                "restored {turns} turns from {}'s own store ({}; {} bytes read, {} passed over{})",
                found.agent.display_name(),
                found.path.display(),
                transcript.bytes_read,
                transcript.passed_over(),
                transcript
                    .passed_over_note()
                    .map(|n| format!(": {n}"))
                    .unwrap_or_default()
            ),
        )
        .await;
    }
}

impl Hub {
    /// R-HIST-5: the carry-over of a session Tether never cached, built from the agent's
    /// own file: its latest turns, as many as the budget could hold condensed
    /// (`carryOver.maxTokens / MIN_CONDENSED_TOKENS`) plus the restored window, read from
    /// the end. `None` when the agent's store does not have it.
    pub(super) async fn agent_carry(
        &self,
        workspace: &Path,
        session_id: &str,
        agent: &str,
    ) -> Option<Carry> {
        let max_tokens = self.config.carry_over.max_tokens;
        let older =
            usize::try_from(max_tokens / carry_over::MIN_CONDENSED_TOKENS).unwrap_or(usize::MAX);
        let max_turns = DEFAULT_MAX_TURNS.saturating_add(older);
        let (found, transcript) = self
            .read_agent_history(agent, session_id, workspace, max_turns)
            .await?;
        let snapshot = transcript.snapshot;
        let builder = carry_over::Transcript {
            session_id,
            agent,
            chat_base: 0,
            chat: &snapshot.chat_turns,
            exec: &snapshot.exec_turns,
            diffs: &[],
        };
        let built = carry_over::build(&builder, max_tokens);
        self.log(
            session_id,
            format!(
                "carry-over built from {}'s own store: {} of {} turns read, {} of {} tokens",
                found.agent.display_name(),
                built.carried_turns(),
                built.total_turns,
                built.tokens,
                built.max_tokens
            ),
        )
        .await;
        Some(Carry {
            from_session: session_id.to_owned(),
            from_agent: agent.to_owned(),
            built,
        })
    }

    /// R-HIST-1: the sessions of `workspace` in every agent's own store, as `session/list`
    /// entries (unordered). Each store is located from the environment of the configured
    /// agent that names it (listed under that agent's name), else from the requesting
    /// editor's or this server's (listed under the store's name).
    pub(super) async fn agent_sessions(&self, workspace: &Path) -> Vec<SessionSummary> {
        let plans = self.agent_store_plans();
        let workspace = workspace.to_owned();
        tokio::task::spawn_blocking(move || {
            let mut out = Vec::new();
            for (kind, name, env) in plans {
                let Some(store) = tether_history::locate(kind, &env) else {
                    continue;
                };
                for path in store.sessions(&workspace) {
                    let Ok(info) = store.summary(&path) else {
                        continue;
                    };
                    // A file in a format the reader cannot read is listed, saying so.
                    let title = match info.unreadable {
                        Some(why) => Some(format!("(unreadable) {why}")),
                        None => info.title,
                    };
                    out.push(SessionSummary {
                        session_id: info.session_id,
                        agent: name.clone(),
                        title,
                        first_prompt: None,
                        updated_utc: info.updated_utc.unwrap_or_default(),
                        turn_count: 0,
                        live: false,
                        turn_running: false,
                        clients: 0,
                        source: Some(kind.name().to_owned()),
                        path: Some(path.display().to_string()),
                        size_bytes: Some(info.size_bytes),
                        recorded_at: None,
                        branch: None,
                        from_machine: None,
                        from_machine_at: None,
                    });
                }
            }
            out
        })
        .await
        .unwrap_or_default()
    }

    /// Each agent's store as `session/list` with `all` and `session/search` look in it: the
    /// agent, the name its sessions are listed under (the first configured agent, by name,
    /// whose command names it, else the store's name), and the environment its store is
    /// located from (that agent's, else the requesting editor's or this server's).
    pub(super) fn agent_store_plans(&self) -> Vec<(AgentKind, String, Env)> {
        AgentKind::ALL
            .iter()
            .map(|&kind| {
                // The first by name (the map is ordered).
                let configured = self
                    .config
                    .agents
                    .iter()
                    .find(|(_, c)| agent_kinds(c) == [kind]);
                match configured {
                    Some((name, config)) => (kind, name.clone(), agent_env(config)),
                    None => (kind, kind.name().to_owned(), base_env()),
                }
            })
            .collect()
    }

    /// R-HIST-4: when the agent's own store holds session `ctx.session_id` in a project
    /// folder the agent does not look in from this workspace (the folder was renamed or
    /// moved), a sentence for the recovery dialog saying where it is; `None` otherwise.
    pub(super) async fn agent_file_elsewhere(&self, ctx: &ResumeCtx) -> Option<String> {
        let config = self.config.agents.get(&ctx.agent).cloned()?;
        let kinds = agent_kinds(&config);
        let env = agent_env(&config);
        let id = ctx.session_id.clone();
        let workspace = ctx.workspace.clone();
        tokio::task::spawn_blocking(move || {
            let found = find_session(&kinds, &env, &id, Some(&workspace)).ok()??;
            let store = tether_history::locate(found.agent, &env)?;
            if store.in_workspace(&found.path, &workspace) != Some(false) {
                return None;
            }
            let ran_in = store
                .summary(&found.path)
                .ok()
                .and_then(|s| s.cwd)
                .map(|cwd| format!(" (it ran in {cwd})"))
                .unwrap_or_default();
            Some(format!(
                "{} has this session under another project folder{ran_in}: {}",
                found.agent.display_name(),
                found.path.display()
            ))
        })
        .await
        .ok()
        .flatten()
    }
}

/// [`Event::Restored`] of `transcript`, with where it came from (R-HIST-3).
pub(super) fn restored_event(found: &Found, transcript: &Transcript) -> Event {
    Event::Restored {
        snapshot: serde_json::to_value(&transcript.snapshot).unwrap_or(Value::Null),
        source: Some(RestoredSource {
            agent: found.agent.name().to_owned(),
            path: found.path.display().to_string(),
            complete: transcript.complete,
            passed_over: transcript.passed_over(),
            passed_over_note: transcript.passed_over_note(),
        }),
    }
}

/// The agents whose stores may hold a session of `config` (R-HIST-3): the one its command
/// line names, else every readable one, Claude Code first.
fn agent_kinds(config: &AgentConfig) -> Vec<AgentKind> {
    if config.protocol == tether_host::AgentProtocol::ClaudePrint {
        return vec![AgentKind::Claude];
    }
    let command_line = std::iter::once(config.command.as_str())
        .chain(config.args.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ");
    match AgentKind::from_command_line(&command_line) {
        Some(kind) => vec![kind],
        None => AgentKind::ALL.to_vec(),
    }
}

/// The requesting editor's environment (R-DAEMON-7), else this server's.
pub(super) fn base_env() -> Env {
    match crate::RequestCtx::current().env {
        Some(base) => Env::from_vars(base.0.iter().map(|(k, v)| (k.clone(), v.clone()))),
        None => Env::from_process(),
    }
}

/// The environment the agent runs in, where it locates its own store: [`base_env`] with
/// the agent's configured `env` over it.
fn agent_env(config: &AgentConfig) -> Env {
    let mut env = base_env();
    for (name, value) in &config.env {
        env.set(name.clone(), value.clone());
    }
    env
}

impl Hub {
    /// The Claude Code and Codex stores as the configured agents of each kind see them (the
    /// default agent's environment when it is of that kind, else the first such agent's,
    /// else this request's), whose session files sync carries with their sessions
    /// (R-SYNC-9).
    pub(super) fn agent_stores_for_sync(&self) -> tether_sync::AgentStores {
        let agents = &self.config.agents;
        let env_of = |kind: AgentKind| {
            let config = agents
                .get(&self.config.default_agent)
                .filter(|c| agent_kinds(c) == [kind])
                .or_else(|| agents.values().find(|c| agent_kinds(c) == [kind]));
            config.map_or_else(base_env, agent_env)
        };
        tether_sync::AgentStores {
            claude: tether_history::claude::ClaudeStore::locate(&env_of(AgentKind::Claude)),
            codex: tether_history::codex::CodexStore::locate(&env_of(AgentKind::Codex)),
        }
    }

    /// R-PROJECT-4: copies Claude Code's own file of session `session_id` (the agent's id
    /// of it), recorded in
    /// `from`, to where Claude Code looks from `to` (its `cwd` fields rewritten, the
    /// original kept: `tether_history::rehome_claude_session`), for each Claude store a
    /// configured agent or this server's environment names. Returns one sentence for the
    /// editor saying what happened to the agent's own session.
    pub(super) async fn bring_agent_file_here(
        &self,
        session_id: &str,
        from: &Path,
        to: &Path,
    ) -> String {
        let mut envs: Vec<Env> = self
            .config
            .agents
            .values()
            .filter(|c| agent_kinds(c) == [AgentKind::Claude])
            .map(agent_env)
            .collect();
        envs.push(base_env());
        let (id, from, to) = (session_id.to_owned(), from.to_owned(), to.to_owned());
        let outcome = tokio::task::spawn_blocking(move || {
            let mut seen = Vec::new();
            for env in envs {
                let Some(store) = tether_history::claude::ClaudeStore::locate(&env) else {
                    continue;
                };
                if seen.contains(&store.root().to_owned()) {
                    continue;
                }
                seen.push(store.root().to_owned());
                match tether_history::rehome_claude_session(&store, &id, &from, &to) {
                    Ok(tether_history::Rehomed::Copied(copy)) => {
                        return Some(Ok(copy.to));
                    }
                    Ok(tether_history::Rehomed::AlreadyThere { path }) => return Some(Ok(path)),
                    Err(tether_history::RehomeError::NotFound { .. }) => {}
                    Err(e) => return Some(Err(e.to_string())),
                }
            }
            None
        })
        .await
        .ok()
        .flatten();
        match outcome {
            Some(Ok(path)) => format!(
                "Claude Code's own copy of it is now where Claude looks from here ({}), so the agent picks up the conversation.",
                path.display()
            ),
            Some(Err(why)) => format!(
                "Claude Code's own copy of it could not be moved ({why}); if the agent cannot load it, Tether offers to carry the conversation into a new session."
            ),
            None => "If the agent cannot load it from here, Tether offers to carry the conversation into a new session.".to_owned(),
        }
    }
}
