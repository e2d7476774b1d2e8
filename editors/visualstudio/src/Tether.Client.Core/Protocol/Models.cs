// Message models for the Tether editor protocol (docs/protocol.md, kept in
// the repo as docs/protocol.md). Keys are camelCase, enum values
// camelCase strings, durations in milliseconds (…Ms), times RFC 3339 UTC strings (…Utc).
// Every property is optional on the wire: a missing key reads as null / default, never throws.
using System.Collections.Generic;
using Newtonsoft.Json;
using Newtonsoft.Json.Linq;

namespace Tether.Client.Core.Protocol
{
    /// <summary>Outcome of <c>session/resume</c> and <c>session/recoveryChoice</c>.</summary>
    public enum ResumeOutcome
    {
        /// <summary>A value this client does not know.</summary>
        [WireFallback] Unknown = 0,
        /// <summary>The cached session is live again (same agent session).</summary>
        Resumed,
        /// <summary>A new agent session was started (none cached, or the user chose "new").</summary>
        Started,
        /// <summary>Retries are spent (or pointless): the user must choose retry or new.</summary>
        NeedsChoice,
        /// <summary>An error no retry can mend (e.g. authentication).</summary>
        Failed,
        /// <summary>
        /// Asked with <c>create: false</c> (an editor's start-up) and the workspace had nothing to
        /// resume: no session, no agent started, nothing failed (R-RESUME-11).
        /// </summary>
        NothingToResume,
    }

    /// <summary>Circuit breaker state (R-RESUME-1: closed → retrying → open → half-open).</summary>
    public enum BreakerStatus
    {
        /// <summary>A value this client does not know.</summary>
        [WireFallback] Unknown = 0,
        /// <summary>Normal operation.</summary>
        Closed,
        /// <summary>Automatic retries with backoff are under way.</summary>
        Retrying,
        /// <summary>Retries spent; waiting for the user's choice.</summary>
        Open,
        /// <summary>The user chose "Try Again": one more full round of attempts.</summary>
        HalfOpen,
    }

    /// <summary>The classifier's failure kinds (docs/protocol.md, ClassifiedError.kind).</summary>
    public enum ErrorKind
    {
        /// <summary>Retried like a transient error, then the user decides; also any value this client does not know.</summary>
        [WireFallback] Unknown = 0,
        /// <summary>The agent no longer knows the session: no retries, ask at once.</summary>
        SessionExpired,
        /// <summary>The agent is still starting.</summary>
        SessionNotReady,
        /// <summary>Refused, reset, timed out.</summary>
        Network,
        /// <summary>5xx, overloaded.</summary>
        ServerError,
        /// <summary>429-style; <c>retryAfterMs</c> when the failure says when.</summary>
        RateLimited,
        /// <summary>Usage or billing limit.</summary>
        QuotaExceeded,
        /// <summary>401/403, login required: fail fast.</summary>
        Authentication,
        /// <summary>The agent's stored session is unusable.</summary>
        SessionCorrupt,
        /// <summary>The agent process exited or closed its output.</summary>
        AgentCrashed,
        /// <summary>400-style, e.g. context too long: no retry.</summary>
        InvalidRequest,
        /// <summary>Cancelled by the user or the client.</summary>
        Cancelled,
    }

    /// <summary>Where a failure was observed.</summary>
    public enum ErrorSource
    {
        /// <summary>A value this client does not know.</summary>
        [WireFallback] Unknown = 0,
        /// <summary>An Agent Client Protocol error response.</summary>
        Acp,
        /// <summary>A process exit or its output.</summary>
        Process,
        /// <summary>An HTTP response.</summary>
        Http,
    }

    /// <summary><c>session/status</c> states.</summary>
    public enum SessionState
    {
        /// <summary>A value this client does not know.</summary>
        [WireFallback] Unknown = 0,
        /// <summary>An attempt is running.</summary>
        Resuming,
        /// <summary>Backing off before the next attempt (<c>retryInMs</c>).</summary>
        WaitingRetry,
        /// <summary>Waiting out a rate limit (<c>retryInMs</c>), then the same session resumes.</summary>
        RateLimited,
        /// <summary>Mid-turn, the agent has sent nothing for <c>silentStatusSecs</c> (information, not a failure; attempt and maxAttempts 0).</summary>
        AgentSilent,
        /// <summary>The session is live.</summary>
        Ready,
        /// <summary>Resume failed.</summary>
        Failed,
    }

