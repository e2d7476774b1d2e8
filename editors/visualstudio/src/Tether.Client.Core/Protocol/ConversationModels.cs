// Message models of the conversation part of the editor protocol (docs/protocol.md): the
// events of a running session (turnEnded, permissionResolved, reattached), the handoff offer,
// carry-over, the restored transcript's source, history pages and the handoff request.
using System.Collections.Generic;
using Newtonsoft.Json;
using Newtonsoft.Json.Linq;

namespace Tether.Client.Core.Protocol
{
    /// <summary>
    /// <c>session/status.handoff</c>: a rate-limit or quota wait longer than
    /// <c>handoff.offerAfterMs</c> offers another configured agent (docs/protocol.md, session/status).
    /// </summary>
    public sealed class HandoffOffer
    {
        /// <summary>The configured agent offered, e.g. <c>codex</c>.</summary>
        [JsonProperty("agent")] public string Agent { get; set; }
        /// <summary>The action's title, e.g. "Continue with Codex".</summary>
        [JsonProperty("title")] public string Title { get; set; }
        /// <summary>The <c>session/recoveryChoice</c> id, <c>handoff:&lt;agent&gt;</c>.</summary>
        [JsonProperty("choice")] public string Choice { get; set; }
        /// <summary>The question to show, e.g. "Claude's quota resets at 13:00; continue with Codex now?".</summary>
        [JsonProperty("question")] public string Question { get; set; }
        /// <summary>How long the limit lasts, in milliseconds.</summary>
        [JsonProperty("limitedForMs")] public long LimitedForMs { get; set; }
        /// <summary>When the quota resets (RFC 3339 UTC), when known.</summary>
        [JsonProperty("resetsUtc")] public string ResetsUtc { get; set; }
    }

    /// <summary><c>session/expired.carriedOver</c>: what a new session was primed with (docs/protocol.md, Carry-over).</summary>
    public sealed class CarriedOver
    {
        /// <summary>The session the conversation came from.</summary>
        [JsonProperty("fromSessionId")] public string FromSessionId { get; set; }
        /// <summary>Its agent.</summary>
        [JsonProperty("fromAgent")] public string FromAgent { get; set; }
        /// <summary>Turns carried (verbatim or condensed).</summary>
        [JsonProperty("turns")] public int Turns { get; set; }
        /// <summary>Turns of those carried verbatim.</summary>
        [JsonProperty("verbatimTurns")] public int VerbatimTurns { get; set; }
        /// <summary>Turns the conversation had.</summary>
        [JsonProperty("totalTurns")] public int TotalTurns { get; set; }
        /// <summary>Estimated tokens carried.</summary>
        [JsonProperty("tokens")] public int Tokens { get; set; }
        /// <summary>The budget (<c>carryOver.maxTokens</c>).</summary>
        [JsonProperty("maxTokens")] public int MaxTokens { get; set; }
        /// <summary>The one line shown in place of the carried turns.</summary>
        [JsonProperty("marker")] public string Marker { get; set; }
    }

    /// <summary><c>session/restored.source</c>: the agent's own store a transcript was read from (R-HIST-3).</summary>
    public sealed class RestoredSource
    {
        /// <summary><c>claude</c>, <c>codex</c>, <c>gemini</c>, <c>copilot</c> or <c>opencode</c>.</summary>
        [JsonProperty("agent")] public string Agent { get; set; }
        /// <summary>The session's file (absolute).</summary>
        [JsonProperty("path")] public string Path { get; set; }
        /// <summary>The whole file was read; false when older turns may exist.</summary>
        [JsonProperty("complete")] public bool Complete { get; set; }
    }

    /// <summary><c>session/turnEnded</c>: a prompt turn ended, sent to every editor attached to the session.</summary>
    public sealed class TurnEnded
    {
        /// <summary>The session.</summary>
        [JsonProperty("sessionId")] public string SessionId { get; set; }
        /// <summary>The event's number among the session's events.</summary>
        [JsonProperty("seq")] public long? Seq { get; set; }
        /// <summary>ACP stop reason (<c>end_turn</c>, <c>cancelled</c>, …) when the turn ended.</summary>
        [JsonProperty("stopReason")] public string StopReason { get; set; }
        /// <summary>The error's kind when the turn failed.</summary>
        [JsonProperty("error")] public string Error { get; set; }
    }

