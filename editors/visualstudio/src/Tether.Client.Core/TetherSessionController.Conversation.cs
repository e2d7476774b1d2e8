using System;
using System.Collections.Generic;
using System.Linq;
using System.Threading;
using System.Threading.Tasks;
using Newtonsoft.Json.Linq;
using Tether.Client.Core.Protocol;
using Tether.Client.Core.Rpc;
using Tether.Client.Core.Ui;

namespace Tether.Client.Core
{
    /// <summary>
    /// Where the session the tool window shows is remembered across Visual Studio restarts (the
    /// solution's user settings): a restarted Visual Studio resumes that session, which may still
    /// run its turn in the daemon, rather than the workspace's most recent one. Only the id is
    /// kept: a restarted window has drawn nothing, so it resumes without <c>afterSeq</c> and the
    /// daemon sends the transcript, then the running turn (docs/protocol.md, session/resume).
    /// </summary>
    public interface ISessionMemory
    {
        /// <summary>The remembered session id, or null.</summary>
        string Get();

        /// <summary>Remembers <paramref name="sessionId"/> (null forgets). Must not throw.</summary>
        void Set(string sessionId);
    }

    /// <summary>The tool window's side of the controller: the conversation, the prompt box, older turns, opening a listed session, the handoff offer.</summary>
    public sealed partial class TetherSessionController
    {
        /// <summary>Chat turns asked per <c>session/history</c> page.</summary>
        public const int HistoryPage = 50;

        private readonly IClock clock;
        private readonly Dictionary<string, Banner> bannerKinds = new Dictionary<string, Banner>();
        private readonly Dictionary<int, TaskCompletionSource<string>> permissionWaiters = new Dictionary<int, TaskCompletionSource<string>>();
        private int permissionCounter;
        private volatile string promptInFlight;
        /// <summary>The session whose turn the window showed running when the connection was lost; cleared by its <c>session/turnEnded</c>.</summary>
        private string detachedTurn;
        private volatile string activeSessionId;
        private long lastSeq = -1;
        /// <summary>The session id last given to (or found in) <see cref="Memory"/>: updates do not touch the settings store again.</summary>
        private volatile string remembered;

        /// <summary>The tool window's view model.</summary>
        public ConversationView Conversation { get; private set; }

        /// <summary>Where the window's session is remembered across restarts; null remembers nothing.</summary>
        public ISessionMemory Memory { get; set; }

        /// <summary>
        /// True when the tool window shows permission questions inline and answers them (its
        /// buttons call <see cref="AnswerPermission"/>); false asks through <see cref="ITetherUi.AskChoiceAsync"/>
        /// (a dialog) and only shows the question in the window meanwhile.
        /// </summary>
        public bool AskPermissionsInline { get; set; }

        /// <summary>The live session the prompt box sends to; null when none.</summary>
        public string ActiveSessionId { get { return activeSessionId; } }

        /// <summary>The <c>seq</c> of the last event of the window's session drawn here (for <c>afterSeq</c>), or null.</summary>
        public long? LastSeq
        {
            get { var v = Interlocked.Read(ref lastSeq); return v < 0 ? (long?)null : v; }
        }

        /// <summary>
        /// The params of a <c>session/resume</c>: <paramref name="sessionId"/> when given; else the
        /// session the window shows, with <c>afterSeq</c> when events of it were drawn (through the
        /// daemon only what came after is sent: no gap, no duplicate); else the remembered session
        /// (a restarted Visual Studio: the daemon sends its transcript and its running turn); else
        /// the workspace's most recent.
        /// </summary>
        public ResumeParams ResumeParamsFor(string sessionId)
        {
            var p = new ResumeParams { Workspace = workspace };
            if (sessionId != null)
            {
                p.SessionId = sessionId;
                if (sessionId == Conversation.SessionId) p.AfterSeq = LastSeq;
                return p;
            }
            var shown = Conversation.SessionId;
            if (shown != null)
            {
                p.SessionId = shown;
                p.AfterSeq = LastSeq;
                return p;
            }
            p.SessionId = Memory != null ? Memory.Get() : null;
            return p;
        }