    /// <summary><c>session/banner</c> kinds (R-UI-3).</summary>
    public enum BannerKind
    {
        /// <summary>A value this client does not know (still shown, as plain information).</summary>
        [WireFallback] Unknown = 0,
        /// <summary>"Previous session could not be restored; start a new session." (R-STORE-11).</summary>
        RestoreFailed,
        /// <summary>The transcript shown is cache the agent has not confirmed.</summary>
        StaleSnapshot,
        /// <summary>The agent's stream failed; kept until dismissed or a retry succeeds.</summary>
        StreamError,
        /// <summary>Persistence turned itself off after repeated failures (R-STORE-11).</summary>
        PersistenceDisabled,
        /// <summary>The live agent confirmed the session again.</summary>
        RecoveredLive,
        /// <summary>Saving the session failed (a full disk, an I/O error); cleared when a save works again (R-STORE-15).</summary>
        CannotSave,
        /// <summary>The session was recorded at another path of the workspace's project and was moved here (R-PROJECT-4).</summary>
        MovedHere,
        /// <summary>Another of the user's machines holds the session, read-only here until <c>session/continueHere</c> (id <c>held:&lt;session&gt;</c>, R-SYNC-7).</summary>
        HeldElsewhere,
        /// <summary>Pushing the session to the sync remote failed (full, read-only, unreachable); its turns are kept here, the push is retried, and the banner is cleared by the first push that works (R-SYNC-10).</summary>
        NotSynced,
    }

    /// <summary><c>{"root": "/abs"}</c>: the workspace a session belongs to.</summary>
    public sealed class WorkspaceRef
    {
        /// <summary>Absolute path of the workspace (solution folder) root.</summary>
        [JsonProperty("root")] public string Root { get; set; }
    }

    /// <summary>Breaker snapshot inside a <see cref="ResumeResult"/>.</summary>
    public sealed class BreakerSnapshot
    {
        /// <summary>State of the breaker.</summary>
        [JsonProperty("status")] public BreakerStatus Status { get; set; }
        /// <summary>Attempts made in the current round (1-based count).</summary>
        [JsonProperty("attempts")] public int Attempts { get; set; }
        /// <summary>Attempts allowed per round (default 3, R-RESUME-3).</summary>
        [JsonProperty("maxAttempts")] public int MaxAttempts { get; set; }
        /// <summary>How many times the user chose "Try Again".</summary>
        [JsonProperty("userRetries")] public int UserRetries { get; set; }
    }

    /// <summary>A failure as the server's classifier sees it.</summary>
    public sealed class ClassifiedError
    {
        /// <summary>Failure kind.</summary>
        [JsonProperty("kind")] public ErrorKind Kind { get; set; }
        /// <summary>Human-readable error text (may be the agent's own).</summary>
        [JsonProperty("message")] public string Message { get; set; }
        /// <summary>Whether a retry can help.</summary>
        [JsonProperty("retryable")] public bool Retryable { get; set; }
        /// <summary>Milliseconds until a retry is worth it, when the failure said so.</summary>
        [JsonProperty("retryAfterMs")] public long? RetryAfterMs { get; set; }
        /// <summary>Where it was observed.</summary>
        [JsonProperty("source")] public ErrorSource Source { get; set; }
        /// <summary>JSON-RPC error code, exit code or HTTP status, when there is one.</summary>
        [JsonProperty("code")] public long? Code { get; set; }
    }

    /// <summary>One button of the recovery dialog.</summary>
    public sealed class RecoveryAction
    {
        /// <summary><c>"retry"</c> or <c>"new"</c> (the <c>choice</c> sent back).</summary>
        [JsonProperty("id")] public string Id { get; set; }
        /// <summary>Button title: "Try Again" / "Start New Session".</summary>
        [JsonProperty("title")] public string Title { get; set; }
    }

