using System;
using System.Collections.Generic;
using System.Linq;
using System.Threading;
using System.Threading.Tasks;
using Newtonsoft.Json.Linq;
using NUnit.Framework;
using Tether.Client.Core.Protocol;
using Tether.Client.Core.Rpc;
using Tether.Client.Core.Ui;

namespace Tether.Client.Core.Tests
{
    /// <summary>
    /// The controller's flows over a real JSON-RPC connection whose other end is a scripted peer
    /// in this process (the real server is exercised by <see cref="IntegrationTests"/>).
    /// </summary>
    [TestFixture]
    public class ControllerTests
    {
        private static readonly TimeSpan Timeout = TimeSpan.FromSeconds(10);
        private Pair pair;
        private RecordingUi ui;
        private FakeClock clock;
        private ListLog log;
        private TetherSessionController controller;
        private List<JObject> received;

        private const string NeedsChoice = @"{'outcome':'needsChoice','sessionId':'old-session',
            'breaker':{'status':'open','attempts':3,'maxAttempts':3,'userRetries':0},
            'error':{'kind':'sessionExpired','message':'Session not found','retryable':false,'source':'acp','code':-32002},
            'recovery':{'message':'Previous session not found','detail':'Session old-sess\u2026 appears to have been deleted or expired.',
                        'actions':[{'id':'retry','title':'Try Again'},{'id':'new','title':'Start New Session'}]},'stale':true}";

        [SetUp]
        public void SetUp()
        {
            pair = new Pair();
            ui = new RecordingUi();
            clock = new FakeClock();
            log = new ListLog();
            received = new List<JObject>();
            controller = new TetherSessionController(pair.Client, ui, "/work/ws", clock, log);
            controller.AttachTo(pair.Client);
        }

        [TearDown]
        public void TearDown()
        {
            pair.Dispose();
        }

        /// <summary>Registers a scripted server method that records its params and runs <paramref name="body"/>.</summary>
        private void Serve(string method, Func<JToken, JToken> body)
        {
            pair.Server.OnRequest(method, p =>
            {
                lock (received) received.Add(new JObject(new JProperty("method", method), new JProperty("params", p)));
                return Task.FromResult(body(p));
            });
        }

        private void Notify(string method, string json)
        {
            pair.Server.NotifyAsync(method, Json.Q(json)).Wait();
        }

        private List<string> Methods()
        {
            lock (received) return received.Select(r => (string)r["method"]).ToList();
        }

        [Test]
        public void NeedsChoiceThenStartNewSession()
        {
            Serve("session/resume", p =>
            {
                Notify("session/restored", "{'sessionId':'old-session','stale':true,'snapshot':{'chatTurns':[{'id':'1','role':'user','text':'cached','timestampUtc':'2026-01-01T00:00:00Z','complete':true}]}}");
                Notify("session/status", "{'sessionId':'old-session','state':'resuming','attempt':1,'maxAttempts':3}");
                Notify("session/status", "{'sessionId':'old-session','state':'failed','attempt':1,'maxAttempts':3,'errorKind':'sessionExpired','message':'Previous session not found'}");
                return Json.Q(NeedsChoice);
            });
            Serve("session/recoveryChoice", p =>
            {
                Notify("session/expired", "{'previousSessionId':'old-session','sessionId':'new-session'}");
                return Json.Q("{'outcome':'started','sessionId':'new-session','previousSessionId':'old-session','breaker':{'status':'closed','attempts':0,'maxAttempts':3,'userRetries':0},'stale':false}");
            });
            pair.Start();
            ui.ModalAnswers.Enqueue("new");

            var result = controller.ResumeAsync(null, CancellationToken.None).Result;

            Assert.AreEqual(ResumeOutcome.Started, result.Outcome);
            Assert.AreEqual("new-session", result.SessionId);
            CollectionAssert.AreEqual(new[] { "session/resume", "session/recoveryChoice" }, Methods());
            Assert.IsTrue(JToken.DeepEquals(Json.Q("{'workspace':{'root':'/work/ws'}}"), received[0]["params"]), received[0].ToString());
            Assert.IsTrue(JToken.DeepEquals(Json.Q("{'sessionId':'old-session','choice':'new'}"), received[1]["params"]), received[1].ToString());

            var modal = ui.Modals.Single();
            Assert.AreEqual("Previous session not found", modal.Message);
            CollectionAssert.AreEqual(new[] { "Try Again", "Start New Session" }, modal.ButtonTitles.ToArray());
            CollectionAssert.AreEqual(new[] { "Resuming\u2026 attempt 1 of 3", "Previous session not found", "Session ready" },
                ui.Of<SetStatus>().Select(s => s.Text).ToArray());
            StringAssert.Contains("new-sess", ui.Of<ShowInfo>().Single().Text);
            Assert.AreEqual("new-session", controller.Persist.ActiveSessionId);
            CollectionAssert.IsEmpty(controller.Transcript.ToSnapshot().ChatTurns, "the expired session's transcript is not the new session's");
        }