        /// <summary>What the window says of a turn it showed running that did not survive a lost connection.</summary>
        public const string TurnLost = "the connection to the Tether server was lost and the turn is no longer running; its end was not received";

        /// <summary>
        /// The server process was restarted (Visual Studio's language client started a new
        /// <c>tether serve</c> after the old one ended): the new connection knows no open dialog and
        /// no live session, so both are forgotten; then the window's session is resumed after the
        /// last event drawn (<c>afterSeq</c>), so a turn that went on in the daemon continues in the
        /// window with every update once. A turn the window still shows running that the server
        /// does not run any more (<c>session/list</c>: not <c>turnRunning</c>) is closed, saying so.
        /// </summary>
        public async Task<ResumeResult> ServerRestartedAsync(ITetherConnection next, CancellationToken cancellationToken)
        {
            if (next == null) throw new ArgumentNullException("next");
            log.Write("tether serve restarted: forgetting the live session and any outstanding choice; resuming " + (Conversation.SessionId ?? "the workspace's session"));
            connection = next;
            activeSessionId = null;
            promptInFlight = null;
            if (Conversation.TurnRunning) Interlocked.CompareExchange(ref detachedTurn, Conversation.SessionId, null);
            Persist.Deactivate();
            ApplyAll(Locked(() => Presenter.ClearPendingRecovery()));
            // Like the start: a window that shows no session starts none (R-RESUME-11).
            var result = await ResumeAtStartupAsync(cancellationToken).ConfigureAwait(false);
            var sid = Volatile.Read(ref detachedTurn);
            if (sid == null) return result;
            bool running = false;
            if (result.Outcome == ResumeOutcome.Resumed && result.SessionId == sid)
            {
                var list = ProtocolJson.Read<ListResult>(await connection.RequestAsync(
                    Methods.List, ProtocolJson.Write(new ListParams { Workspace = workspace }), cancellationToken).ConfigureAwait(false));
                running = list.Sessions != null && list.Sessions.Any(s => s.SessionId == sid && s.Live && s.TurnRunning);
            }
            // A session/turnEnded that came before the list's answer has already cleared detachedTurn.
            if (!running && Interlocked.CompareExchange(ref detachedTurn, null, sid) == sid)
            {
                log.Write("the turn of " + sid + " did not survive: " + TurnLost);
                // The resume may have redrawn the saved transcript (an in-process server), which
                // holds the prompt but not the lost answer: the window says what happened either way.
                if (Conversation.TurnRunning) Conversation.TurnEnded(null, TurnLost);
                else if (Conversation.SessionId == sid) Conversation.Note("The prompt failed: " + TurnLost);
            }
            return result;
        }

        /// <summary>
        /// The connection to the server ended (the host saw it close): a turn the window shows
        /// running stays open, saying it goes on in the daemon (the next
        /// <see cref="ServerRestartedAsync"/> settles it); otherwise the window says the server is not running.
        /// </summary>
        public void ConnectionLost()
        {
            activeSessionId = null;
            if (Conversation.TurnRunning)
            {
                Volatile.Write(ref detachedTurn, Conversation.SessionId);
                Conversation.Reconnecting();
            }
            else Conversation.ServerStopped();
        }

        /// <summary>
        /// The prompt box's Send: a prompt turn on the live session (see <see cref="PromptAsync"/>).
        /// With no live session (the start-up resume found nothing: R-RESUME-11), a resume still in
        /// flight is waited for; then, when none is live yet, <c>session/resume</c> is sent without
        /// <c>create: false</c>, so the server resumes the workspace's session or starts one, and
        /// the prompt goes to that session.
        /// </summary>
        /// <exception cref="InvalidOperationException">No session is live after that resume, or a recovery choice is outstanding.</exception>
        public async Task<JToken> SendAsync(string text, CancellationToken cancellationToken)
        {
            if (activeSessionId == null)
            {
                var inFlight = Volatile.Read(ref resumeInFlight);
                if (inFlight != null)
                {
                    try { await inFlight.ConfigureAwait(false); }
                    catch (Exception e) { log.Write("the resume in flight failed: " + e.Message); }
                }
            }
            if (activeSessionId == null)
            {
                if (Locked(() => Presenter.PendingRecovery) != null)
                {
                    throw new InvalidOperationException("Tether needs your choice first: see the recovery dialog");
                }
                log.Write("session/prompt: no session is live; resuming (a new session when there is none) first");
                var result = await SendResumeAsync(null, true, cancellationToken).ConfigureAwait(false);
                log.Write("session/resume before the prompt: " + result.Outcome + " " + (result.SessionId ?? "(no session)"));
            }
            var sid = activeSessionId;
            if (sid == null) throw new InvalidOperationException("no session is live: run \"Tether: Resume Session\" first");
            return await PromptAsync(sid, text, cancellationToken).ConfigureAwait(false);
        }

