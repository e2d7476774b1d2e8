using System;
using System.Collections.Generic;
using System.Globalization;
using System.Linq;
using Newtonsoft.Json.Linq;
using Tether.Client.Core.Protocol;

namespace Tether.Client.Core.Ui
{
    /// <summary>
    /// The tool window's view model: the conversation as a list of items (the restored transcript,
    /// then live updates), whether it is stale, older turns, the status line, the prompt box, an
    /// inline permission question and the handoff offer. The WPF window binds to it and decides
    /// nothing; <see cref="TetherSessionController"/> feeds it the server's messages.
    /// <para>
    /// Rules (the VS Code extension's, editors/vscode/src/core/transcript.ts): a streamed chunk
    /// extends the open item of its kind; a tool call reported again while it runs is the same
    /// item, and a <c>tool_call_update</c>'s <c>content</c> replaces its output (ACP); each
    /// <c>plan</c> update is the whole plan and replaces the plan of the same turn in place; replayed updates
    /// (<c>replay: true</c>, a <c>session/load</c>) are drawn only when nothing was restored;
    /// Send is enabled only while the session is live and no turn runs.
    /// </para>
    /// Thread-safe: every method takes one lock; readers get copies. <see cref="Changed"/> is
    /// raised after each change, outside the lock, on the caller's thread.
    /// </summary>
    public sealed class ConversationView
    {
        /// <summary>Characters of tool output kept per tool call (its tail), as the VS Code extension keeps.</summary>
        public const int MaxToolOutput = 32 * 1024;

        /// <summary>The decline button of the handoff offer (docs/protocol.md, initialize: "Keep Waiting").</summary>
        public const string KeepWaitingTitle = "Keep Waiting";

        private readonly object gate = new object();
        private readonly IClock clock;
        private List<ConversationItem> items = new List<ConversationItem>();
        private readonly Dictionary<string, ConversationItem> byId = new Dictionary<string, ConversationItem>();
        private readonly Dictionary<string, string> tools = new Dictionary<string, string>();
        private ConversationItem openItem;
        private int counter;
        private string sessionId;
        private bool stale;
        private RestoredSource source;
        private long chatBase;
        private OlderTurns older = new OlderTurns { State = OlderState.None };
        private StatusLine status = new StatusLine { State = "idle", Text = StatusText.NoSession };
        private bool live;
        private bool busy;
        private PermissionView permission;
        private HandoffView handoff;
        private HeldElsewhereOffer held;
        private int revision;

        /// <summary>Creates an empty view (no session).</summary>
        public ConversationView(IClock clock)
        {
            this.clock = clock ?? SystemClock.Instance;
        }

        /// <summary>Raised after every change (on the thread that made it; WPF marshals to its dispatcher).</summary>
        public event EventHandler Changed;

        /// <summary>The session shown; null before any.</summary>
        public string SessionId { get { lock (gate) return sessionId; } }
        /// <summary>True while the transcript is a saved one the agent has not confirmed.</summary>
        public bool Stale { get { lock (gate) return stale; } }
        /// <summary>The agent's own store the transcript was read from; null for Tether's cache.</summary>
        public RestoredSource Source { get { lock (gate) return source; } }
        /// <summary>A prompt turn runs as far as the view knows (Cancel is offered).</summary>
        public bool TurnRunning { get { lock (gate) return busy; } }
        /// <summary>Absolute index of the first chat turn shown (<c>chatTurnsBase</c>).</summary>
        public long Base { get { lock (gate) return chatBase; } }
        /// <summary>Increases with every change.</summary>
        public int Revision { get { lock (gate) return revision; } }
        /// <summary>A copy of the items, oldest first.</summary>
        public List<ConversationItem> Items { get { lock (gate) return items.Select(i => i.Copy()).ToList(); } }
        /// <summary>Older turns.</summary>
        public OlderTurns Older { get { lock (gate) return new OlderTurns { State = older.State, Count = older.Count, Message = older.Message }; } }
        /// <summary>The status line.</summary>
        public StatusLine Status { get { lock (gate) return new StatusLine { State = status.State, Text = status.Text }; } }
        /// <summary>The prompt box.</summary>
        public PromptState Prompt { get { lock (gate) return ComputePrompt(); } }
        /// <summary>The open permission question, or null.</summary>
        public PermissionView Permission { get { lock (gate) return permission; } }
        /// <summary>The handoff offer, or null.</summary>
        public HandoffView Handoff { get { lock (gate) return handoff; } }
        /// <summary>The "Continue Here" offer of the session shown, held by another of the user's machines (R-SYNC-7), or null.</summary>
        public HeldElsewhereOffer HeldElsewhere { get { lock (gate) return held != null && held.SessionId == sessionId ? held : null; } }