        [Test]
        public void DismissalSendsNothingAndTheInfoBarOffersTheDialogAgain()
        {
            int resumes = 0;
            Serve("session/resume", p => { resumes++; return Json.Q(NeedsChoice); });
            Serve("session/recoveryChoice", p => Json.Q("{'outcome':'resumed','sessionId':'old-session','breaker':{'status':'closed'},'stale':false}"));
            pair.Start();
            ui.ModalAnswers.Enqueue(null);

            var first = controller.ResumeAsync(null, CancellationToken.None).Result;
            Assert.AreEqual(ResumeOutcome.NeedsChoice, first.Outcome);
            CollectionAssert.AreEqual(new[] { "session/resume" }, Methods(), "a dismissed dialog sends no recoveryChoice");
            var bar = ui.Of<ShowInfoBar>().Single();
            Assert.AreEqual(SessionPresenter.RecoveryInfoBarId, bar.Id);
            Assert.IsNull(controller.Persist.ActiveSessionId);

            ui.ModalAnswers.Enqueue("retry");
            controller.OnInfoBarActionAsync(SessionPresenter.ReofferActionId, CancellationToken.None).Wait(Timeout);
            Assert.AreEqual(2, ui.Modals.Count);
            CollectionAssert.AreEqual(new[] { "session/resume", "session/recoveryChoice" }, Methods());
            Assert.AreEqual("retry", (string)received[1]["params"]["choice"]);
            Assert.AreEqual(1, resumes);
            Assert.IsTrue(ui.Of<ClearInfoBar>().Any(c => c.Id == SessionPresenter.RecoveryInfoBarId));
            Assert.AreEqual("old-session", controller.Persist.ActiveSessionId);
        }

        [Test]
        public void ResumeCommandWithAQuestionPendingOffersItInsteadOfResumingAgain()
        {
            Serve("session/resume", p => Json.Q(NeedsChoice));
            Serve("session/recoveryChoice", p => Json.Q("{'outcome':'started','sessionId':'n','breaker':{'status':'closed'},'stale':false}"));
            pair.Start();
            ui.ModalAnswers.Enqueue(null);
            controller.ResumeAsync(null, CancellationToken.None).Wait(Timeout);
            ui.ModalAnswers.Enqueue("new");
            var r = controller.ResumeAsync(null, CancellationToken.None).Result;
            Assert.AreEqual(ResumeOutcome.Started, r.Outcome);
            CollectionAssert.AreEqual(new[] { "session/resume", "session/recoveryChoice" }, Methods());
        }