        /// <summary>The prompt box's Cancel: <c>session/cancel</c> for the running turn (its end arrives as the prompt's answer or <c>session/turnEnded</c>).</summary>
        public Task CancelTurnAsync()
        {
            var sid = activeSessionId ?? Conversation.SessionId;
            if (sid == null) return Task.FromResult(true);
            log.Write("session/cancel " + sid);
            return connection.NotifyAsync(Methods.Cancel, new JObject(new JProperty("sessionId", sid)));
        }

        /// <summary>
        /// "Load older turns": the next <c>session/history</c> page above what the window shows.
        /// A server without the method (-32601) or a failure marks older turns unavailable, saying why.
        /// </summary>
        public async Task LoadOlderAsync(CancellationToken cancellationToken)
        {
            var before = Conversation.BeginLoadOlder();
            var sid = Conversation.SessionId;
            if (before == null || sid == null) return;
            log.Write("session/history " + sid + " before " + before + " (" + HistoryPage + ")");
            try
            {
                var p = new HistoryParams { Workspace = workspace, SessionId = sid, BeforeTurn = before, Limit = HistoryPage };
                var r = ProtocolJson.Read<HistoryResult>(await connection.RequestAsync(Methods.History, ProtocolJson.Write(p), cancellationToken).ConfigureAwait(false));
                Conversation.OlderLoaded(r.ChatTurns, r.ChatTurnsBase);
            }
            catch (JsonRpcRemoteException e) when (e.Code == -32601)
            {
                Conversation.OlderUnavailable("Older turns are not available: this Tether server does not send them.");
            }
            catch (Exception e) when (e is JsonRpcRemoteException || e is JsonRpcConnectionClosedException || e is ProtocolException)
            {
                log.Write("session/history failed: " + e.Message);
                Conversation.OlderUnavailable("Older turns could not be loaded: " + e.Message);
            }
        }

        /// <summary>A row of "Show Sessions" was picked: resume that session in the window (the server decides the rest, a dialog included).</summary>
        public Task<ResumeResult> OpenSessionAsync(string sessionId, CancellationToken cancellationToken)
        {
            if (sessionId == null) throw new ArgumentNullException("sessionId");
            ApplyAll(Locked(() => Presenter.ClearPendingRecovery()));
            if (sessionId != Conversation.SessionId)
            {
                // The window shows the picked session from now on: what the server sends of it
                // (its transcript, or the agent's replay of its history) is drawn, not dropped
                // as another session's.
                Interlocked.Exchange(ref lastSeq, -1);
                activeSessionId = null;
                Conversation.StartedSession(sessionId, null);
            }
            return ResumeAsync(sessionId, cancellationToken);
        }

        /// <summary>The handoff offer's accept button: <c>session/handoff</c> to the offered agent; the result is settled like a resume's.</summary>
        public async Task<ResumeResult> AcceptHandoffAsync(CancellationToken cancellationToken)
        {
            var offer = Conversation.Handoff;
            var sid = activeSessionId ?? Conversation.SessionId;
            if (offer == null || sid == null) return null;
            Conversation.DismissHandoff();
            log.Write("session/handoff " + sid + " to " + offer.Agent);
            var p = new HandoffParams { SessionId = sid, Workspace = workspace, Agent = offer.Agent };
            var result = ProtocolJson.Read<ResumeResult>(await connection.RequestAsync(Methods.Handoff, ProtocolJson.Write(p), cancellationToken).ConfigureAwait(false));
            return await SettleAsync(result, cancellationToken).ConfigureAwait(false);
        }

