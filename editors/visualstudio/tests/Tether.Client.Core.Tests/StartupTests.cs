using System;
using System.Collections.Generic;
using System.IO;
using System.Linq;
using System.Threading;
using System.Threading.Tasks;
using Newtonsoft.Json.Linq;
using NUnit.Framework;
using Tether.Client.Core.Protocol;
using Tether.Client.Core.Ui;

namespace Tether.Client.Core.Tests
{
    /// <summary>
    /// Opening a solution resumes only what exists (R-RESUME-11): the resume at start sends
    /// <c>create: false</c> when it has no session id to resume, <c>nothingToResume</c> is an idle
    /// window with no error, and the first prompt starts a session (over a scripted peer).
    /// </summary>
    [TestFixture]
    public class StartupTests : ScriptedPeer
    {
        private const string Nothing = "{'outcome':'nothingToResume','sessionId':null,'breaker':{'status':'closed','attempts':0,'maxAttempts':3,'userRetries':0},'stale':false}";

        [Test]
        public void TheResumeAtStartSendsCreateFalseWhenItHasNoSessionIdToResume()
        {
            Serve("session/resume", Answer(Nothing));
            pair.Start();
            var r = controller.ResumeAtStartupAsync(CancellationToken.None).Result;
            Assert.AreEqual(ResumeOutcome.NothingToResume, r.Outcome);
            Assert.IsNull(r.SessionId);
            var sent = Received().Single();
            Assert.IsTrue(JToken.DeepEquals(Json.Q("{'workspace':{'root':'/work/ws'},'create':false}"), sent["params"]), sent.ToString());
            Assert.IsTrue(log.Lines.Any(l => l.StartsWith("session/resume /work/ws create=false", StringComparison.Ordinal)), log.ToString());
        }

        [Test]
        public void TheResumeAtStartResumesTheRememberedSessionByIdWithoutCreate()
        {
            controller.Memory = new MemoryStore { Value = "remembered-1" };
            Serve("session/resume", Answer(Started.Replace("'s1'", "'remembered-1'").Replace("started", "resumed")));
            pair.Start();
            controller.ResumeAtStartupAsync(CancellationToken.None).Wait(Timeout);
            var sent = Received().Single();
            Assert.IsTrue(JToken.DeepEquals(Json.Q("{'workspace':{'root':'/work/ws'},'sessionId':'remembered-1'}"), sent["params"]), sent.ToString());
        }

        [Test]
        public void ResumeSessionSendsNoCreateSoTheServerStartsASession()
        {
            Serve("session/resume", Answer(Started));
            pair.Start();
            var r = controller.ResumeAsync(null, CancellationToken.None).Result;
            Assert.AreEqual(ResumeOutcome.Started, r.Outcome);
            var sent = Received().Single();
            Assert.IsTrue(JToken.DeepEquals(Json.Q("{'workspace':{'root':'/work/ws'}}"), sent["params"]), sent.ToString());
            Assert.AreEqual("s1", controller.ActiveSessionId);
        }

        [Test]
        public void NothingToResumeIsAnIdleWindowWithNoErrorAndSendOpen()
        {
            Serve("session/resume", Answer(Nothing));
            pair.Start();
            controller.ResumeAtStartupAsync(CancellationToken.None).Wait(Timeout);
            Assert.IsNull(controller.ActiveSessionId);
            Assert.IsNull(controller.Presenter.PendingRecovery);
            Assert.AreEqual(0, ui.Of<ShowInfo>().Count, "no message box, no notification");
            Assert.AreEqual(0, ui.Of<ShowInfoBar>().Count, "no info bar");
            Assert.AreEqual(0, ui.Modals.Count, "no dialog");
            Assert.AreEqual(StatusText.NoSession, ui.Of<SetStatus>().Last().Text);
            Assert.AreEqual("idle", controller.Conversation.Status.State);
            Assert.AreEqual(StatusText.NoSession, controller.Conversation.Status.Text);
            StringAssert.Contains("Send a prompt to start one", StatusText.NoSession);
            Assert.IsTrue(controller.Conversation.Prompt.CanSend, "a prompt starts the session");
            StringAssert.Contains("Status: " + StatusText.NoSession + "\nPrompt: [Send] [Cancel (disabled)]\n", ConversationText.Render(controller.Conversation));
        }