    /// <summary><c>session/permissionResolved</c>: a permission question was settled (by any editor, a timeout or the agent).</summary>
    public sealed class PermissionResolved
    {
        /// <summary>The session.</summary>
        [JsonProperty("sessionId")] public string SessionId { get; set; }
        /// <summary>This event's number.</summary>
        [JsonProperty("seq")] public long? Seq { get; set; }
        /// <summary>The <c>questionSeq</c> of the question settled.</summary>
        [JsonProperty("questionSeq")] public long? QuestionSeq { get; set; }
        /// <summary>The tool call the question was about.</summary>
        [JsonProperty("toolCallId")] public string ToolCallId { get; set; }
        /// <summary>What the agent was answered (ACP outcome).</summary>
        [JsonProperty("outcome")] public JObject Outcome { get; set; }
        /// <summary><c>answered</c>, <c>timedOut</c>, <c>declined</c> or <c>withdrawn</c>.</summary>
        [JsonProperty("reason")] public string Reason { get; set; }
    }

    /// <summary><c>session/reattached</c> (from the forwarder): the daemon died and a new one resumed the session.</summary>
    public sealed class Reattached
    {
        /// <summary>The session.</summary>
        [JsonProperty("sessionId")] public string SessionId { get; set; }
        /// <summary>The new daemon's answer to the resume, or null when it refused.</summary>
        [JsonProperty("result")] public ResumeResult Result { get; set; }
        /// <summary>Why the new daemon refused, when it did.</summary>
        [JsonProperty("error")] public JToken Error { get; set; }
    }

    /// <summary>Params of <c>session/history</c>.</summary>
    public sealed class HistoryParams
    {
        /// <summary>The workspace.</summary>
        [JsonProperty("workspace")] public WorkspaceRef Workspace { get; set; }
        /// <summary>The session.</summary>
        [JsonProperty("sessionId")] public string SessionId { get; set; }
        /// <summary>Absolute index of the first chat turn shown (the view's <c>chatTurnsBase</c>).</summary>
        [JsonProperty("beforeTurn", NullValueHandling = NullValueHandling.Ignore)] public long? BeforeTurn { get; set; }
        /// <summary>Turns per page, 1 to 500 (the server's default is 50).</summary>
        [JsonProperty("limit", NullValueHandling = NullValueHandling.Ignore)] public int? Limit { get; set; }
    }

    /// <summary>Result of <c>session/history</c>: chat turns <c>[chatTurnsBase, beforeTurn)</c>, oldest first.</summary>
    public sealed class HistoryResult
    {
        /// <summary>The session.</summary>
        [JsonProperty("sessionId")] public string SessionId { get; set; }
        /// <summary>Absolute index of the page's first turn: the view's new base.</summary>
        [JsonProperty("chatTurnsBase")] public long? ChatTurnsBase { get; set; }
        /// <summary>The page, oldest first.</summary>
        [JsonProperty("chatTurns")] public List<ChatTurn> ChatTurns { get; set; }
        /// <summary>Chat turns in the whole transcript.</summary>
        [JsonProperty("totalChatTurns")] public long TotalChatTurns { get; set; }
    }

    /// <summary>Params of <c>session/list</c>.</summary>
    public sealed class ListParams
    {
        /// <summary>The workspace.</summary>
        [JsonProperty("workspace")] public WorkspaceRef Workspace { get; set; }
        /// <summary>Also the sessions of the agents' own stores and of running agents (R-HIST-1, R-HIST-7).</summary>
        [JsonProperty("all", NullValueHandling = NullValueHandling.Ignore)] public bool? All { get; set; }
        /// <summary>At most this many sessions (1 to 1000); the answer's <c>nextCursor</c> names the next page. Null: every session.</summary>
        [JsonProperty("limit", NullValueHandling = NullValueHandling.Ignore)] public int? Limit { get; set; }
        /// <summary>The previous page's <c>nextCursor</c> (with the same workspace, <c>all</c> and <c>limit</c>); null for the first page.</summary>
        [JsonProperty("cursor", NullValueHandling = NullValueHandling.Ignore)] public string Cursor { get; set; }
    }

    /// <summary>Params of <c>session/handoff</c>.</summary>
    public sealed class HandoffParams
    {
        /// <summary>The session whose conversation continues.</summary>
        [JsonProperty("sessionId")] public string SessionId { get; set; }
        /// <summary>Its workspace.</summary>
        [JsonProperty("workspace")] public WorkspaceRef Workspace { get; set; }
        /// <summary>The configured agent to continue with.</summary>
        [JsonProperty("agent")] public string Agent { get; set; }
    }
}