        /// <summary>The handoff offer's "Keep Waiting": nothing is sent; the wait goes on.</summary>
        public void DeclineHandoff()
        {
            Conversation.DismissHandoff();
        }

        /// <summary>An option button of the inline permission question (null: dismissed, answered <c>cancelled</c>). A key no longer open is ignored.</summary>
        public void AnswerPermission(int key, string optionId)
        {
            TaskCompletionSource<string> waiter;
            lock (permissionWaiters)
            {
                if (!permissionWaiters.TryGetValue(key, out waiter)) return;
                permissionWaiters.Remove(key);
            }
            waiter.TrySetResult(optionId);
        }

        private async Task<string> AskPermissionAsync(PermissionRequest request, AskChoice ask)
        {
            var key = Interlocked.Increment(ref permissionCounter);
            var tc = request.ToolCall;
            var waiter = new TaskCompletionSource<string>();
            lock (permissionWaiters) permissionWaiters[key] = waiter;
            // ACP's question carries a ToolCallUpdate whose title and kind may be left out when the
            // agent already reported the call (tool_call): they are taken from there.
            var callId = tc != null && tc["toolCallId"] is JValue ? (string)tc["toolCallId"] : null;
            var known = Conversation.FindTool(callId);
            var title = tc != null && tc["title"] is JValue ? (string)tc["title"] : null;
            var kind = tc != null && tc["kind"] is JValue ? (string)tc["kind"] : null;
            Conversation.SetPermission(new PermissionView
            {
                Key = key,
                Title = !string.IsNullOrEmpty(title) ? title : known != null ? known.Title : "a tool call",
                ToolKind = kind ?? (known != null ? known.Kind : "other"),
                ToolCallId = callId,
                Options = ask.Options,
            });
            try
            {
                if (AskPermissionsInline) return await waiter.Task.ConfigureAwait(false);
                return await ui.AskChoiceAsync(ask).ConfigureAwait(false);
            }
            finally
            {
                lock (permissionWaiters) permissionWaiters.Remove(key);
                Conversation.ClosePermission(key);
            }
        }

        private void OnPermissionResolved(PermissionResolved resolved)
        {
            // Settled elsewhere (another editor, a timeout, the turn's end): close the question shown for that tool call.
            var shown = Conversation.Permission;
            log.Write("session/permissionResolved " + resolved.SessionId + " " + resolved.ToolCallId + ": " + resolved.Reason);
            if (shown == null || (resolved.ToolCallId != null && shown.ToolCallId != null && shown.ToolCallId != resolved.ToolCallId)) return;
            AnswerPermission(shown.Key, null);
            Conversation.ClosePermission(shown.Key);
        }

        private void OnRestoredConversation(Restored restored)
        {
            Interlocked.Exchange(ref lastSeq, -1);
            Conversation.Restored(restored.SessionId, restored.Snapshot, restored.Source, restored.Stale);
            Remember(restored.SessionId);
        }

        private void OnStatusConversation(SessionStatus status, IList<UiIntent> intents)
        {
            // The failed status of a round that ended in needsChoice can come after the result: the outstanding choice stays shown.
            if (status.State == SessionState.Failed && Locked(() => Presenter.PendingRecovery) != null) return;
            var set = intents.OfType<SetStatus>().LastOrDefault();
            Conversation.OnStatus(status, set != null ? set.Text : null);
            if (status.State == SessionState.Ready && !string.IsNullOrEmpty(status.SessionId)) activeSessionId = status.SessionId;
        }

        private void OnBannerClearedConversation(BannerCleared cleared)
        {
            Banner banner;
            lock (bannerKinds)
            {
                if (!bannerKinds.TryGetValue(cleared.Id ?? "", out banner)) return;
                bannerKinds.Remove(cleared.Id ?? "");
            }
            // The server clears the stale-transcript banner when the agent confirmed the session.
            if (banner.Kind == BannerKind.StaleSnapshot && (banner.SessionId == null || banner.SessionId == Conversation.SessionId)) Conversation.Confirmed();
        }