        [Test]
        public void AQuestionTheServerForgotIsDroppedAndResumeStartsAfresh()
        {
            int resumes = 0;
            string error = "unknown";
            Serve("session/resume", p => { resumes++; return resumes == 1 ? Json.Q(NeedsChoice) : Json.Q("{'outcome':'resumed','sessionId':'old-session','breaker':{'status':'closed'},'stale':false}"); });
            pair.Server.OnRequest("session/recoveryChoice", p =>
            {
                lock (received) received.Add(new JObject(new JProperty("method", "session/recoveryChoice"), new JProperty("params", p)));
                var t = new TaskCompletionSource<JToken>();
                t.SetException(error == "unknown"
                    ? new JsonRpcRemoteException("session/recoveryChoice", -32002, "unknown session", Json.Q("{'sessionId':'old-session'}"))
                    : (Exception)new InvalidOperationException("boom"));
                return t.Task;
            });
            pair.Start();
            ui.ModalAnswers.Enqueue(null);
            controller.ResumeAsync(null, CancellationToken.None).Wait(Timeout);
            Assert.IsNotNull(controller.Presenter.PendingRecovery);

            ui.ModalAnswers.Enqueue("retry");
            var r = controller.ResumeAsync(null, CancellationToken.None).Result;
            Assert.AreEqual(ResumeOutcome.Resumed, r.Outcome, "after -32002 the stale question is dropped and a fresh resume runs");
            CollectionAssert.AreEqual(new[] { "session/resume", "session/recoveryChoice", "session/resume" }, Methods());
            Assert.IsNull(controller.Presenter.PendingRecovery);

            // Any other error reaches the caller and keeps the question.
            resumes = 0;
            error = "other";
            ui.ModalAnswers.Enqueue(null);
            controller.ResumeAsync(null, CancellationToken.None).Wait(Timeout);
            ui.ModalAnswers.Enqueue("new");
            var e = Assert.Throws<AggregateException>(() => controller.ResumeAsync(null, CancellationToken.None).Wait(Timeout));
            Assert.AreEqual(-32603, ((JsonRpcRemoteException)e.InnerException).Code);
        }

        [Test]
        public void ExpiryOfTheSessionInQuestionDropsThePendingQuestion()
        {
            Serve("session/resume", p => Json.Q(NeedsChoice));
            pair.Start();
            ui.ModalAnswers.Enqueue(null);
            controller.ResumeAsync(null, CancellationToken.None).Wait(Timeout);
            Assert.IsNotNull(controller.Presenter.PendingRecovery);
            Notify("session/expired", "{'previousSessionId':'old-session','sessionId':'other-window-session'}");
            var deadline = DateTime.UtcNow + Timeout;
            while (controller.Presenter.PendingRecovery != null && DateTime.UtcNow < deadline) Thread.Sleep(10);
            Assert.IsNull(controller.Presenter.PendingRecovery);
            Assert.IsTrue(ui.Of<ClearInfoBar>().Any(c => c.Id == SessionPresenter.RecoveryInfoBarId));
        }

        [Test]
        public void ARetryThatFailsAgainAsksAgain()
        {
            int choices = 0;
            Serve("session/resume", p => Json.Q(NeedsChoice));
            Serve("session/recoveryChoice", p =>
            {
                choices++;
                return (string)p["choice"] == "retry"
                    ? Json.Q(NeedsChoice.Replace("'userRetries':0", "'userRetries':1"))
                    : Json.Q("{'outcome':'started','sessionId':'n','breaker':{'status':'closed'},'stale':false}");
            });
            pair.Start();
            ui.ModalAnswers.Enqueue("retry");
            ui.ModalAnswers.Enqueue("new");
            var r = controller.ResumeAsync(null, CancellationToken.None).Result;
            Assert.AreEqual(ResumeOutcome.Started, r.Outcome);
            Assert.AreEqual(2, ui.Modals.Count);
            Assert.AreEqual(2, choices);
        }

