using System;
using System.Collections.Generic;
using System.Threading;
using System.Threading.Tasks;
using Newtonsoft.Json.Linq;
using Tether.Client.Core.Persist;
using Tether.Client.Core.Protocol;
using Tether.Client.Core.Rpc;
using Tether.Client.Core.Ui;

namespace Tether.Client.Core
{
    /// <summary>What the host editor renders. Visual Studio implements it with shell services; tests with a recorder.</summary>
    public interface ITetherUi
    {
        /// <summary>Shows a non-blocking intent: <see cref="SetStatus"/>, <see cref="ShowInfoBar"/>, <see cref="ClearInfoBar"/>, <see cref="ShowInfo"/>.</summary>
        void Apply(UiIntent intent);

        /// <summary>Shows a modal dialog; completes with the clicked button's id, or null when it was closed without one.</summary>
        Task<string> ShowModalAsync(ShowModal modal);

        /// <summary>Asks the user to pick an option; completes with its id, or null when no option was picked.</summary>
        Task<string> AskChoiceAsync(AskChoice choice);
    }

    /// <summary>
    /// The whole client side of a Tether session in one place, independent of any editor: routes
    /// server notifications and requests through <see cref="SessionPresenter"/> to an
    /// <see cref="ITetherUi"/>, runs resume → recovery dialog → <c>session/recoveryChoice</c>, keeps
    /// the transcript the shim persists, drives <see cref="PersistScheduler"/>, and feeds the tool
    /// window's view model (<see cref="Conversation"/>; its commands are in
    /// TetherSessionController.Conversation.cs). The Visual Studio extension is a thin adapter
    /// around this class.
    /// </summary>
    public sealed partial class TetherSessionController
    {
        private ITetherConnection connection;
        private readonly ITetherUi ui;
        private readonly ILog log;
        private readonly WorkspaceRef workspace;
        private readonly object uiGate = new object();
        private readonly object presenterGate = new object();
        private volatile ResumeResult lastResult;

        /// <summary>Creates a controller for one workspace.</summary>
        /// <param name="connection">The JSON-RPC connection to <c>tether serve</c>.</param>
        /// <param name="ui">The renderer.</param>
        /// <param name="workspaceRoot">Absolute path of the workspace root.</param>
        /// <param name="clock">Time source (countdowns, persist cadence).</param>
        /// <param name="log">Diagnostics.</param>
        /// <param name="persistInterval">Timer persist period; 30 s when null.</param>
        public TetherSessionController(ITetherConnection connection, ITetherUi ui, string workspaceRoot, IClock clock, ILog log,
            TimeSpan? persistInterval = null)
        {
            if (connection == null) throw new ArgumentNullException("connection");
            if (ui == null) throw new ArgumentNullException("ui");
            if (string.IsNullOrEmpty(workspaceRoot)) throw new ArgumentException("workspace root required", "workspaceRoot");
            this.connection = connection;
            this.ui = ui;
            this.log = log ?? NullLog.Instance;
            clock = clock ?? SystemClock.Instance;
            workspace = new WorkspaceRef { Root = workspaceRoot };
            Presenter = new SessionPresenter(clock);
            Transcript = new SessionTranscript(workspaceRoot, clock);
            Conversation = new ConversationView(clock);
            this.clock = clock;
            Persist = new PersistScheduler(clock, PersistAsync, Transcript.ToSnapshot, workspace, this.log, persistInterval);
        }

        /// <summary>The message → intent mapping and its state. Read it freely; the controller serializes its own calls into it.</summary>
        public SessionPresenter Presenter { get; private set; }

        /// <summary>What the shim persists.</summary>
        public SessionTranscript Transcript { get; private set; }

        /// <summary>The timer/shutdown persist cadence.</summary>
        public PersistScheduler Persist { get; private set; }

        /// <summary>The last telemetry events received (name only, newest last, at most 100), for the logs.</summary>
        public List<string> TelemetryNames { get; } = new List<string>();

        /// <summary>The server notifications this controller handles.</summary>
        public static readonly string[] NotificationMethods =
        {
            Methods.Restored, Methods.Status, Methods.Banner, Methods.BannerCleared, Methods.Expired, Methods.Update, Methods.Telemetry,
            Methods.TurnEnded, Methods.PermissionResolved, Methods.Reattached,
        };

        /// <summary>The server → client requests this controller answers.</summary>
        public static readonly string[] RequestMethods = { Methods.RequestPermission, Methods.ShowMessageRequest };