        /// <summary>
        /// <c>session/restored</c>: the saved transcript, shown at once; <paramref name="stale"/> marks
        /// it unconfirmed (a cache, or an agent's own store: <paramref name="src"/>).
        /// </summary>
        public void Restored(string session, SessionSnapshot snapshot, RestoredSource src, bool stale)
        {
            Change(() =>
            {
                Clear(session);
                source = src;
                this.stale = stale;
                var execs = snapshot != null && snapshot.Extra != null && snapshot.Extra.ContainsKey("execTurns") ? snapshot.Extra["execTurns"] as JArray : null;
                items = FromTurns(snapshot != null ? snapshot.ChatTurns : null, execs);
                foreach (var i in items) byId[i.Id] = i;
                JToken b;
                chatBase = snapshot != null && snapshot.Extra != null && snapshot.Extra.TryGetValue("chatTurnsBase", out b) && b.Type == JTokenType.Integer ? Math.Max(0, (long)b) : 0;
                older = chatBase > 0 ? new OlderTurns { State = OlderState.Available, Count = chatBase } : new OlderTurns { State = OlderState.None };
                live = false;
                status = stale
                    ? new StatusLine { State = "resuming", Text = "Showing the saved transcript; resuming the session" + "\u2026" }
                    : new StatusLine { State = "resuming", Text = "Attaching to the session live in the Tether daemon" + "\u2026" };
            });
        }

        /// <summary>A new session (started, or replacing an expired one): an empty conversation, or the carried-over marker line.</summary>
        public void StartedSession(string session, string marker)
        {
            Change(() =>
            {
                if (sessionId == session && marker == null) return;
                Clear(session);
                if (!string.IsNullOrEmpty(marker)) Add(new ConversationItem { Id = NextId("s"), Kind = ItemKind.Status, Text = marker });
            });
        }

        /// <summary>The agent confirmed the session (a resume succeeded, or the stale banner was cleared): the stale mark goes.</summary>
        public void Confirmed()
        {
            Change(() => stale = false);
        }

        /// <summary>
        /// A <c>session/update</c> params object (<c>{sessionId, update, replay, seq}</c>). Returns
        /// whether it was for the session shown (or adopted as it: events that come before any
        /// transcript, as a daemon replays a running turn before its answer to the resume).
        /// </summary>
        public bool Update(JObject p)
        {
            var update = p["update"] as JObject;
            var sid = (string)(p["sessionId"] as JValue);
            if (update == null || sid == null) return false;
            bool replay = p["replay"] != null && p["replay"].Type == JTokenType.Boolean && (bool)p["replay"];
            bool mine = false;
            Change(() =>
            {
                if (sessionId != null && sid != sessionId) return;
                if (sessionId == null) sessionId = sid;
                mine = true;
                if (replay && items.Any(i => i.Restored)) return;
                switch ((string)(update["sessionUpdate"] as JValue))
                {
                    case "user_message_chunk":
                        // A live prompt echo is a turn another editor (or this window before a restart) started.
                        if (!replay) busy = true;
                        Chunk(ItemKind.User, BlockText(update["content"]));
                        break;
                    case "agent_message_chunk":
                        Chunk(ItemKind.Agent, BlockText(update["content"]));
                        break;
                    case "agent_thought_chunk":
                        Chunk(ItemKind.Thought, BlockText(update["content"]));
                        break;
                    case "tool_call":
                        ToolCall(update);
                        break;
                    case "tool_call_update":
                        ToolCallUpdate(update);
                        break;
                    case "plan":
                        Plan(update);
                        break;
                }
            });
            return mine;
        }

