using System;
using System.Collections.Generic;
using System.Linq;
using Newtonsoft.Json.Linq;
using Tether.Client.Core.Protocol;

namespace Tether.Client.Core.Ui
{
    /// <summary>The user's answer to the recovery dialog, ready to send (or not).</summary>
    public sealed class RecoveryDecision
    {
        /// <summary>Params of <c>session/recoveryChoice</c>; null when the dialog was dismissed (no choice).</summary>
        public RecoveryChoiceParams Choice { get; set; }
        /// <summary>What to show now (for a dismissal: the "offer the dialog again" info bar).</summary>
        public IList<UiIntent> Intents { get; set; }
    }

    /// <summary>
    /// Maps server messages to <see cref="UiIntent"/>s. All rendering decisions of the shim live
    /// here; the server decides everything else. Stateful only where the UI must remember: the
    /// current session id, the recovery question still unanswered, and a rate-limit deadline for
    /// the countdown. Not thread-safe: <see cref="TetherSessionController"/> serializes its calls.
    /// </summary>
    public sealed class SessionPresenter
    {
        /// <summary>Id of the client's own info bar that offers the recovery dialog again after a dismissal.</summary>
        public const string RecoveryInfoBarId = "tether.recoveryPending";
        /// <summary>Action id of that info bar's link.</summary>
        public const string ReofferActionId = "tether.showRecoveryDialog";
        /// <summary>Choice id "Try Again" (docs/protocol.md, recovery.actions).</summary>
        public const string RetryChoice = "retry";
        /// <summary>Choice id "Start New Session".</summary>
        public const string NewChoice = "new";
        /// <summary>Title of the retry button (R-RESUME-6).</summary>
        public const string RetryTitle = "Try Again";
        /// <summary>Title of the new-session button (R-RESUME-6).</summary>
        public const string NewTitle = "Start New Session";
        /// <summary>The choice "Continue in a New Session": a new session primed with the conversation (docs/protocol.md, Carry-over).</summary>
        public const string NewWithHistoryChoice = "newWithHistory";
        /// <summary>Its button title.</summary>
        public const string NewWithHistoryTitle = "Continue in a New Session";
        /// <summary>The prefix of a handoff choice, <c>handoff:&lt;agent&gt;</c>.</summary>
        public const string HandoffChoicePrefix = "handoff:";

        private readonly IClock clock;
        private ShowModal pendingRecovery;
        private DateTimeOffset? rateLimitDeadline;

        /// <summary>Creates a presenter using <paramref name="clock"/> for the rate-limit countdown.</summary>
        public SessionPresenter(IClock clock)
        {
            this.clock = clock ?? SystemClock.Instance;
        }

        /// <summary>The session the server last talked about (restored, status, results), or null.</summary>
        public string CurrentSessionId { get; private set; }

        /// <summary>The recovery question the user dismissed without answering, or null.</summary>
        public ShowModal PendingRecovery
        {
            get { return pendingRecovery; }
        }

        /// <summary>True while a rate-limit wait is being counted down (see <see cref="RefreshCountdown"/>).</summary>
        public bool CountdownActive
        {
            get { return rateLimitDeadline != null; }
        }

