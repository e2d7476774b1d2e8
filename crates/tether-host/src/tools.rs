//! Dangling tool calls (R-PROC-4; github/copilot-cli#3183, sst/opencode#21326): a `tool_call` whose
//! last reported status is not final (`completed` or `failed`) when the agent died or the
//! session was reloaded. Left alone, the transcript holds a tool use without a result and
//! later requests fail; ACP has no `cancelled` tool status, so the repair is a final
//! `tool_call_update` with `status: "failed"` and a synthetic explanation.
//!
//! [`ToolCallTracker`] is pure: feed it every `session/update` payload (the `update` object,
//! raw JSON as the agent sent it) and ask for the repairs.

use serde_json::{Value, json};

/// Why a tool call was left without a final status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DanglingReason {
    /// The agent process exited or closed its output mid-turn.
    AgentExited,
    /// The session was loaded again and its replay left the tool call open.
    SessionReloaded,
}

impl DanglingReason {
    /// A stable identifier, recorded in the repair's `_meta.tether.reason`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::AgentExited => "agentExited",
            Self::SessionReloaded => "sessionReloaded",
        }
    }

    /// The explanation written into the repair's content.
    #[must_use]
    pub fn explanation(self) -> &'static str {
        match self {
            Self::AgentExited => {
                "Tool call interrupted: the agent process ended before reporting a result. \
                 Tether marked it failed so the conversation stays valid."
            }
            Self::SessionReloaded => {
                "Tool call interrupted: the reloaded session has no result for it. \
                 Tether marked it failed so the conversation stays valid."
            }
        }
    }
}

/// An open (not yet final) tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenToolCall {
    /// The agent's `toolCallId`.
    pub id: String,
    /// The last status reported (`pending` or `in_progress`).
    pub status: String,
    /// The title, when the agent gave one.
    pub title: Option<String>,
}

/// Tracks tool calls of one session from its `tool_call` / `tool_call_update` updates.
#[derive(Debug, Clone, Default)]
pub struct ToolCallTracker {
    /// Open calls in the order they were first seen.
    open: Vec<OpenToolCall>,
}

/// Open tool calls tracked per session: 1024. Each update costs a scan of them, so an agent that
/// opens calls without ever finishing them must not make that unbounded (ARCHITECTURE.md, "Hostile
/// input"): past the bound the oldest is forgotten (and gets no repair), with a warning.
pub const MAX_OPEN_TOOL_CALLS: usize = 1024;

fn is_final(status: &str) -> bool {
    matches!(status, "completed" | "failed")
}

impl ToolCallTracker {
    /// An empty tracker.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds the `toolCall` of a `session/request_permission`: some agents announce a tool
    /// call that needs permission only there, never in a `tool_call` update (Gemini CLI
    /// 0.61.0, seen with the real agent), so it must count as open until a final
    /// `tool_call_update` closes it. A call already tracked is left as it is.
    pub fn observe_permission(&mut self, tool_call: &Value) {
        let Some(id) = tool_call.get("toolCallId").and_then(Value::as_str) else {
            return;
        };
        if self.open.iter().any(|c| c.id == id) {
            return;
        }
        let status = tool_call
            .get("status")
            .and_then(Value::as_str)
            .unwrap_or("pending");
        if !is_final(status) {
            self.push_open(OpenToolCall {
                id: id.to_owned(),
                status: status.to_owned(),
                title: tool_call
                    .get("title")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
            });
        }
    }

    /// Feeds one `SessionUpdate` object (`{"sessionUpdate": "tool_call", …}`). Other kinds
    /// and malformed values are ignored.
    pub fn observe(&mut self, update: &Value) {
        let kind = update.get("sessionUpdate").and_then(Value::as_str);
        let Some(id) = update.get("toolCallId").and_then(Value::as_str) else {
            return;
        };
        let status = update.get("status").and_then(Value::as_str);
        match kind {
            Some("tool_call") => {
                // ACP: a tool_call without status is `pending`.
                let status = status.unwrap_or("pending");
                self.open.retain(|c| c.id != id);
                if !is_final(status) {
                    self.push_open(OpenToolCall {
                        id: id.to_owned(),
                        status: status.to_owned(),
                        title: update
                            .get("title")
                            .and_then(Value::as_str)
                            .map(str::to_owned),
                    });
                }
            }
            Some("tool_call_update") => match status {
                Some(s) if is_final(s) => self.open.retain(|c| c.id != id),
                Some(s) => {
                    if let Some(call) = self.open.iter_mut().find(|c| c.id == id) {
                        s.clone_into(&mut call.status);
                    }
                }
                None => {}
            },
            _ => {}
        }
    }

    fn push_open(&mut self, call: OpenToolCall) {
        self.open.push(call);
        if self.open.len() > MAX_OPEN_TOOL_CALLS {
            let dropped = self.open.remove(0);
            tracing::warn!(
                tool_call = %dropped.id,
                "over {MAX_OPEN_TOOL_CALLS} tool calls open; the oldest is no longer tracked"
            );
        }
    }

    /// The tool calls without a final status, oldest first.
    #[must_use]
    pub fn open_calls(&self) -> &[OpenToolCall] {
        &self.open
    }

    /// Closes every open call: returns one final `tool_call_update` (status `failed`, a text
    /// explanation, `_meta.tether = {synthetic: true, reason}`) per open call, and forgets them.
    pub fn finish_dangling(&mut self, reason: DanglingReason) -> Vec<Value> {
        std::mem::take(&mut self.open)
            .into_iter()
            .map(|call| repair_update(&call.id, reason))
            .collect()
    }
}