        /// <summary>The user sent a prompt from this window (agents do not echo it back).</summary>
        public void UserPrompt(string text)
        {
            Change(() =>
            {
                CloseOpen();
                Add(new ConversationItem { Id = NextId("u"), Kind = ItemKind.User, Text = text ?? "", TimestampUtc = Now() });
                busy = true;
            });
        }

        /// <summary>The prompt turn ended: its stop reason, or <paramref name="error"/> when it failed. A stop other than <c>end_turn</c> gets a line saying so.</summary>
        public void TurnEnded(string stopReason, string error)
        {
            Change(() =>
            {
                CloseOpen();
                busy = false;
                permission = null;
                if (!string.IsNullOrEmpty(error)) Add(new ConversationItem { Id = NextId("s"), Kind = ItemKind.Status, Text = "The prompt failed: " + error });
                else if (!string.IsNullOrEmpty(stopReason) && stopReason != "end_turn") Add(new ConversationItem { Id = NextId("s"), Kind = ItemKind.Status, Text = StopText(stopReason) });
            });
        }

        /// <summary>
        /// <c>session/status</c> with the status text the presenter made of it; the prompt box opens
        /// on <c>ready</c> (and stays usable for Cancel while the agent is silent). A
        /// <c>rateLimited</c> status with a handoff offer shows the offer; any other status removes it.
        /// </summary>
        public void OnStatus(SessionStatus s, string text)
        {
            Change(() =>
            {
                var state = s.State == SessionState.Unknown ? "other" : WireEnumConverter.ToWire(s.State);
                status = new StatusLine { State = state, Text = text ?? s.Message ?? state };
                // agentSilent is mid-turn: the session is live and Cancel stays available.
                live = s.State == SessionState.Ready || s.State == SessionState.AgentSilent || (s.State == SessionState.Unknown && live);
                if (s.Handoff != null && !string.IsNullOrEmpty(s.Handoff.Agent))
                {
                    handoff = new HandoffView
                    {
                        Agent = s.Handoff.Agent,
                        Question = s.Handoff.Question ?? "",
                        AcceptTitle = string.IsNullOrEmpty(s.Handoff.Title) ? "Continue with " + s.Handoff.Agent : s.Handoff.Title,
                        DeclineTitle = KeepWaitingTitle,
                    };
                }
                else if (s.State != SessionState.RateLimited)
                {
                    handoff = null;
                }
            });
        }

        /// <summary>The rate-limit countdown's refreshed text ("Rate limited, resuming in 39 s"); ignored unless the status line shows a rate-limit wait.</summary>
        public void Countdown(string text)
        {
            Change(() =>
            {
                if (status.State == "rateLimited" && !string.IsNullOrEmpty(text)) status = new StatusLine { State = status.State, Text = text };
            });
        }

        /// <summary>Adds a line of Tether's own at the end of the conversation.</summary>
        public void Note(string text)
        {
            Change(() =>
            {
                CloseOpen();
                Add(new ConversationItem { Id = NextId("s"), Kind = ItemKind.Status, Text = text });
            });
        }

        /// <summary>
        /// Another of the user's machines holds <paramref name="offer"/>'s session (its
        /// <c>heldElsewhere</c> banner, or a prompt refused so): the window offers "Continue Here"
        /// while it shows that session, until the server clears the banner. Another session's
        /// offer does not replace the offer of the session shown.
        /// </summary>
        public void ShowHeldElsewhere(HeldElsewhereOffer offer)
        {
            Change(() =>
            {
                if (held == null || held.SessionId != sessionId || offer.SessionId == sessionId) held = offer;
            });
        }