        /// <summary>
        /// <c>session/status</c> → status bar. The text is the server's ready-made <c>message</c>
        /// when it sent one (the server words its statuses; the shim only renders), else this
        /// client's own wording of the same fields (<see cref="StatusText"/>). Progress by state:
        /// resuming and waitingRetry: a bar at attempt/maxAttempts (animated before the first
        /// attempt); rateLimited: animated, and the seconds are counted down by
        /// <see cref="RefreshCountdown"/> in the protocol's wording "Rate limited, resuming in N s";
        /// ready and failed: no indicator. A state this client does not know shows the server's
        /// message without an indicator, or nothing without one.
        /// </summary>
        public IList<UiIntent> OnStatus(SessionStatus status)
        {
            Remember(status.SessionId);
            rateLimitDeadline = null;
            SetStatus s;
            switch (status.State)
            {
                case SessionState.Resuming:
                    s = Bar(StatusText.Resuming(status.Attempt, status.MaxAttempts), status.Attempt, status.MaxAttempts);
                    break;
                case SessionState.WaitingRetry:
                    s = Bar(StatusText.WaitingRetry(status.RetryInMs), status.Attempt, status.MaxAttempts);
                    break;
                case SessionState.RateLimited:
                    if (status.RetryInMs != null)
                    {
                        rateLimitDeadline = clock.UtcNow.AddMilliseconds(status.RetryInMs.Value);
                    }
                    s = new SetStatus { Text = StatusText.RateLimited(status.RetryInMs), Progress = ProgressKind.Indeterminate };
                    break;
                case SessionState.Ready:
                    s = new SetStatus { Text = StatusText.Ready, Progress = ProgressKind.None };
                    break;
                case SessionState.Failed:
                    s = new SetStatus { Text = StatusText.Failed(status.ErrorKind), Progress = ProgressKind.None };
                    break;
                default:
                    s = new SetStatus { Text = null, Progress = ProgressKind.None };
                    break;
            }
            if (!string.IsNullOrEmpty(status.Message))
            {
                s.Text = status.Message;
            }
            if (s.Text == null)
            {
                return new List<UiIntent>();
            }
            return new List<UiIntent> { s };
        }

        /// <summary>
        /// While a rate-limit wait runs, the status text for now ("Rate limited, resuming in 39 s");
        /// null when no wait is being counted down. The host calls it about once a second.
        /// </summary>
        public SetStatus RefreshCountdown()
        {
            if (rateLimitDeadline == null)
            {
                return null;
            }
            var remaining = (long)Math.Ceiling((rateLimitDeadline.Value - clock.UtcNow).TotalMilliseconds);
            return new SetStatus { Text = StatusText.RateLimited(Math.Max(0, remaining)), Progress = ProgressKind.Indeterminate };
        }

        /// <summary>
        /// <c>session/banner</c> → an info bar with the server's id, text and dismissibility; a
        /// <c>heldElsewhere</c> banner (R-SYNC-7) also offers "Continue Here"
        /// (<see cref="HeldElsewhere.InfoBar"/>).
        /// </summary>
        public IList<UiIntent> OnBanner(Banner banner)
        {
            Remember(banner.SessionId);
            var held = HeldElsewhere.FromBanner(banner);
            if (held != null) return new List<UiIntent> { HeldElsewhere.InfoBar(held) };
            return new List<UiIntent>
            {
                new ShowInfoBar
                {
                    Id = banner.Id,
                    Kind = WireEnumConverter.ToWire(banner.Kind),
                    Severity = SeverityOf(banner.Kind),
                    Text = banner.Message ?? "",
                    Dismissible = banner.Dismissible,
                },
            };
        }

        /// <summary>Icon for a banner kind: restore failure, stream error, a stale transcript and a session held elsewhere are warnings, persistence disabled an error, the rest information.</summary>
        public static Severity SeverityOf(BannerKind kind)
        {
            switch (kind)
            {
                case BannerKind.HeldElsewhere:
                case BannerKind.RestoreFailed:
                case BannerKind.StreamError:
                case BannerKind.StaleSnapshot:
                    return Severity.Warning;
                case BannerKind.PersistenceDisabled:
                    return Severity.Error;
                default:
                    return Severity.Info;
            }
        }

        /// <summary><c>session/bannerCleared</c> → remove that info bar.</summary>
        public IList<UiIntent> OnBannerCleared(BannerCleared cleared)
        {
            return new List<UiIntent> { new ClearInfoBar { Id = cleared.Id } };
        }

        /// <summary><c>session/expired</c> → an information message naming both sessions.</summary>
        public IList<UiIntent> OnExpired(Expired expired)
        {
            Remember(expired.SessionId);
            var intents = new List<UiIntent>();
            if (pendingRecovery != null && pendingRecovery.SessionId == expired.PreviousSessionId)
            {
                // The question was answered elsewhere (another window, the server's own fallback).
                intents.AddRange(ClearPendingRecovery());
            }
            intents.AddRange(new List<UiIntent>
            {
                new ShowInfo
                {
                    Severity = Severity.Info,
                    Text = "Started a new session (" + StatusText.ShortId(expired.SessionId) + ").",
                    Detail = "The previous session " + StatusText.ShortId(expired.PreviousSessionId)
                        + " could not be resumed; its saved transcript is archived, not deleted.",
                },
            });
            return intents;
        }