        [Test]
        public void APromptWithNoSessionFirstResumesWithoutCreateFalseThenPromptsTheStartedSession()
        {
            Serve("session/resume", Answer(Nothing), Answer(Started));
            Serve("session/prompt", p =>
            {
                pair.Server.NotifyAsync("session/update", Json.Q("{'sessionId':'s1','update':{'sessionUpdate':'agent_message_chunk','content':{'type':'text','text':'hi back'}},'replay':false}")).Wait();
                return Task.FromResult(Json.Q("{'stopReason':'end_turn'}"));
            });
            pair.Start();
            controller.ResumeAtStartupAsync(CancellationToken.None).Wait(Timeout);
            var reply = controller.SendAsync("hello", CancellationToken.None).Result;
            Assert.AreEqual("end_turn", (string)reply["stopReason"]);
            var sent = Received();
            CollectionAssert.AreEqual(new[] { "session/resume", "session/resume", "session/prompt" }, sent.Select(r => (string)r["method"]).ToArray());
            Assert.IsTrue(JToken.DeepEquals(Json.Q("{'workspace':{'root':'/work/ws'},'create':false}"), sent[0]["params"]), sent[0].ToString());
            Assert.IsTrue(JToken.DeepEquals(Json.Q("{'workspace':{'root':'/work/ws'}}"), sent[1]["params"]), sent[1].ToString());
            Assert.AreEqual("s1", (string)sent[2]["params"]["sessionId"]);
            Assert.AreEqual("s1", controller.ActiveSessionId);
            var text = ConversationText.Render(controller.Conversation);
            StringAssert.Contains("You: hello\n", text);
            StringAssert.Contains("Agent: hi back\n", text);
            StringAssert.Contains("Status: Session is live\n", text);
        }

        [Test]
        public void APromptSentWhileTheResumeAtStartIsInFlightWaitsForItsAnswer()
        {
            var startup = new TaskCompletionSource<JToken>();
            bool startupAnsweredFirst = false;
            Serve("session/resume", p => startup.Task, p =>
            {
                startupAnsweredFirst = startup.Task.IsCompleted;
                return Task.FromResult(Json.Q(Started));
            });
            Serve("session/prompt", p => Task.FromResult(Json.Q("{'stopReason':'end_turn'}")));
            pair.Start();
            var atStart = controller.ResumeAtStartupAsync(CancellationToken.None);
            var prompt = controller.SendAsync("hello", CancellationToken.None);
            Assert.IsFalse(prompt.IsCompleted);
            startup.SetResult(Json.Q(Nothing));
            Assert.IsTrue(atStart.Wait(Timeout));
            Assert.IsTrue(prompt.Wait(Timeout));
            Assert.IsTrue(startupAnsweredFirst, "the prompt's resume went after the answer to the one at start");
            var sent = Received();
            CollectionAssert.AreEqual(new[] { "session/resume", "session/resume", "session/prompt" }, sent.Select(r => (string)r["method"]).ToArray());
            Assert.IsFalse(sent[1]["params"]["create"] != null, sent[1].ToString());
        }

        [Test]
        public void APromptWhenASessionIsLiveSendsNoResume()
        {
            Serve("session/resume", Answer(Started));
            Serve("session/prompt", p => Task.FromResult(Json.Q("{'stopReason':'end_turn'}")));
            pair.Start();
            controller.ResumeAsync(null, CancellationToken.None).Wait(Timeout);
            controller.SendAsync("again", CancellationToken.None).Wait(Timeout);
            CollectionAssert.AreEqual(new[] { "session/resume", "session/prompt" }, Received().Select(r => (string)r["method"]).ToArray());
        }

        [Test]
        public void APromptWhoseSessionCouldNotStartIsRefusedAndSendsNoPrompt()
        {
            Serve("session/resume", Answer(Nothing), Answer(
                "{'outcome':'failed','sessionId':null,'breaker':{'status':'open','attempts':1,'maxAttempts':3,'userRetries':0},"
                + "'error':{'kind':'invalidRequest','message':'agent command not found: claude-agent-acp','retryable':false,'source':'process'},'stale':false}"));
            pair.Start();
            controller.ResumeAtStartupAsync(CancellationToken.None).Wait(Timeout);
            var e = Assert.Throws<AggregateException>(() => controller.SendAsync("hi", CancellationToken.None).Wait(Timeout));
            Assert.IsInstanceOf<InvalidOperationException>(e.InnerException);
            StringAssert.Contains("no session is live", e.InnerException.Message);
            CollectionAssert.AreEqual(new[] { "session/resume", "session/resume" }, Received().Select(r => (string)r["method"]).ToArray());
            Assert.AreEqual(Severity.Error, ui.Of<ShowInfo>().Last().Severity, "the failure to start is shown as any failed resume is");
        }

        [Test]
        public void ANewConversationViewSaysHowToStartASessionWithSendOpen()
        {
            var v = new ConversationView(new FakeClock());
            Assert.AreEqual("idle", v.Status.State);
            Assert.AreEqual(StatusText.NoSession, v.Status.Text);
            Assert.IsTrue(v.Prompt.CanSend);
            Assert.AreEqual("", v.Prompt.Reason);
            v.UserPrompt("hello");
            Assert.IsFalse(v.Prompt.CanSend, "no second prompt while the first runs");
            v.Failed("agent command not found");
            Assert.IsFalse(v.Prompt.CanSend);
            StringAssert.Contains("Resume Session", v.Prompt.Reason);
        }
    }
}