        /// <summary>
        /// Handles a server notification. A malformed one is logged and dropped (never thrown):
        /// one bad message must not take the extension down.
        /// </summary>
        public void HandleNotification(string method, JToken parameters)
        {
            try
            {
                switch (method)
                {
                    case Methods.Restored:
                        var restored = ProtocolJson.Read<Restored>(parameters);
                        lock (presenterGate) Presenter.OnRestored(restored);
                        Transcript.OnRestored(restored);
                        OnRestoredConversation(restored);
                        break;
                    case Methods.Status:
                        var status = ProtocolJson.Read<SessionStatus>(parameters);
                        var statusIntents = Locked(() => Presenter.OnStatus(status));
                        ApplyAll(statusIntents);
                        OnStatusConversation(status, statusIntents);
                        break;
                    case Methods.Banner:
                        var banner = ProtocolJson.Read<Banner>(parameters);
                        lock (bannerKinds) bannerKinds[banner.Id ?? ""] = banner;
                        ApplyAll(Locked(() => Presenter.OnBanner(banner)));
                        OnBannerSync(banner);
                        break;
                    case Methods.BannerCleared:
                        var cleared = ProtocolJson.Read<BannerCleared>(parameters);
                        ApplyAll(Locked(() => Presenter.OnBannerCleared(cleared)));
                        OnBannerClearedConversation(cleared);
                        OnBannerClearedSync(cleared);
                        break;
                    case Methods.Expired:
                        var expired = ProtocolJson.Read<Expired>(parameters);
                        Transcript.Reset(workspace.Root);
                        ApplyAll(Locked(() => Presenter.OnExpired(expired)));
                        OnExpiredConversation(expired);
                        break;
                    case Methods.Update:
                        Transcript.OnUpdate(parameters);
                        OnUpdateConversation(parameters);
                        break;
                    case Methods.TurnEnded:
                        OnTurnEnded(ProtocolJson.Read<TurnEnded>(parameters));
                        break;
                    case Methods.PermissionResolved:
                        OnPermissionResolved(ProtocolJson.Read<PermissionResolved>(parameters));
                        break;
                    case Methods.Reattached:
                        OnReattached(ProtocolJson.Read<Reattached>(parameters));
                        break;
                    case Methods.Telemetry:
                        var ev = ProtocolJson.Read<TelemetryEvent>(parameters);
                        lock (TelemetryNames)
                        {
                            TelemetryNames.Add(ev.Name);
                            if (TelemetryNames.Count > 100) TelemetryNames.RemoveAt(0);
                        }
                        log.Write("telemetry " + ev.Name + " " + (ev.Properties != null ? ev.Properties.ToString(Newtonsoft.Json.Formatting.None) : "{}"));
                        break;
                    default:
                        log.Write("ignored notification " + method);
                        break;
                }
            }
            catch (ProtocolException e)
            {
                log.Write("dropped malformed " + method + ": " + e.Message);
            }
        }

        /// <summary>
        /// Answers a server → client request: <c>session/requestPermission</c> (a choice among the
        /// agent's options; ACP outcome shape) and <c>window/showMessageRequest</c> (the server's
        /// fallback dialog). Other methods: <see cref="NotSupportedException"/>.
        /// </summary>
        /// <exception cref="ProtocolException">Malformed params.</exception>
        public async Task<JToken> HandleRequestAsync(string method, JToken parameters)
        {
            switch (method)
            {
                case Methods.RequestPermission:
                    var request = ProtocolJson.Read<PermissionRequest>(parameters);
                    var ask = Locked(() => Presenter.OnPermissionRequest(request));
                    var chosen = await AskPermissionAsync(request, ask).ConfigureAwait(false);
                    return SessionPresenter.PermissionAnswer(request, chosen);
                case Methods.ShowMessageRequest:
                    var choice = SessionPresenter.OnShowMessageRequest(parameters);
                    var title = await ui.AskChoiceAsync(choice).ConfigureAwait(false);
                    return SessionPresenter.ShowMessageAnswer(title);
                default:
                    throw new NotSupportedException("unsupported server request " + method);
            }
        }

        /// <summary>Registers this controller's handlers on a <see cref="JsonRpcConnection"/>.</summary>
        public void AttachTo(JsonRpcConnection rpc)
        {
            foreach (var m in NotificationMethods)
            {
                var method = m;
                rpc.OnNotification(method, p => HandleNotification(method, p));
            }
            foreach (var m in RequestMethods)
            {
                var method = m;
                rpc.OnRequest(method, p => HandleRequestAsync(method, p));
            }
        }