        [Test]
        public void PermissionRequestsAreAnsweredWithTheChosenOption()
        {
            pair.Start();
            ui.ChoiceAnswers.Enqueue("allow");
            ui.ChoiceAnswers.Enqueue(null);
            var p = Json.Q("{'sessionId':'s','toolCall':{'toolCallId':'t','title':'Edit main.rs'},'options':[{'optionId':'allow','name':'Allow','kind':'allow_once'},{'optionId':'deny','name':'Deny','kind':'reject_once'}]}");
            var a = pair.Server.RequestAsync("session/requestPermission", p, CancellationToken.None);
            Assert.IsTrue(a.Wait(Timeout));
            Assert.IsTrue(JToken.DeepEquals(Json.Q("{'outcome':{'outcome':'selected','optionId':'allow'}}"), a.Result), a.Result.ToString());
            var b = pair.Server.RequestAsync("session/requestPermission", p, CancellationToken.None);
            Assert.IsTrue(b.Wait(Timeout));
            Assert.IsTrue(JToken.DeepEquals(Json.Q("{'outcome':{'outcome':'cancelled'}}"), b.Result), b.Result.ToString());
            Assert.AreEqual("The agent asks for permission: Edit main.rs", ui.Choices[0].Title);
        }

        [Test]
        public void ShowMessageRequestFallbackIsAnsweredByTitle()
        {
            pair.Start();
            ui.ChoiceAnswers.Enqueue("Start New Session");
            var a = pair.Server.RequestAsync("window/showMessageRequest",
                Json.Q("{'type':2,'message':'Previous session not found','actions':[{'title':'Try Again'},{'title':'Start New Session'}]}"), CancellationToken.None);
            Assert.IsTrue(a.Wait(Timeout));
            Assert.AreEqual("Start New Session", (string)a.Result["title"]);
        }

        [Test]
        public void MalformedNotificationsAreLoggedAndTheNextOnesStillRender()
        {
            pair.Start();
            Notify("session/status", "{'sessionId':'s','state':'resuming','attempt':'one'}");
            Notify("session/banner", "[]");
            Notify("session/banner", "{'id':'b1','kind':'staleSnapshot','message':'Showing cached transcript','dismissible':true}");
            Notify("session/bannerCleared", "{'id':'b1'}");
            var deadline = DateTime.UtcNow + Timeout;
            while (ui.Of<ClearInfoBar>().Count == 0 && DateTime.UtcNow < deadline) Thread.Sleep(10);
            Assert.AreEqual("Showing cached transcript", ui.Of<ShowInfoBar>().Single().Text);
            Assert.AreEqual("b1", ui.Of<ClearInfoBar>().Single().Id);
            StringAssert.Contains("dropped malformed session/status", log.ToString());
            StringAssert.Contains("dropped malformed session/banner", log.ToString());
        }

        [Test]
        public void TheRateLimitCountdownIsRefreshedAndApplied()
        {
            pair.Start();
            Assert.IsNull(controller.RefreshCountdown(), "no wait, no countdown");
            Notify("session/status", "{'sessionId':'s','state':'rateLimited','attempt':1,'maxAttempts':5,'retryInMs':40000,'errorKind':'rateLimited','message':'Rate limited, resuming in 40 s'}");
            var deadline = DateTime.UtcNow + Timeout;
            while (ui.Of<SetStatus>().Count == 0 && DateTime.UtcNow < deadline) Thread.Sleep(10);
            clock.Advance(TimeSpan.FromSeconds(15));
            Assert.AreEqual("Rate limited, resuming in 25 s", controller.RefreshCountdown().Text);
            CollectionAssert.AreEqual(new[] { "Rate limited, resuming in 40 s", "Rate limited, resuming in 25 s" }, ui.Of<SetStatus>().Select(x => x.Text).ToArray());
        }