    /// <summary>The recovery dialog's texts, chosen by the server (R-RESUME-6).</summary>
    public sealed class RecoveryPrompt
    {
        /// <summary>Title line: "Previous session not found", "Cannot connect to &lt;agent&gt;", "Failed to resume session".</summary>
        [JsonProperty("message")] public string Message { get; set; }
        /// <summary>Error and attempt count.</summary>
        [JsonProperty("detail")] public string Detail { get; set; }
        /// <summary>Buttons, in display order.</summary>
        [JsonProperty("actions")] public List<RecoveryAction> Actions { get; set; }
    }

    /// <summary>What resume found when it compared cache with the live agent.</summary>
    public sealed class Reconciliation
    {
        /// <summary>Turns the live agent confirmed.</summary>
        [JsonProperty("confirmedTurns")] public int ConfirmedTurns { get; set; }
        /// <summary>Exec outputs shown from cache only.</summary>
        [JsonProperty("staleExecCount")] public int StaleExecCount { get; set; }
        /// <summary>Diffs whose base file moved.</summary>
        [JsonProperty("staleDiffCount")] public int StaleDiffCount { get; set; }
        /// <summary>Pending approvals the agent no longer knows.</summary>
        [JsonProperty("droppedApprovals")] public int DroppedApprovals { get; set; }
    }

    /// <summary>Result of <c>session/resume</c> and <c>session/recoveryChoice</c>.</summary>
    public sealed class ResumeResult
    {
        /// <summary>What happened.</summary>
        [JsonProperty("outcome")] public ResumeOutcome Outcome { get; set; }
        /// <summary>The live agent session, when there is one (the session to answer about, for needsChoice).</summary>
        [JsonProperty("sessionId")] public string SessionId { get; set; }
        /// <summary>Set when a new session replaced an old one.</summary>
        [JsonProperty("previousSessionId")] public string PreviousSessionId { get; set; }
        /// <summary>Breaker state after the call.</summary>
        [JsonProperty("breaker")] public BreakerSnapshot Breaker { get; set; }
        /// <summary>The last error, for needsChoice and failed.</summary>
        [JsonProperty("error")] public ClassifiedError Error { get; set; }
        /// <summary>Dialog texts, for needsChoice (and the login offer for failed).</summary>
        [JsonProperty("recovery")] public RecoveryPrompt Recovery { get; set; }
        /// <summary>What was stale, when a cached session was reconciled.</summary>
        [JsonProperty("reconciliation")] public Reconciliation Reconciliation { get; set; }
        /// <summary>True when what the editor shows is cache the agent has not confirmed.</summary>
        [JsonProperty("stale")] public bool Stale { get; set; }
    }

    /// <summary>Params of <c>session/resume</c>.</summary>
    public sealed class ResumeParams
    {
        /// <summary>The workspace.</summary>
        [JsonProperty("workspace")] public WorkspaceRef Workspace { get; set; }
        /// <summary>Session to resume; null = the workspace's most recent (or a new one).</summary>
        [JsonProperty("sessionId", NullValueHandling = NullValueHandling.Ignore)] public string SessionId { get; set; }
        /// <summary>Agent name from <c>initializationOptions.agents</c>; null = the default agent.</summary>
        [JsonProperty("agent", NullValueHandling = NullValueHandling.Ignore)] public string Agent { get; set; }
        /// <summary>Work-done progress token, for <c>$/progress</c>.</summary>
        [JsonProperty("workDoneToken", NullValueHandling = NullValueHandling.Ignore)] public JToken WorkDoneToken { get; set; }
        /// <summary>The <c>seq</c> of the last <c>session/update</c> / <c>session/turnEnded</c> of this session the editor drew: through the daemon only the events after it are sent (docs/protocol.md, session/resume).</summary>
        [JsonProperty("afterSeq", NullValueHandling = NullValueHandling.Ignore)] public long? AfterSeq { get; set; }
        /// <summary>
        /// <c>false</c>: with no <see cref="SessionId"/> and nothing of the workspace cached, the
        /// answer is <see cref="ResumeOutcome.NothingToResume"/> and no agent is started
        /// (R-RESUME-11). Null (absent) means true: a new session is started when there is none.
        /// </summary>
        [JsonProperty("create", NullValueHandling = NullValueHandling.Ignore)] public bool? Create { get; set; }
    }