        /// <summary>
        /// "Tether: Resume Session". Sends <c>session/resume</c>; when the answer is needsChoice,
        /// shows the recovery modal and sends the user's choice with <c>session/recoveryChoice</c>,
        /// again until the outcome is not needsChoice or the user closes the dialog without a
        /// choice (then the "offer again" info bar stays and the last result is returned). If a
        /// dismissed question is pending, it is offered again instead of a new resume.
        /// </summary>
        /// <exception cref="JsonRpcRemoteException">The server rejected a request.</exception>
        /// <exception cref="ProtocolException">The server's answer does not match the protocol.</exception>
        public Task<ResumeResult> ResumeAsync(string sessionId, CancellationToken cancellationToken)
        {
            return SendResumeAsync(sessionId, true, cancellationToken);
        }

        /// <summary>
        /// The resume at start (Visual Studio opened the solution): like <see cref="ResumeAsync(string, CancellationToken)"/>,
        /// but with no session id to resume (none shown, none remembered) it sends
        /// <c>create: false</c>, so a workspace with nothing cached answers
        /// <see cref="ResumeOutcome.NothingToResume"/> and no agent is started (R-RESUME-11). The
        /// first prompt (<see cref="SendAsync"/>) or "Tether: Resume Session" starts a session.
        /// </summary>
        public Task<ResumeResult> ResumeAtStartupAsync(CancellationToken cancellationToken)
        {
            return SendResumeAsync(null, false, cancellationToken);
        }

        private Task<ResumeResult> SendResumeAsync(string sessionId, bool create, CancellationToken cancellationToken)
        {
            var task = ResumeCoreAsync(sessionId, create, cancellationToken);
            Volatile.Write(ref resumeInFlight, task);
            return task;
        }

        private async Task<ResumeResult> ResumeCoreAsync(string sessionId, bool create, CancellationToken cancellationToken)
        {
            if (Locked(() => Presenter.PendingRecovery) != null)
            {
                return await ReofferRecoveryAsync(cancellationToken).ConfigureAwait(false);
            }
            var p = ResumeParamsFor(sessionId);
            // create: false only matters (and is only sent) when no session id is named.
            if (!create && p.SessionId == null) p.Create = false;
            log.Write("session/resume " + workspace.Root + (p.SessionId != null ? " " + p.SessionId : "") + (p.AfterSeq.HasValue ? " afterSeq=" + p.AfterSeq.Value : "")
                + (p.Create == false ? " create=false" : ""));
            var result = ProtocolJson.Read<ResumeResult>(
                await connection.RequestAsync(Methods.Resume, ProtocolJson.Write(p), cancellationToken).ConfigureAwait(false));
            return await SettleAsync(result, cancellationToken).ConfigureAwait(false);
        }

        /// <summary>The last resume (its request and the rendering of its answer); a prompt with no session waits for it.</summary>
        private Task<ResumeResult> resumeInFlight;

        /// <summary>
        /// The info bar's "Choose what to do…": shows the pending recovery modal again and acts on
        /// the answer like <see cref="ResumeAsync"/>. Returns null when nothing is pending, the last
        /// result when the dialog is closed again without a choice.
        /// </summary>
        public async Task<ResumeResult> ReofferRecoveryAsync(CancellationToken cancellationToken)
        {
            if (Locked(() => Presenter.PendingRecovery) == null)
            {
                return null;
            }
            var choice = await AskRecoveryAsync().ConfigureAwait(false);
            if (choice == null)
            {
                return lastResult;
            }
            ResumeResult next;
            try
            {
                next = await SendChoiceAsync(choice, cancellationToken).ConfigureAwait(false);
            }
            catch (JsonRpcRemoteException e) when (e.Code == UnknownSessionCode)
            {
                // The server has no dialog open for that session any more (it restarted, or the
                // question was answered elsewhere): forget it and resume afresh.
                log.Write("the server no longer waits for a choice about " + choice.SessionId + "; resuming afresh");
                ApplyAll(Locked(() => Presenter.ClearPendingRecovery()));
                return await ResumeAsync(null, cancellationToken).ConfigureAwait(false);
            }
            return await SettleAsync(next, cancellationToken).ConfigureAwait(false);
        }

        /// <summary>The server's "unknown session" error code (docs/protocol.md, Errors: -32002 with <c>data: {sessionId}</c>).</summary>
        public const long UnknownSessionCode = -32002;