        [Test]
        public void TimerPersistSendsTheTranscriptAndShutdownPersistGoesLast()
        {
            Serve("session/resume", p => Json.Q("{'outcome':'started','sessionId':'live','breaker':{'status':'closed'},'stale':false}"));
            Serve("session/persist", p => Json.Q("{'saved':" + ((string)p["trigger"] == "shutdown" ? "true" : "false") + ",'coalesced':" + ((string)p["trigger"] == "timer" ? "true" : "false") + ",'bytes':10,'durationMs':1,'schemaVersion':1}"));
            pair.Start();
            controller.ResumeAsync(null, CancellationToken.None).Wait(Timeout);
            Notify("session/update", "{'sessionId':'live','update':{'sessionUpdate':'agent_message_chunk','content':{'type':'text','text':'hello'}},'replay':false}");
            var deadline = DateTime.UtcNow + Timeout;
            while (controller.Transcript.ToSnapshot().ChatTurns.Count == 0 && DateTime.UtcNow < deadline) Thread.Sleep(10);
            clock.Advance(TimeSpan.FromSeconds(30));
            var timer = controller.Persist.TickAsync().Result;
            Assert.IsTrue(timer.Coalesced);
            var shutdown = controller.ShutdownAsync().Result;
            Assert.IsTrue(shutdown.Saved);
            CollectionAssert.AreEqual(new[] { "session/resume", "session/persist", "session/persist" }, Methods());
            Assert.AreEqual("timer", (string)received[1]["params"]["trigger"]);
            Assert.AreEqual("shutdown", (string)received[2]["params"]["trigger"]);
            Assert.AreEqual("live", (string)received[2]["params"]["sessionId"]);
            Assert.AreEqual("/work/ws", (string)received[2]["params"]["workspace"]["root"]);
            Assert.AreEqual("hello", (string)received[2]["params"]["snapshot"]["chatTurns"][0]["text"]);
        }

        [Test]
        public void ClearSavedSessionReportsTheCountAndStopsTimerPersists()
        {
            Serve("session/resume", p => Json.Q("{'outcome':'resumed','sessionId':'live','breaker':{'status':'closed'},'stale':false}"));
            Serve("session/clear", p => Json.Q("{'removed':2}"));
            pair.Start();
            controller.ResumeAsync(null, CancellationToken.None).Wait(Timeout);
            Assert.AreEqual(2, controller.ClearSavedSessionAsync(CancellationToken.None).Result);
            Assert.AreEqual("Removed 2 saved sessions.", ui.Of<ShowInfo>().Single().Text);
            Assert.IsTrue(JToken.DeepEquals(Json.Q("{'workspace':{'root':'/work/ws'}}"), received[1]["params"]));
            Assert.IsNull(controller.Persist.ActiveSessionId);
        }

        [Test]
        public void ServerErrorsReachTheCallerAndAreWordedForTheUser()
        {
            pair.Server.OnRequest("session/resume", p =>
            {
                var t = new TaskCompletionSource<JToken>();
                t.SetException(new InvalidOperationException("unknown session"));
                return t.Task;
            });
            pair.Start();
            var e = Assert.Throws<AggregateException>(() => controller.ResumeAsync("zzz", CancellationToken.None).Wait(Timeout));
            var remote = (JsonRpcRemoteException)e.InnerException;
            var info = TetherSessionController.DescribeFailure("Resume", remote);
            Assert.AreEqual("Resume failed: unknown session", info.Text);
            Assert.AreEqual(Severity.Error, info.Severity);
            Assert.AreEqual("Resume failed: the Tether server is not running.",
                TetherSessionController.DescribeFailure("Resume", new JsonRpcConnectionClosedException("x", null)).Text);
            Assert.AreEqual("Resume was cancelled.", TetherSessionController.DescribeFailure("Resume", new OperationCanceledException()).Text);
        }

        [Test]
        public void AMalformedResumeResultIsAProtocolException()
        {
            Serve("session/resume", p => new JValue(5));
            pair.Start();
            var e = Assert.Throws<AggregateException>(() => controller.ResumeAsync(null, CancellationToken.None).Wait(Timeout));
            Assert.IsInstanceOf<ProtocolException>(e.InnerException);
        }
    }
}