        /// <summary>
        /// Forgets the pending recovery question (the server no longer has a dialog open for it,
        /// e.g. it answered -32002, or the session expired) and removes its info bar.
        /// </summary>
        public IList<UiIntent> ClearPendingRecovery()
        {
            pendingRecovery = null;
            return new List<UiIntent> { new ClearInfoBar { Id = RecoveryInfoBarId } };
        }

        /// <summary><c>session/restored</c>: remembers the session (the transcript is the host's business).</summary>
        public void OnRestored(Restored restored)
        {
            Remember(restored.SessionId);
        }

        /// <summary>
        /// A <see cref="ResumeResult"/> (of resume or recoveryChoice) → intents.
        /// needsChoice: the modal (server texts, buttons "Try Again"/"Start New Session"), and the
        /// question is remembered until answered; resumed/started: "Session ready" and any
        /// "offer again" bar removed; failed: an error message with the server's texts.
        /// </summary>
        public IList<UiIntent> OnResumeResult(ResumeResult result)
        {
            Remember(result.SessionId);
            var intents = new List<UiIntent>();
            if (result.Outcome == ResumeOutcome.NeedsChoice)
            {
                var sessionId = result.SessionId ?? CurrentSessionId;
                if (sessionId == null)
                {
                    intents.Add(new ShowInfo
                    {
                        Severity = Severity.Error,
                        Text = "Tether asked for a recovery choice without naming the session.",
                        Detail = "Run \"Tether: Resume Session\" again; see \"Tether: Show Logs\".",
                    });
                    return intents;
                }
                pendingRecovery = RecoveryModal(sessionId, result);
                intents.Add(new ClearInfoBar { Id = RecoveryInfoBarId });
                intents.Add(pendingRecovery);
                return intents;
            }

            pendingRecovery = null;
            rateLimitDeadline = null;
            intents.Add(new ClearInfoBar { Id = RecoveryInfoBarId });
            switch (result.Outcome)
            {
                case ResumeOutcome.Resumed:
                case ResumeOutcome.Started:
                    intents.Add(new SetStatus { Text = StatusText.Ready, Progress = ProgressKind.None });
                    break;
                case ResumeOutcome.NothingToResume:
                    // Start-up with create: false and nothing cached (R-RESUME-11): idle, no error.
                    intents.Add(new SetStatus { Text = StatusText.NoSession, Progress = ProgressKind.None });
                    break;
                case ResumeOutcome.Failed:
                    intents.Add(new SetStatus { Text = StatusText.Failed(result.Error == null ? (ErrorKind?)null : result.Error.Kind), Progress = ProgressKind.None });
                    intents.Add(new ShowInfo
                    {
                        Severity = Severity.Error,
                        Text = result.Recovery != null && !string.IsNullOrEmpty(result.Recovery.Message)
                            ? result.Recovery.Message
                            : "Failed to resume session",
                        Detail = result.Recovery != null && !string.IsNullOrEmpty(result.Recovery.Detail)
                            ? result.Recovery.Detail
                            : result.Error != null ? result.Error.Message : null,
                    });
                    break;
                default:
                    intents.Add(new ShowInfo
                    {
                        Severity = Severity.Warning,
                        Text = "Tether answered with an outcome this extension does not know.",
                        Detail = "Update the extension; see \"Tether: Show Logs\".",
                    });
                    break;
            }
            return intents;
        }

        /// <summary>Whether <paramref name="id"/> is a choice of the recovery dialog (docs/protocol.md, session/recoveryChoice): <c>retry</c>, <c>newWithHistory</c>, <c>new</c> or <c>handoff:&lt;agent&gt;</c>.</summary>
        public static bool IsRecoveryChoice(string id)
        {
            return id == RetryChoice || id == NewChoice || id == NewWithHistoryChoice
                || (id != null && id.StartsWith(HandoffChoicePrefix, StringComparison.Ordinal) && id.Length > HandoffChoicePrefix.Length);
        }