        /// <summary>The server cleared the <c>heldElsewhere</c> banner of <paramref name="session"/> (taken over here): its offer goes.</summary>
        public void ClearHeldElsewhere(string session)
        {
            Change(() =>
            {
                if (held != null && held.SessionId == session) held = null;
            });
        }

        /// <summary>The user declined the handoff offer ("Keep Waiting"): it goes until the server offers it again.</summary>
        public void DismissHandoff()
        {
            Change(() => handoff = null);
        }

        /// <summary>A resume ended with the session live (<paramref name="session"/>), or no session (null).</summary>
        public void SetLive(string session)
        {
            Change(() =>
            {
                live = session != null;
                handoff = null;
                // A replayed history (session/load) has no turn end: its last item is complete.
                if (!busy) CloseOpen();
                status = session != null ? new StatusLine { State = "live", Text = "Session is live" } : new StatusLine { State = "idle", Text = StatusText.NoSession };
            });
        }

        /// <summary>The server needs the user's recovery choice: the status line says so and Send waits.</summary>
        public void NeedsChoice(string message)
        {
            Change(() =>
            {
                live = false;
                status = new StatusLine { State = "needsChoice", Text = message + ": choose what to do in the dialog" };
            });
        }

        /// <summary>The session could not be resumed (or the server refused a request): Send waits for a new resume.</summary>
        public void Failed(string message)
        {
            Change(() =>
            {
                live = false;
                busy = false;
                status = new StatusLine { State = "failed", Text = message };
            });
        }

        /// <summary>The status line while a turn of this window waits for the server connection to come back.</summary>
        public const string ReconnectingText = "Reconnecting to the Tether daemon; the turn goes on there";

        /// <summary>
        /// The server connection was lost while this window's turn runs: through the daemon the turn
        /// goes on, so it stays open (its rest comes with the next resume) and the status line says so.
        /// </summary>
        public void Reconnecting()
        {
            Change(() =>
            {
                live = false;
                status = new StatusLine { State = "resuming", Text = ReconnectingText };
            });
        }

        /// <summary>The server connection is gone.</summary>
        public void ServerStopped()
        {
            Change(() =>
            {
                live = false;
                busy = false;
                permission = null;
                status = new StatusLine { State = "stopped", Text = "Tether server is not running" };
            });
        }

        /// <summary>Shows a permission question inline; null removes it.</summary>
        public void SetPermission(PermissionView p)
        {
            Change(() => permission = p);
        }

        /// <summary>Removes the permission question with <paramref name="key"/> if it is the one shown.</summary>
        public void ClosePermission(int key)
        {
            Change(() =>
            {
                if (permission != null && permission.Key == key) permission = null;
            });
        }

        /// <summary>Whether older turns can be asked for now; marks them loading when so and returns the <c>beforeTurn</c> to ask with.</summary>
        public long? BeginLoadOlder()
        {
            long? before = null;
            Change(() =>
            {
                if (older.State != OlderState.Available || sessionId == null) return;
                older = new OlderTurns { State = OlderState.Loading, Count = older.Count };
                before = chatBase;
            });
            return before;
        }

        /// <summary>A <c>session/history</c> page: older chat turns, oldest first, drawn above; <paramref name="newBase"/> is the server's <c>chatTurnsBase</c>.</summary>
        public void OlderLoaded(List<ChatTurn> turns, long? newBase)
        {
            Change(() =>
            {
                turns = turns ?? new List<ChatTurn>();
                var page = FromTurns(turns, null).Where(i => !byId.ContainsKey(i.Id)).ToList();
                chatBase = newBase.HasValue && newBase.Value < chatBase ? newBase.Value : Math.Max(0, chatBase - turns.Count);
                foreach (var i in page) byId[i.Id] = i;
                items = page.Concat(items).ToList();
                older = chatBase > 0 && turns.Count > 0 ? new OlderTurns { State = OlderState.Available, Count = chatBase } : new OlderTurns { State = OlderState.None };
            });
        }