        private void OnExpiredConversation(Expired expired)
        {
            Interlocked.Exchange(ref lastSeq, -1);
            activeSessionId = expired.SessionId;
            Conversation.StartedSession(expired.SessionId, expired.CarriedOver != null ? expired.CarriedOver.Marker : null);
            Remember(expired.SessionId);
        }

        private void OnUpdateConversation(JToken parameters)
        {
            var p = parameters as JObject;
            if (p == null) return;
            if (Conversation.Update(p)) NoteSeq(p["seq"]);
            Remember(Conversation.SessionId);
        }

        private void OnTurnEnded(TurnEnded ended)
        {
            log.Write("session/turnEnded " + ended.SessionId + " seq=" + ended.Seq + ": " + (ended.StopReason ?? "error " + ended.Error));
            var shown = Conversation.SessionId;
            if (shown != null && ended.SessionId != shown) return;
            if (ended.Seq.HasValue) NoteSeq(new JValue(ended.Seq.Value));
            Interlocked.CompareExchange(ref detachedTurn, null, ended.SessionId);
            // This window's own prompt is ended by its answer; this ends a turn it did not send
            // (another editor's, or its own from before a restart, replayed by the daemon).
            if (promptInFlight == ended.SessionId || !Conversation.TurnRunning) return;
            Transcript.CompleteTurn();
            Conversation.TurnEnded(ended.StopReason, ended.Error);
        }

        private void OnReattached(Reattached reattached)
        {
            log.Write("session/reattached " + reattached.SessionId + (reattached.Result == null ? ": refused " + reattached.Error : ""));
            // The new daemon numbers events from 1 again.
            Interlocked.Exchange(ref lastSeq, -1);
            if (promptInFlight == reattached.SessionId) promptInFlight = null;
            if (reattached.Result == null)
            {
                Conversation.Failed("The new Tether daemon refused the session: " + reattached.Error);
                return;
            }
            SettleAsync(reattached.Result, CancellationToken.None).ContinueWith(
                t => log.Write("settling session/reattached failed: " + t.Exception.InnerException.Message), TaskContinuationOptions.OnlyOnFaulted);
        }

        private void OnResultConversation(ResumeResult result, IList<UiIntent> intents)
        {
            switch (result.Outcome)
            {
                case ResumeOutcome.Resumed:
                case ResumeOutcome.Started:
                    if (string.IsNullOrEmpty(result.SessionId)) break;
                    activeSessionId = result.SessionId;
                    if (Conversation.SessionId != result.SessionId)
                    {
                        Interlocked.Exchange(ref lastSeq, -1);
                        Conversation.StartedSession(result.SessionId, null);
                    }
                    Conversation.SetLive(result.SessionId);
                    if (!result.Stale) Conversation.Confirmed();
                    Remember(result.SessionId);
                    break;
                case ResumeOutcome.NothingToResume:
                    // No session and no agent (create: false at start, R-RESUME-11): idle, no
                    // error; the status line says how to start one and Send stays open.
                    if (activeSessionId == null) Conversation.SetLive(null);
                    break;
                case ResumeOutcome.NeedsChoice:
                    activeSessionId = null;
                    var modal = Locked(() => Presenter.PendingRecovery);
                    Conversation.NeedsChoice(modal != null ? modal.Message : "The session could not be resumed");
                    break;
                default:
                    activeSessionId = null;
                    var info = intents.OfType<ShowInfo>().FirstOrDefault();
                    Conversation.Failed(info != null ? info.Text : "The session could not be resumed");
                    break;
            }
        }

        private void NoteSeq(JToken seq)
        {
            if (seq == null || seq.Type != JTokenType.Integer) return;
            Interlocked.Exchange(ref lastSeq, (long)seq);
        }

        private void Remember(string sessionId)
        {
            if (Memory == null || sessionId == null || sessionId == remembered) return;
            try
            {
                if (Memory.Get() != sessionId) Memory.Set(sessionId);
                remembered = sessionId;
            }
            catch (Exception e)
            {
                log.Write("could not remember the window's session: " + e.Message);
            }
        }
    }
}