        /// <summary>
        /// The recovery modal for a needsChoice result: the server's <c>recovery</c> texts, and
        /// exactly the server's choices (<see cref="IsRecoveryChoice"/>: "Try Again", "Continue in
        /// a New Session", "Start New Session", "Continue with &lt;agent&gt;") in its order (the server
        /// may leave out "Try Again" once the user's retries are spent; other actions such as
        /// <c>login</c> are not choices of this dialog). When the server sent no texts, R-UI-1's texts by error
        /// kind ("Previous session not found", "Cannot connect to the agent", "Failed to resume
        /// session"); when it sent no usable action, the two standard buttons.
        /// </summary>
        public static ShowModal RecoveryModal(string sessionId, ResumeResult result)
        {
            var prompt = result.Recovery;
            var buttons = new List<ModalButton>();
            if (prompt != null && prompt.Actions != null)
            {
                foreach (var a in prompt.Actions)
                {
                    if (a != null && IsRecoveryChoice(a.Id))
                    {
                        buttons.Add(new ModalButton(a.Id, string.IsNullOrEmpty(a.Title) ? DefaultTitle(a.Id) : a.Title));
                    }
                }
            }
            if (buttons.Count == 0)
            {
                // The server named no usable action: the two standard buttons (R-UI-1).
                buttons.Add(new ModalButton(RetryChoice, RetryTitle));
                buttons.Add(new ModalButton(NewChoice, NewTitle));
            }

            string message = prompt != null ? prompt.Message : null;
            string detail = prompt != null ? prompt.Detail : null;
            var error = result.Error;
            int attempts = result.Breaker != null ? result.Breaker.Attempts : 0;
            if (string.IsNullOrEmpty(message))
            {
                var kind = error != null ? error.Kind : ErrorKind.Unknown;
                message = kind == ErrorKind.SessionExpired ? "Previous session not found"
                    : kind == ErrorKind.Network ? "Cannot connect to the agent"
                    : "Failed to resume session";
            }
            if (string.IsNullOrEmpty(detail))
            {
                if (error != null && error.Kind == ErrorKind.SessionExpired)
                {
                    detail = "Session " + StatusText.ShortId(sessionId) + " appears to have been deleted or expired.";
                }
                else
                {
                    detail = (error != null ? StatusText.Describe(error.Kind) : "Unknown error")
                        + " after " + attempts + (attempts == 1 ? " attempt" : " attempts")
                        + (error != null && !string.IsNullOrEmpty(error.Message) ? ": " + error.Message : "");
                    detail = char.ToUpperInvariant(detail[0]) + detail.Substring(1);
                }
            }
            return new ShowModal { SessionId = sessionId, Message = message, Detail = detail, Buttons = buttons };
        }

        private static string DefaultTitle(string id)
        {
            if (id == RetryChoice) return RetryTitle;
            if (id == NewWithHistoryChoice) return NewWithHistoryTitle;
            if (id.StartsWith(HandoffChoicePrefix, StringComparison.Ordinal)) return "Continue with " + id.Substring(HandoffChoicePrefix.Length);
            return NewTitle;
        }

        /// <summary>
        /// The recovery modal closed. <paramref name="buttonId"/> "retry"/"new" → the
        /// <c>session/recoveryChoice</c> params, and the question is no longer pending. Null (closed
        /// with Esc or ×) or anything else → no choice: nothing is sent, the breaker stays open, and
        /// an info bar offers the dialog again.
        /// </summary>
        /// <exception cref="InvalidOperationException">No recovery question is pending.</exception>
        public RecoveryDecision OnRecoveryAnswer(string buttonId)
        {
            if (pendingRecovery == null)
            {
                throw new InvalidOperationException("no recovery question is pending");
            }
            if (buttonId != null && pendingRecovery.Buttons.Any(b => b.Id == buttonId))
            {
                var sessionId = pendingRecovery.SessionId;
                pendingRecovery = null;
                return new RecoveryDecision
                {
                    Choice = new RecoveryChoiceParams { SessionId = sessionId, Choice = buttonId },
                    Intents = new List<UiIntent> { new ClearInfoBar { Id = RecoveryInfoBarId } },
                };
            }
            return new RecoveryDecision
            {
                Choice = null,
                Intents = new List<UiIntent>
                {
                    new ShowInfoBar
                    {
                        Id = RecoveryInfoBarId,
                        Kind = "recoveryPending",
                        Severity = Severity.Warning,
                        Text = pendingRecovery.Message + ". The session was not resumed.",
                        Dismissible = true,
                        Actions = new List<InfoBarAction> { new InfoBarAction(ReofferActionId, "Choose what to do" + StatusText.Ellipsis) },
                    },
                },
            };
        }