    /// <summary>Params of <c>session/recoveryChoice</c>.</summary>
    public sealed class RecoveryChoiceParams
    {
        /// <summary>The session the dialog was about.</summary>
        [JsonProperty("sessionId")] public string SessionId { get; set; }
        /// <summary><c>"retry"</c> or <c>"new"</c>.</summary>
        [JsonProperty("choice")] public string Choice { get; set; }
    }

    /// <summary><c>session/status</c> notification.</summary>
    public sealed class SessionStatus
    {
        /// <summary>The session.</summary>
        [JsonProperty("sessionId")] public string SessionId { get; set; }
        /// <summary>What the server is doing.</summary>
        [JsonProperty("state")] public SessionState State { get; set; }
        /// <summary>Current attempt, 1-based.</summary>
        [JsonProperty("attempt")] public int Attempt { get; set; }
        /// <summary>Attempts per round.</summary>
        [JsonProperty("maxAttempts")] public int MaxAttempts { get; set; }
        /// <summary>Milliseconds until the next attempt (waitingRetry, rateLimited).</summary>
        [JsonProperty("retryInMs")] public long? RetryInMs { get; set; }
        /// <summary>The kind of the failure that caused the wait, if any.</summary>
        [JsonProperty("errorKind")] public ErrorKind? ErrorKind { get; set; }
        /// <summary>The server's ready-made status text; shown only for a state this client does not know.</summary>
        [JsonProperty("message")] public string Message { get; set; }
        /// <summary>With <c>rateLimited</c>: another configured agent offered for a long rate-limit or quota wait (docs/protocol.md, session/status <c>handoff</c>); null otherwise.</summary>
        [JsonProperty("handoff")] public HandoffOffer Handoff { get; set; }
    }

    /// <summary><c>session/banner</c> notification.</summary>
    public sealed class Banner
    {
        /// <summary>Stable id; a later banner with the same id replaces it; <c>session/bannerCleared</c> removes it.</summary>
        [JsonProperty("id")] public string Id { get; set; }
        /// <summary>The session, when the banner is about one.</summary>
        [JsonProperty("sessionId")] public string SessionId { get; set; }
        /// <summary>Kind of banner.</summary>
        [JsonProperty("kind")] public BannerKind Kind { get; set; }
        /// <summary>Text to show.</summary>
        [JsonProperty("message")] public string Message { get; set; }
        /// <summary>Whether the user may close it.</summary>
        [JsonProperty("dismissible")] public bool Dismissible { get; set; }
    }

    /// <summary><c>session/bannerCleared</c> notification.</summary>
    public sealed class BannerCleared
    {
        /// <summary>Id of the banner to remove.</summary>
        [JsonProperty("id")] public string Id { get; set; }
    }

    /// <summary><c>session/expired</c> notification: a new session replaced an old one.</summary>
    public sealed class Expired
    {
        /// <summary>The session that is gone (its cache is archived, never deleted).</summary>
        [JsonProperty("previousSessionId")] public string PreviousSessionId { get; set; }
        /// <summary>The new session.</summary>
        [JsonProperty("sessionId")] public string SessionId { get; set; }
        /// <summary>The user's choice that replaced it (<c>new</c>, <c>newWithHistory</c>, <c>handoff:&lt;agent&gt;</c>); null when no choice did.</summary>
        [JsonProperty("choice")] public string Choice { get; set; }
        /// <summary>The new session's configured agent.</summary>
        [JsonProperty("agent")] public string Agent { get; set; }
        /// <summary>What was carried into the new session, when it was primed with the conversation; null for a blank start.</summary>
        [JsonProperty("carriedOver")] public CarriedOver CarriedOver { get; set; }
    }

    /// <summary><c>session/restored</c> notification: the cached snapshot, sent before the first attempt.</summary>
    public sealed class Restored
    {
        /// <summary>The cached session.</summary>
        [JsonProperty("sessionId")] public string SessionId { get; set; }
        /// <summary>The cached snapshot.</summary>
        [JsonProperty("snapshot")] public SessionSnapshot Snapshot { get; set; }
        /// <summary>True for a cached snapshot the agent has not confirmed yet; false for the transcript of a session live in the daemon, sent when this editor attaches to it without <c>afterSeq</c>.</summary>
        [JsonProperty("stale")] public bool Stale { get; set; }
        /// <summary>Where the transcript was read from when it is not Tether's cache (the agent's own session store, R-HIST-3); null for the cache.</summary>
        [JsonProperty("source")] public RestoredSource Source { get; set; }
    }