/// The final `tool_call_update` that closes dangling tool call `id`.
#[must_use]
pub fn repair_update(id: &str, reason: DanglingReason) -> Value {
    json!({
        "sessionUpdate": "tool_call_update",
        "toolCallId": id,
        "status": "failed",
        "content": [{"type": "content", "content": {"type": "text", "text": reason.explanation()}}],
        "_meta": {"tether": {"synthetic": true, "reason": reason.as_str()}},
    })
}

/// Pure form: the repairs a sequence of updates (e.g. a `session/load` replay) needs.
#[must_use]
pub fn dangling_repairs<'a>(
    updates: impl IntoIterator<Item = &'a Value>,
    reason: DanglingReason,
) -> Vec<Value> {
    let mut tracker = ToolCallTracker::new();
    for u in updates {
        tracker.observe(u);
    }
    tracker.finish_dangling(reason)
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::SessionUpdate;

    /// Hostile input (ARCHITECTURE.md): an agent opening tool calls without end keeps the tracker
    /// bounded.
    #[test]
    fn open_calls_are_bounded() {
        let mut t = ToolCallTracker::new();
        for i in 0..(MAX_OPEN_TOOL_CALLS + 10) {
            t.observe(&json!({"sessionUpdate": "tool_call", "toolCallId": format!("c{i}")}));
        }
        assert_eq!(t.open_calls().len(), MAX_OPEN_TOOL_CALLS);
        assert_eq!(t.open_calls()[0].id, "c10", "the oldest were forgotten");
        t.observe_permission(&json!({"toolCallId": "p"}));
        assert_eq!(t.open_calls().len(), MAX_OPEN_TOOL_CALLS);
        assert_eq!(t.open_calls().last().map(|c| c.id.as_str()), Some("p"));
    }

    #[test]
    fn open_calls_are_closed_as_failed_and_final_ones_are_left_alone() {
        let updates = [
            json!({"sessionUpdate":"tool_call","toolCallId":"a","title":"Read","status":"pending"}),
            json!({"sessionUpdate":"tool_call","toolCallId":"b","title":"Edit"}),
            json!({"sessionUpdate":"tool_call_update","toolCallId":"a","status":"in_progress"}),
            json!({"sessionUpdate":"tool_call","toolCallId":"c","status":"in_progress"}),
            json!({"sessionUpdate":"tool_call_update","toolCallId":"c","status":"completed"}),
            json!({"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}),
        ];
        let mut t = ToolCallTracker::new();
        for u in &updates {
            t.observe(u);
        }
        let open: Vec<_> = t
            .open_calls()
            .iter()
            .map(|c| (c.id.as_str(), c.status.as_str()))
            .collect();
        assert_eq!(open, [("a", "in_progress"), ("b", "pending")]);
        let repairs = t.finish_dangling(DanglingReason::AgentExited);
        assert_eq!(repairs.len(), 2);
        assert!(t.open_calls().is_empty());
        for r in &repairs {
            assert_eq!(r["status"], "failed");
            assert_eq!(r["_meta"]["tether"]["reason"], "agentExited");
            // Every repair is a valid ACP SessionUpdate.
            let typed: SessionUpdate = serde_json::from_value(r.clone()).expect("valid ACP update");
            assert!(matches!(typed, SessionUpdate::ToolCallUpdate(_)));
        }
        assert_eq!(
            dangling_repairs(&updates, DanglingReason::SessionReloaded).len(),
            2
        );
    }

    #[test]
    fn nothing_open_means_no_repairs() {
        let updates = [
            json!({"sessionUpdate":"tool_call","toolCallId":"a","status":"failed"}),
            json!({"sessionUpdate":"tool_call_update","toolCallId":"zzz","status":"in_progress"}),
            json!({"toolCallId":"no-kind"}),
            json!("not an object"),
        ];
        assert!(dangling_repairs(&updates, DanglingReason::SessionReloaded).is_empty());
    }

    #[test]
    fn a_tool_call_announced_only_in_a_permission_request_is_tracked() {
        let mut t = ToolCallTracker::new();
        t.observe_permission(&json!({"toolCallId": "g1", "title": "Shell", "kind": "execute"}));
        assert_eq!(t.open_calls().len(), 1);
        assert_eq!(t.open_calls()[0].status, "pending");
        // The agent's own later updates still apply; a duplicate announcement changes nothing.
        t.observe(&json!({"sessionUpdate": "tool_call_update", "toolCallId": "g1", "status": "in_progress"}));
        t.observe_permission(&json!({"toolCallId": "g1"}));
        assert_eq!(t.open_calls()[0].status, "in_progress");
        let repairs = t.finish_dangling(DanglingReason::AgentExited);
        assert_eq!(repairs.len(), 1);
        assert_eq!(repairs[0]["toolCallId"], "g1");
        // Closed by a final update: nothing to repair.
        t.observe_permission(&json!({"toolCallId": "g2"}));
        t.observe(&json!({"sessionUpdate": "tool_call_update", "toolCallId": "g2", "status": "completed"}));
        assert!(t.finish_dangling(DanglingReason::AgentExited).is_empty());
        t.observe_permission(&json!({"title": "no id"}));
        assert!(t.open_calls().is_empty());
    }
}