        /// <summary>The pending recovery modal again (the info bar's action, or the Resume command), or null when none is pending.</summary>
        public ShowModal ReofferRecovery()
        {
            return pendingRecovery;
        }

        /// <summary>
        /// <c>session/requestPermission</c> → a choice among the agent's options, labelled by their
        /// names, titled by the tool call's title.
        /// </summary>
        public AskChoice OnPermissionRequest(PermissionRequest request)
        {
            Remember(request.SessionId);
            string title = null;
            if (request.ToolCall != null)
            {
                var t = request.ToolCall["title"];
                if (t != null && t.Type == JTokenType.String)
                {
                    title = (string)t;
                }
            }
            var options = (request.Options ?? new List<PermissionOption>())
                .Where(o => o != null && !string.IsNullOrEmpty(o.OptionId))
                .Select(o => new ChoiceOption(o.OptionId, string.IsNullOrEmpty(o.Name) ? o.OptionId : o.Name))
                .ToList();
            return new AskChoice
            {
                Title = "The agent asks for permission" + (string.IsNullOrEmpty(title) ? "." : ": " + title),
                Detail = null,
                Options = options,
            };
        }

        /// <summary>
        /// The reply to <c>session/requestPermission</c>, in ACP's
        /// <c>RequestPermissionOutcome</c> shape: <c>{"outcome":{"outcome":"selected","optionId":…}}</c>,
        /// or <c>{"outcome":{"outcome":"cancelled"}}</c> when the user gave no answer or the id is not
        /// one of the request's options.
        /// </summary>
        public static JObject PermissionAnswer(PermissionRequest request, string optionId)
        {
            bool known = optionId != null && request.Options != null && request.Options.Any(o => o != null && o.OptionId == optionId);
            var outcome = known
                ? new JObject(new JProperty("outcome", "selected"), new JProperty("optionId", optionId))
                : new JObject(new JProperty("outcome", "cancelled"));
            return new JObject(new JProperty("outcome", outcome));
        }

        /// <summary>
        /// LSP <c>window/showMessageRequest</c> (the server's fallback for clients without
        /// <c>recoveryDialog</c>) → a choice among its actions, ids = titles.
        /// </summary>
        public static AskChoice OnShowMessageRequest(JToken request)
        {
            var message = request != null ? request["message"] : null;
            var options = new List<ChoiceOption>();
            var actions = request != null ? request["actions"] as JArray : null;
            if (actions != null)
            {
                foreach (var a in actions)
                {
                    var title = a is JObject ? a["title"] : null;
                    if (title != null && title.Type == JTokenType.String)
                    {
                        options.Add(new ChoiceOption((string)title, (string)title));
                    }
                }
            }
            return new AskChoice
            {
                Title = message != null && message.Type == JTokenType.String ? (string)message : "",
                Options = options,
            };
        }

        /// <summary>The reply to <c>window/showMessageRequest</c>: <c>{"title": …}</c> (a MessageActionItem) or JSON null.</summary>
        public static JToken ShowMessageAnswer(string title)
        {
            return title == null ? (JToken)JValue.CreateNull() : new JObject(new JProperty("title", title));
        }

        private static SetStatus Bar(string text, int attempt, int maxAttempts)
        {
            if (attempt > 0 && maxAttempts > 0)
            {
                return new SetStatus { Text = text, Progress = ProgressKind.Determinate, Completed = Math.Min(attempt, maxAttempts), Total = maxAttempts };
            }
            return new SetStatus { Text = text, Progress = ProgressKind.Indeterminate };
        }

        private void Remember(string sessionId)
        {
            if (!string.IsNullOrEmpty(sessionId))
            {
                CurrentSessionId = sessionId;
            }
        }
    }
}