    /// <summary>One option of an agent's permission question (ACP <c>PermissionOption</c>).</summary>
    public sealed class PermissionOption
    {
        /// <summary>Id to answer with.</summary>
        [JsonProperty("optionId")] public string OptionId { get; set; }
        /// <summary>Label to show.</summary>
        [JsonProperty("name")] public string Name { get; set; }
        /// <summary>ACP kind: allow_once, allow_always, reject_once, reject_always.</summary>
        [JsonProperty("kind")] public string Kind { get; set; }
    }

    /// <summary>
    /// <c>session/requestPermission</c> (server → client request): an agent's
    /// <c>session/request_permission</c> forwarded as is (ACP schema: sessionId, toolCall, options).
    /// </summary>
    public sealed class PermissionRequest
    {
        /// <summary>The session.</summary>
        [JsonProperty("sessionId")] public string SessionId { get; set; }
        /// <summary>The ACP tool call the question is about (title, kind, toolCallId…); kept raw.</summary>
        [JsonProperty("toolCall")] public JObject ToolCall { get; set; }
        /// <summary>The agent's options, in its order.</summary>
        [JsonProperty("options")] public List<PermissionOption> Options { get; set; }
    }

    /// <summary>Params of <c>session/persist</c>.</summary>
    public sealed class PersistParams
    {
        /// <summary>The session.</summary>
        [JsonProperty("sessionId")] public string SessionId { get; set; }
        /// <summary>Its workspace.</summary>
        [JsonProperty("workspace")] public WorkspaceRef Workspace { get; set; }
        /// <summary>Why: <c>timer</c>, <c>shutdown</c>, <c>edit</c> or a milestone (see <see cref="PersistTriggers"/>).</summary>
        [JsonProperty("trigger")] public string Trigger { get; set; }
        /// <summary>What the editor shows.</summary>
        [JsonProperty("snapshot")] public SessionSnapshot Snapshot { get; set; }
    }

    /// <summary>The <c>trigger</c> values of <c>session/persist</c> (docs/protocol.md; R-STORE-10).</summary>
    public static class PersistTriggers
    {
        /// <summary>Periodic save while a session is active; coalesced by the server to one write per 5 s.</summary>
        public const string Timer = "timer";
        /// <summary>Editor closing; written and made durable before the reply.</summary>
        public const string Shutdown = "shutdown";
        /// <summary>Draft edits; coalesced like <see cref="Timer"/>.</summary>
        public const string Edit = "edit";
    }

    /// <summary>Result of <c>session/persist</c>.</summary>
    public sealed class PersistResult
    {
        /// <summary>True when written (and durable) before the reply.</summary>
        [JsonProperty("saved")] public bool Saved { get; set; }
        /// <summary>True when merged into a pending write (written within 5 s or at shutdown).</summary>
        [JsonProperty("coalesced")] public bool Coalesced { get; set; }
        /// <summary>Bytes written.</summary>
        [JsonProperty("bytes")] public long Bytes { get; set; }
        /// <summary>Write time in milliseconds.</summary>
        [JsonProperty("durationMs")] public double DurationMs { get; set; }
        /// <summary>Cache schema version written.</summary>
        [JsonProperty("schemaVersion")] public int SchemaVersion { get; set; }
    }

    /// <summary>One chat turn of a <see cref="SessionSnapshot"/>.</summary>
    public sealed class ChatTurn
    {
        /// <summary>Turn id.</summary>
        [JsonProperty("id")] public string Id { get; set; }
        /// <summary><c>user</c>, <c>assistant</c> or <c>status</c>.</summary>
        [JsonProperty("role")] public string Role { get; set; }
        /// <summary>Final text.</summary>
        [JsonProperty("text")] public string Text { get; set; }
        /// <summary>RFC 3339 UTC.</summary>
        [JsonProperty("timestampUtc")] public string TimestampUtc { get; set; }
        /// <summary>False while still streaming.</summary>
        [JsonProperty("complete")] public bool Complete { get; set; }
        /// <summary>Fields this client does not model (linkedExecId, metadata…), kept so a round trip loses nothing.</summary>
        [JsonExtensionData] public IDictionary<string, JToken> Extra { get; set; }
    }