        /// <summary>
        /// The user clicked an info bar action (<see cref="SessionPresenter.ReofferActionId"/>
        /// reopens the recovery dialog; <c>tether.continueHere:&lt;session&gt;</c>, a
        /// <c>heldElsewhere</c> bar's "Continue Here", sends <c>session/continueHere</c>). Unknown ids are ignored.
        /// </summary>
        public Task OnInfoBarActionAsync(string actionId, CancellationToken cancellationToken)
        {
            if (actionId == SessionPresenter.ReofferActionId)
            {
                return ReofferRecoveryAsync(cancellationToken);
            }
            var held = HeldElsewhere.SessionOfAction(actionId);
            if (held != null)
            {
                return ContinueHereAsync(held, cancellationToken);
            }
            return Task.FromResult(true);
        }

        private async Task<ResumeResult> SettleAsync(ResumeResult result, CancellationToken cancellationToken)
        {
            while (true)
            {
                lastResult = result;
                var current = result;
                var resultIntents = Locked(() => Presenter.OnResumeResult(current));
                ApplyAll(resultIntents);
                OnResultConversation(current, resultIntents);
                if (result.Outcome == ResumeOutcome.Resumed || result.Outcome == ResumeOutcome.Started)
                {
                    if (!string.IsNullOrEmpty(result.SessionId))
                    {
                        Persist.Activate(result.SessionId);
                    }
                    return result;
                }
                Persist.Deactivate();
                if (result.Outcome != ResumeOutcome.NeedsChoice || Locked(() => Presenter.PendingRecovery) == null)
                {
                    return result;
                }
                var choice = await AskRecoveryAsync().ConfigureAwait(false);
                if (choice == null)
                {
                    return result;
                }
                result = await SendChoiceAsync(choice, cancellationToken).ConfigureAwait(false);
            }
        }

        /// <summary>Shows the pending recovery modal; returns the choice to send, or null when it was closed without one.</summary>
        private async Task<RecoveryChoiceParams> AskRecoveryAsync()
        {
            var modal = Locked(() => Presenter.PendingRecovery);
            if (modal == null)
            {
                return null; // answered meanwhile (e.g. a second dialog from the info bar)
            }
            var button = await ui.ShowModalAsync(modal).ConfigureAwait(false);
            RecoveryDecision decision;
            lock (presenterGate)
            {
                if (Presenter.PendingRecovery != modal)
                {
                    return null; // a newer result replaced the question while the dialog was open
                }
                decision = Presenter.OnRecoveryAnswer(button);
            }
            ApplyAll(decision.Intents);
            if (decision.Choice == null)
            {
                log.Write("recovery dialog closed without a choice; the breaker stays open");
            }
            else
            {
                log.Write("recovery choice " + decision.Choice.Choice + " for session " + decision.Choice.SessionId);
            }
            return decision.Choice;
        }

        private async Task<ResumeResult> SendChoiceAsync(RecoveryChoiceParams choice, CancellationToken cancellationToken)
        {
            return ProtocolJson.Read<ResumeResult>(await connection.RequestAsync(
                Methods.RecoveryChoice, ProtocolJson.Write(choice), cancellationToken).ConfigureAwait(false));
        }

        /// <summary>
        /// A prompt turn (<c>session/prompt</c> with one text block): records the user's turn in the
        /// transcript the shim persists and in the window (<see cref="Conversation"/>), waits for
        /// the stop reason (the reply streams as <c>session/update</c>), and completes the turn (a
        /// stop other than <c>end_turn</c>, or the server's error, gets a line in the window).
        /// When the connection is lost instead, the turn stays open in the window: through the
        /// daemon it goes on, and <see cref="ServerRestartedAsync"/> settles it. Returns the result
        /// object (<c>{stopReason, stale?}</c>).
        /// </summary>
        /// <exception cref="JsonRpcRemoteException">The server rejected the prompt (e.g. -32002, session not live; -32803 <c>heldElsewhere</c>, which also offers "Continue Here").</exception>
        public async Task<JToken> PromptAsync(string sessionId, string text, CancellationToken cancellationToken)
        {
            Transcript.AddUserTurn(text);
            Conversation.UserPrompt(text);
            promptInFlight = sessionId;
            var p = new JObject(
                new JProperty("sessionId", sessionId),
                new JProperty("prompt", new JArray(new JObject(new JProperty("type", "text"), new JProperty("text", text)))));
            try
            {
                var result = await connection.RequestAsync(Methods.Prompt, p, cancellationToken).ConfigureAwait(false);
                promptInFlight = null;
                var stop = result != null ? (string)(result["stopReason"] as JValue) : null;
                // A handoff or a new session may have replaced the view's session meanwhile.
                if (Conversation.SessionId == sessionId) Conversation.TurnEnded(stop ?? "unknown", null);
                return result;
            }
            catch (JsonRpcConnectionClosedException e)
            {
                // Not the server's answer: the connection went. Through the daemon the turn goes
                // on there; the next resume (ServerRestarted) brings its rest and its end.
                promptInFlight = null;
                if (Conversation.SessionId == sessionId) Volatile.Write(ref detachedTurn, sessionId);
                log.Write("session/prompt " + sessionId + ": the connection was lost (" + e.Message + "); the turn stays open until the session is resumed");
                Conversation.Reconnecting();
                throw;
            }
            catch (Exception e)
            {
                promptInFlight = null;
                var remote = e as JsonRpcRemoteException;
                if (Conversation.SessionId == sessionId) Conversation.TurnEnded(null, remote != null ? remote.RemoteMessage : e.Message);
                // Refused because another machine holds the session (R-SYNC-7): "Continue Here" is offered.
                OfferContinueHere(e, sessionId);
                throw;
            }
            finally
            {
                Transcript.CompleteTurn();
            }
        }