        /// <summary>Older turns cannot be loaded (<paramref name="message"/> says why).</summary>
        public void OlderUnavailable(string message)
        {
            Change(() => older = new OlderTurns { State = OlderState.Unavailable, Message = message });
        }

        // --- internals (called under the lock) ---

        private void Change(Action a)
        {
            lock (gate)
            {
                a();
                revision++;
            }
            var h = Changed;
            if (h != null) h(this, EventArgs.Empty);
        }

        private PromptState ComputePrompt()
        {
            // "idle": the server runs and no session is live yet (R-RESUME-11): Send stays open,
            // a prompt starts the session (TetherSessionController.SendAsync resumes first).
            if (!live && status.State != "idle")
            {
                string reason;
                switch (status.State)
                {
                    case "resuming": reason = "The session is resuming; the prompt box opens when the agent confirms it."; break;
                    case "waitingRetry":
                    case "rateLimited": reason = Sentence(status.Text) + " The prompt box opens when the session is back."; break;
                    case "needsChoice": reason = "Tether needs your choice first (see the dialog)."; break;
                    case "failed": reason = "The session could not be resumed. Run \"Tether: Resume Session\" to try again."; break;
                    case "stopped": reason = "The Tether server is not running (see \"Tether: Show Logs\")."; break;
                    default: reason = "No session is live. Run \"Tether: Resume Session\"."; break;
                }
                return new PromptState { CanSend = false, CanCancel = busy, Reason = reason };
            }
            if (busy) return new PromptState { CanSend = false, CanCancel = true, Reason = "The agent is answering; Cancel stops the turn." };
            return new PromptState { CanSend = true, CanCancel = false, Reason = "" };
        }

        private void Clear(string session)
        {
            sessionId = session;
            source = null;
            items = new List<ConversationItem>();
            byId.Clear();
            tools.Clear();
            openItem = null;
            stale = false;
            busy = false;
            permission = null;
            chatBase = 0;
            older = new OlderTurns { State = OlderState.None };
        }

        private List<ConversationItem> FromTurns(List<ChatTurn> turns, JArray execs)
        {
            var output = new List<ConversationItem>();
            var execById = new Dictionary<string, JObject>();
            if (execs != null)
            {
                foreach (var e in execs.OfType<JObject>())
                {
                    var id = (string)(e["execId"] as JValue);
                    if (!string.IsNullOrEmpty(id) && !execById.ContainsKey(id)) execById[id] = e;
                }
            }
            var placed = new HashSet<string>();
            int n = 0;
            foreach (var t in turns ?? new List<ChatTurn>())
            {
                n++;
                if (t == null || t.Text == null) continue;
                output.Add(new ConversationItem
                {
                    Id = "t:" + (string.IsNullOrEmpty(t.Id) ? chatBase + "-" + n : t.Id),
                    Kind = t.Role == "user" ? ItemKind.User : t.Role == "assistant" ? ItemKind.Agent : ItemKind.Status,
                    Text = t.Text,
                    Restored = true,
                    TimestampUtc = t.TimestampUtc,
                });
                JToken linked;
                JObject exec;
                if (t.Extra != null && t.Extra.TryGetValue("linkedExecId", out linked) && linked.Type == JTokenType.String
                    && execById.TryGetValue((string)linked, out exec) && placed.Add((string)linked))
                {
                    output.Add(ExecItem(exec));
                }
            }
            foreach (var e in execById)
            {
                if (placed.Add(e.Key)) output.Add(ExecItem(e.Value));
            }
            return output;
        }

        private ConversationItem ExecItem(JObject e)
        {
            var execId = (string)e["execId"];
            var id = "x:" + execId;
            tools[execId] = id;
            var header = (string)(e["header"] as JValue);
            var command = (string)(e["command"] as JValue);
            return new ConversationItem
            {
                Id = id,
                Kind = ItemKind.Tool,
                Text = "",
                Restored = true,
                Tool = new ToolView
                {
                    ToolCallId = execId,
                    Title = !string.IsNullOrEmpty(header) && !string.IsNullOrEmpty(command) ? header + ": " + command : header ?? command ?? execId,
                    Kind = "execute",
                    Status = (string)(e["status"] as JValue) ?? "pending",
                    Output = Tail((string)(e["buffer"] as JValue) ?? ""),
                },
            };
        }