    /// <summary>
    /// The editor's view of a session (docs/protocol.md <c>SessionSnapshot</c>). Only chat turns are
    /// modelled; every other section (execTurns, diffSessions, approvals, uiState, context,
    /// telemetry) is carried verbatim in <see cref="Extra"/>, so what the server restored is
    /// persisted back unchanged.
    /// </summary>
    public sealed class SessionSnapshot
    {
        /// <summary>Chat turns, oldest first.</summary>
        [JsonProperty("chatTurns")] public List<ChatTurn> ChatTurns { get; set; }
        /// <summary>The other sections, verbatim.</summary>
        [JsonExtensionData] public IDictionary<string, JToken> Extra { get; set; }

        /// <summary>An empty snapshot (no turns) for a fresh session.</summary>
        public static SessionSnapshot Empty(string workingDir)
        {
            var s = new SessionSnapshot { ChatTurns = new List<ChatTurn>(), Extra = new Dictionary<string, JToken>() };
            s.Extra["execTurns"] = new JArray();
            s.Extra["diffSessions"] = new JArray();
            s.Extra["approvals"] = new JObject(new JProperty("pending", new JArray()));
            s.Extra["uiState"] = new JObject(new JProperty("isStreamErrorVisible", false));
            s.Extra["context"] = new JObject(new JProperty("workingDir", workingDir));
            return s;
        }
    }

    /// <summary>One cached session of <c>session/list</c>.</summary>
    public sealed class SessionSummary
    {
        /// <summary>Session id.</summary>
        [JsonProperty("sessionId")] public string SessionId { get; set; }
        /// <summary>Agent name.</summary>
        [JsonProperty("agent")] public string Agent { get; set; }
        /// <summary>Title, when known.</summary>
        [JsonProperty("title")] public string Title { get; set; }
        /// <summary>RFC 3339 UTC.</summary>
        [JsonProperty("updatedUtc")] public string UpdatedUtc { get; set; }
        /// <summary>Number of turns (0 for an entry of an agent's own store: not counted).</summary>
        [JsonProperty("turnCount")] public int TurnCount { get; set; }
        /// <summary>The first user turn on one line (at most 100 characters), when cached.</summary>
        [JsonProperty("firstPrompt")] public string FirstPrompt { get; set; }
        /// <summary>The session's agent runs in this server (the daemon).</summary>
        [JsonProperty("live")] public bool Live { get; set; }
        /// <summary>A prompt turn runs (a rate-limit wait included).</summary>
        [JsonProperty("turnRunning")] public bool TurnRunning { get; set; }
        /// <summary>How many editors are attached.</summary>
        [JsonProperty("clients")] public int Clients { get; set; }
        /// <summary>With <c>all: true</c>: the agent's own store the entry was found in (<c>claude</c>, <c>codex</c>, <c>gemini</c>, <c>copilot</c>, <c>opencode</c>) or <c>acp</c> (listed by a running agent, R-HIST-7); null for Tether's cache.</summary>
        [JsonProperty("source")] public string Source { get; set; }
        /// <summary>The session's file in that store, when there is one.</summary>
        [JsonProperty("path")] public string Path { get; set; }
        /// <summary>Size of that file in bytes.</summary>
        [JsonProperty("sizeBytes")] public long? SizeBytes { get; set; }
        /// <summary>With <c>sync.remote</c> set: the other machine of the user's that last pushed turns of the session (R-SYNC-1); null for this machine's.</summary>
        [JsonProperty("fromMachine")] public string FromMachine { get; set; }
        /// <summary>When <see cref="FromMachine"/> pushed them (RFC 3339 UTC), when known.</summary>
        [JsonProperty("fromMachineAt")] public string FromMachineAt { get; set; }
    }