        /// <summary>"Tether: Clear Saved Session": removes the workspace's cached sessions and stops timer persists until the next resume. Returns how many were removed.</summary>
        public async Task<int> ClearSavedSessionAsync(CancellationToken cancellationToken)
        {
            var p = new ClearParams { Workspace = workspace };
            var r = ProtocolJson.Read<ClearResult>(
                await connection.RequestAsync(Methods.Clear, ProtocolJson.Write(p), cancellationToken).ConfigureAwait(false));
            Persist.Deactivate();
            if (r.Removed > 0 && Memory != null)
            {
                // The remembered session may be gone with them: a restart resumes the most recent again.
                try { Memory.Set(null); remembered = null; } catch (Exception e) { log.Write("could not forget the window's session: " + e.Message); }
            }
            Apply(new ShowInfo
            {
                Severity = Severity.Info,
                Text = r.Removed == 1 ? "Removed 1 saved session." : "Removed " + r.Removed + " saved sessions.",
            });
            return r.Removed;
        }

        /// <summary>The extension unloads: the <c>shutdown</c> persist (see <see cref="PersistScheduler.ShutdownAsync"/>).</summary>
        public Task<PersistResult> ShutdownAsync()
        {
            return Persist.ShutdownAsync();
        }

        /// <summary>A command failed: an error message for the user, worded by what failed.</summary>
        public static ShowInfo DescribeFailure(string action, Exception e)
        {
            var remote = e as JsonRpcRemoteException;
            if (remote != null)
            {
                return new ShowInfo { Severity = Severity.Error, Text = action + " failed: " + remote.RemoteMessage, Detail = "Server error " + remote.Code + "." };
            }
            if (e is JsonRpcConnectionClosedException)
            {
                return new ShowInfo { Severity = Severity.Error, Text = action + " failed: the Tether server is not running.", Detail = e.Message };
            }
            if (e is ProtocolException)
            {
                return new ShowInfo { Severity = Severity.Error, Text = action + " failed: unexpected answer from the Tether server.", Detail = e.Message };
            }
            if (e is OperationCanceledException)
            {
                return new ShowInfo { Severity = Severity.Info, Text = action + " was cancelled." };
            }
            return new ShowInfo { Severity = Severity.Error, Text = action + " failed.", Detail = e.Message };
        }

        private async Task<PersistResult> PersistAsync(PersistParams p)
        {
            var token = await connection.RequestAsync(Methods.Persist, ProtocolJson.Write(p), CancellationToken.None).ConfigureAwait(false);
            return ProtocolJson.Read<PersistResult>(token);
        }

        /// <summary>
        /// While a rate-limit wait runs, the refreshed status text ("Rate limited, resuming in 39 s"),
        /// applied to the UI and returned; null otherwise. The host calls it about once a second.
        /// </summary>
        public SetStatus RefreshCountdown()
        {
            var s = Locked(() => Presenter.RefreshCountdown());
            if (s != null)
            {
                Apply(s);
                Conversation.Countdown(s.Text);
            }
            return s;
        }

        private T Locked<T>(Func<T> f)
        {
            lock (presenterGate)
            {
                return f();
            }
        }

        private void ApplyAll(IEnumerable<UiIntent> intents)
        {
            foreach (var i in intents)
            {
                if (i is ShowModal)
                {
                    continue; // shown through ShowModalAsync by the resume flow
                }
                Apply(i);
            }
        }

        private void Apply(UiIntent intent)
        {
            lock (uiGate)
            {
                ui.Apply(intent);
            }
        }
    }
}