        private string NextId(string prefix)
        {
            return prefix + ":" + (++counter).ToString(CultureInfo.InvariantCulture);
        }

        private string Now()
        {
            return clock.UtcNow.UtcDateTime.ToString("yyyy-MM-dd'T'HH:mm:ss.fff'Z'", CultureInfo.InvariantCulture);
        }

        private void Add(ConversationItem item)
        {
            items.Add(item);
            byId[item.Id] = item;
        }

        private void CloseOpen()
        {
            if (openItem != null) openItem.Open = false;
            openItem = null;
        }

        private void Chunk(ItemKind kind, string text)
        {
            if (string.IsNullOrEmpty(text)) return;
            if (openItem != null && openItem.Kind == kind)
            {
                openItem.Text += text;
                return;
            }
            CloseOpen();
            var item = new ConversationItem { Id = NextId(kind.ToString().Substring(0, 1).ToLowerInvariant()), Kind = kind, Text = text, Open = true, TimestampUtc = Now() };
            openItem = item;
            Add(item);
        }

        private void ToolCall(JObject u)
        {
            CloseOpen();
            var callId = (string)(u["toolCallId"] as JValue) ?? NextId("call");
            var tool = new ToolView
            {
                ToolCallId = callId,
                Title = NonEmpty((string)(u["title"] as JValue)) ?? callId,
                Kind = (string)(u["kind"] as JValue) ?? "other",
                Status = (string)(u["status"] as JValue) ?? "pending",
                Output = Tail(ContentText(u["content"])),
                Diffs = Diffs(u["content"]),
                FinishedByTether = IsSynthetic(u),
            };
            string existing;
            ConversationItem item;
            if (tools.TryGetValue(callId, out existing) && byId.TryGetValue(existing, out item) && item.Tool != null
                && item.Tool.Status != "completed" && item.Tool.Status != "failed")
            {
                // Reported again while it runs: the same call.
                item.Tool = tool;
                return;
            }
            // An id reused after the call finished (some agents number per turn) is a new call.
            var id = byId.ContainsKey("x:" + callId) ? "x:" + callId + "#" + (++counter).ToString(CultureInfo.InvariantCulture) : "x:" + callId;
            tools[callId] = id;
            Add(new ConversationItem { Id = id, Kind = ItemKind.Tool, Text = "", Tool = tool });
        }

        private void ToolCallUpdate(JObject u)
        {
            var callId = (string)(u["toolCallId"] as JValue);
            if (callId == null) return;
            string itemId;
            ConversationItem item;
            if (!tools.TryGetValue(callId, out itemId) || !byId.TryGetValue(itemId, out item) || item.Tool == null)
            {
                // An update of a call the view never saw (e.g. from before a restart): shown as one.
                ToolCall(u);
                return;
            }
            var t = item.Tool;
            var title = NonEmpty((string)(u["title"] as JValue));
            if (title != null) t.Title = title;
            if (u["kind"] is JValue && u["kind"].Type == JTokenType.String) t.Kind = (string)u["kind"];
            if (u["status"] is JValue && u["status"].Type == JTokenType.String) t.Status = (string)u["status"];
            if (u["content"] is JArray)
            {
                // ACP: content in an update replaces the tool call's content.
                t.Output = Tail(ContentText(u["content"]));
                t.Diffs = Diffs(u["content"]);
            }
            if (IsSynthetic(u)) t.FinishedByTether = true;
        }