    /// <summary>Result of <c>session/list</c>.</summary>
    public sealed class ListResult
    {
        /// <summary>Cached sessions of the workspace.</summary>
        [JsonProperty("sessions")] public List<SessionSummary> Sessions { get; set; }
        /// <summary>With <c>limit</c>: the opaque cursor of the next page, sent back as <c>cursor</c>; null on the last page.</summary>
        [JsonProperty("nextCursor")] public string NextCursor { get; set; }
    }

    /// <summary>Params of <c>session/clear</c> ("Clear Saved Session").</summary>
    public sealed class ClearParams
    {
        /// <summary>The workspace.</summary>
        [JsonProperty("workspace")] public WorkspaceRef Workspace { get; set; }
        /// <summary>One session, or null for all of the workspace.</summary>
        [JsonProperty("sessionId", NullValueHandling = NullValueHandling.Ignore)] public string SessionId { get; set; }
    }

    /// <summary>Result of <c>session/clear</c>.</summary>
    public sealed class ClearResult
    {
        /// <summary>How many sessions were removed.</summary>
        [JsonProperty("removed")] public int Removed { get; set; }
    }

    /// <summary><c>telemetry/event</c> notification (R-STORE-9 event names).</summary>
    public sealed class TelemetryEvent
    {
        /// <summary>e.g. <c>session.persist.save</c>, <c>session.resume.partial</c>.</summary>
        [JsonProperty("name")] public string Name { get; set; }
        /// <summary>Event properties.</summary>
        [JsonProperty("properties")] public JObject Properties { get; set; }
    }

    /// <summary>Method names of the editor protocol.</summary>
    public static class Methods
    {
        /// <summary>Request: resume (or start) the workspace's session.</summary>
        public const string Resume = "session/resume";
        /// <summary>Request: the user's answer to the recovery dialog.</summary>
        public const string RecoveryChoice = "session/recoveryChoice";
        /// <summary>Request: save the editor's snapshot.</summary>
        public const string Persist = "session/persist";
        /// <summary>Request: cached sessions of a workspace.</summary>
        public const string List = "session/list";
        /// <summary>Request: remove cached sessions.</summary>
        public const string Clear = "session/clear";
        /// <summary>Request: a prompt turn.</summary>
        public const string Prompt = "session/prompt";
        /// <summary>Notification (client → server): cancel the running prompt turn.</summary>
        public const string Cancel = "session/cancel";
        /// <summary>Notification: cached snapshot before the first attempt.</summary>
        public const string Restored = "session/restored";
        /// <summary>Notification: progress of resume and waits.</summary>
        public const string Status = "session/status";
        /// <summary>Notification: show a banner.</summary>
        public const string Banner = "session/banner";
        /// <summary>Notification: remove a banner.</summary>
        public const string BannerCleared = "session/bannerCleared";
        /// <summary>Notification: a new session replaced an old one.</summary>
        public const string Expired = "session/expired";
        /// <summary>Notification: an ACP session update, forwarded.</summary>
        public const string Update = "session/update";
        /// <summary>Notification: a telemetry event.</summary>
        public const string Telemetry = "telemetry/event";
        /// <summary>Request: older chat turns of a cached session.</summary>
        public const string History = "session/history";
        /// <summary>Request: continue a session's conversation with another configured agent.</summary>
        public const string Handoff = "session/handoff";
        /// <summary>Request: every conversation Tether can see whose title or text holds every word of a query (R-INDEX-8).</summary>
        public const string Search = "session/search";
        /// <summary>Request: take a session over from the machine of the user's that holds it (R-SYNC-7).</summary>
        public const string ContinueHere = "session/continueHere";
        /// <summary>Notification: a prompt turn ended (to every attached editor).</summary>
        public const string TurnEnded = "session/turnEnded";
        /// <summary>Notification: a permission question was settled.</summary>
        public const string PermissionResolved = "session/permissionResolved";
        /// <summary>Notification (from the forwarder): a new daemon took the session back.</summary>
        public const string Reattached = "session/reattached";
        /// <summary>Request (server → client): an agent's permission question.</summary>
        public const string RequestPermission = "session/requestPermission";
        /// <summary>Request (server → client): LSP's standard question, used when the client lacks <c>recoveryDialog</c>.</summary>
        public const string ShowMessageRequest = "window/showMessageRequest";
    }
}