        private void Plan(JObject u)
        {
            CloseOpen();
            var entries = (u["entries"] as JArray ?? new JArray()).OfType<JObject>().Select(e => new PlanEntryView
            {
                Content = (string)(e["content"] as JValue) ?? "",
                Status = (string)(e["status"] as JValue) ?? "pending",
                Priority = (string)(e["priority"] as JValue) ?? "medium",
            }).ToList();
            // ACP: each plan update is the whole plan. The turn's plan is updated where it first
            // showed (tool calls come between its updates), not drawn again.
            var lastUser = items.FindLastIndex(i => i.Kind == ItemKind.User);
            var current = items.Skip(lastUser + 1).LastOrDefault(i => i.Kind == ItemKind.Plan);
            if (current != null)
            {
                current.Plan = entries;
                return;
            }
            Add(new ConversationItem { Id = NextId("p"), Kind = ItemKind.Plan, Text = "", Plan = entries });
        }

        private static string Sentence(string text)
        {
            text = (text ?? "").TrimEnd();
            return text.Length > 0 && ".?!".IndexOf(text[text.Length - 1]) >= 0 ? text : text + ".";
        }

        /// <summary>The title and kind of a tool call the view shows (for a permission question that names the call only by id), or null.</summary>
        public ToolView FindTool(string toolCallId)
        {
            lock (gate)
            {
                string id;
                ConversationItem item;
                if (toolCallId == null || !tools.TryGetValue(toolCallId, out id) || !byId.TryGetValue(id, out item) || item.Tool == null) return null;
                return item.Tool.Copy();
            }
        }

        private static string NonEmpty(string s)
        {
            return string.IsNullOrEmpty(s) ? null : s;
        }

        private static string Tail(string text)
        {
            return text.Length > MaxToolOutput ? "\u2026" + text.Substring(text.Length - MaxToolOutput) : text;
        }

        private static bool IsSynthetic(JObject u)
        {
            var s = u.SelectToken("_meta.tether.synthetic");
            return s != null && s.Type == JTokenType.Boolean && (bool)s;
        }

        /// <summary>The text of one ACP content block (text, a resource's text, a resource link's name, an image).</summary>
        public static string BlockText(JToken c)
        {
            var o = c as JObject;
            if (o == null) return "";
            switch ((string)(o["type"] as JValue))
            {
                case "text": return (string)(o["text"] as JValue) ?? "";
                case "resource_link": return o["name"] is JValue ? "[" + (string)o["name"] + "]" : "";
                case "resource": return (string)(o.SelectToken("resource.text") as JValue) ?? "";
                case "image": return "[image]";
                default: return "";
            }
        }

        /// <summary>The text of a tool call's <c>content</c> (content blocks; diffs and terminals as one line each).</summary>
        public static string ContentText(JToken content)
        {
            var a = content as JArray;
            if (a == null) return "";
            var parts = new List<string>();
            foreach (var c in a.OfType<JObject>())
            {
                string t = "";
                switch ((string)(c["type"] as JValue))
                {
                    case "content": t = BlockText(c["content"]); break;
                    case "terminal": t = "[terminal " + (string)(c["terminalId"] as JValue) + "]"; break;
                }
                if (t != "") parts.Add(t);
            }
            return string.Join("\n", parts);
        }

        private static List<DiffView> Diffs(JToken content)
        {
            var a = content as JArray;
            if (a == null) return new List<DiffView>();
            return a.OfType<JObject>().Where(c => (string)(c["type"] as JValue) == "diff").Select(c => new DiffView
            {
                Path = (string)(c["path"] as JValue) ?? "?",
                OldText = (string)(c["oldText"] as JValue),
                NewText = (string)(c["newText"] as JValue) ?? "",
            }).ToList();
        }

        /// <summary>The line shown for a stop reason other than <c>end_turn</c>.</summary>
        public static string StopText(string stopReason)
        {
            switch (stopReason)
            {
                case "cancelled": return "Turn cancelled.";
                case "max_tokens": return "The agent stopped: it reached its token limit.";
                case "max_turn_requests": return "The agent stopped: it reached its request limit for this turn.";
                case "refusal": return "The agent refused to continue.";
                default: return "The turn ended: " + stopReason + ".";
            }
        }
    }
}
