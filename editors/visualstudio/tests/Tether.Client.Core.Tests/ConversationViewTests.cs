using System;
using System.Collections.Generic;
using System.Linq;
using Newtonsoft.Json.Linq;
using NUnit.Framework;
using Tether.Client.Core.Protocol;
using Tether.Client.Core.Ui;

namespace Tether.Client.Core.Tests
{
    /// <summary>The tool window's view model and its text, message by message (the rules of editors/vscode/src/core/transcript.ts).</summary>
    [TestFixture]
    public class ConversationViewTests
    {
        private static JObject Update(string session, string update, bool replay = false, long seq = 1)
        {
            return new JObject(new JProperty("sessionId", session), new JProperty("update", Json.Q(update)), new JProperty("replay", replay), new JProperty("seq", seq));
        }

        private static ConversationView Live(string session = "s1")
        {
            var v = new ConversationView(new FakeClock());
            v.StartedSession(session, null);
            v.SetLive(session);
            return v;
        }

        [Test]
        public void ChunksOfOneKindExtendTheOpenItemAndAnotherKindClosesIt()
        {
            var v = Live();
            v.UserPrompt("hi");
            v.Update(Update("s1", "{'sessionUpdate':'agent_thought_chunk','content':{'type':'text','text':'hmm '}}"));
            v.Update(Update("s1", "{'sessionUpdate':'agent_thought_chunk','content':{'type':'text','text':'ok'}}"));
            v.Update(Update("s1", "{'sessionUpdate':'agent_message_chunk','content':{'type':'text','text':'Hello'}}"));
            v.Update(Update("s1", "{'sessionUpdate':'agent_message_chunk','content':{'type':'text','text':', you'}}"));
            Assert.AreEqual("== Tether: session s1 ==\nYou: hi\nThought: hmm ok\nAgent \u2026: Hello, you\nStatus: Session is live\n"
                + "Prompt: [Send (disabled)] [Cancel] The agent is answering; Cancel stops the turn.\n", ConversationText.Render(v));
            v.TurnEnded("end_turn", null);
            StringAssert.Contains("Agent: Hello, you\n", ConversationText.Render(v));
            StringAssert.EndsWith("Prompt: [Send] [Cancel (disabled)]\n", ConversationText.Render(v));
        }

        [Test]
        public void AToolCallIsOneItemWhoseUpdatesReplaceStatusAndOutput()
        {
            var v = Live();
            v.Update(Update("s1", "{'sessionUpdate':'tool_call','toolCallId':'c1','title':'Run','kind':'execute','status':'pending'}"));
            v.Update(Update("s1", "{'sessionUpdate':'tool_call','toolCallId':'c1','title':'Run tests','kind':'execute','status':'in_progress'}"));
            v.Update(Update("s1", "{'sessionUpdate':'tool_call_update','toolCallId':'c1','status':'failed','content':[{'type':'content','content':{'type':'text','text':'boom'}}],'_meta':{'tether':{'synthetic':true}}}"));
            var tools = v.Items.Where(i => i.Kind == ItemKind.Tool).ToList();
            Assert.AreEqual(1, tools.Count);
            CollectionAssert.AreEqual(new[] { "Tool call [execute] Run tests (failed)", "  Tether finished this tool call as failed: the agent could not report its result.", "  | boom" },
                ConversationText.Item(tools[0]).ToArray());
            // The id reused after the call finished is a new call.
            v.Update(Update("s1", "{'sessionUpdate':'tool_call','toolCallId':'c1','title':'Again','status':'pending'}"));
            Assert.AreEqual(2, v.Items.Count(i => i.Kind == ItemKind.Tool));
        }

        [Test]
        public void EachPlanUpdateReplacesTheTurnsPlanInPlace()
        {
            var v = Live();
            v.UserPrompt("go");
            v.Update(Update("s1", "{'sessionUpdate':'plan','entries':[{'content':'a','status':'pending','priority':'high'}]}"));
            v.Update(Update("s1", "{'sessionUpdate':'tool_call','toolCallId':'c1','title':'Step a','status':'completed'}"));
            v.Update(Update("s1", "{'sessionUpdate':'plan','entries':[{'content':'a','status':'completed','priority':'high'},{'content':'b','status':'in_progress','priority':'low'}]}"));
            var plans = v.Items.Where(i => i.Kind == ItemKind.Plan).ToList();
            Assert.AreEqual(1, plans.Count);
            Assert.AreEqual(ItemKind.Plan, v.Items[1].Kind, "the plan stays where it first showed, above the tool call");
            CollectionAssert.AreEqual(new[] { "Plan:", "  [done] a (high)", "  [running] b" }, ConversationText.Item(plans[0]).ToArray());
            // The next turn has a plan of its own.
            v.TurnEnded("end_turn", null);
            v.UserPrompt("again");
            v.Update(Update("s1", "{'sessionUpdate':'plan','entries':[]}"));
            Assert.AreEqual(2, v.Items.Count(i => i.Kind == ItemKind.Plan));
            CollectionAssert.AreEqual(new[] { "Plan:", "  (empty plan)" }, ConversationText.Item(v.Items.Last()).ToArray());
        }

        [Test]
        public void ARestoredTranscriptIsStaleUntilConfirmedAndReplayedUpdatesAreNotDrawnTwice()
        {
            var v = new ConversationView(new FakeClock());
            var snap = ProtocolJson.Read<SessionSnapshot>(Json.Q(
                "{'chatTurns':[{'id':'t1','role':'user','text':'run it','timestampUtc':'x','complete':true},{'id':'t2','role':'assistant','text':'[Bash] ls','complete':true,'linkedExecId':'e1'}],"
                + "'execTurns':[{'execId':'e1','header':'Bash','command':'ls','status':'completed','buffer':'a.txt','truncatedBytes':0}],'chatTurnsBase':3}"));
            v.Restored("s1", snap, new RestoredSource { Agent = "claude", Path = "/p/s1.jsonl", Complete = false }, true);
            v.Update(Update("s1", "{'sessionUpdate':'user_message_chunk','content':{'type':'text','text':'run it'}}", replay: true));
            Assert.AreEqual("== Tether: session s1 ==\n"
                + "[!] Transcript read from Claude Code's own session store, /p/s1.jsonl (its latest turns; older ones may exist): the agent has not confirmed it yet.\n"
                + "^ 3 older turns [Load older turns]\n"
                + "You (saved): run it\nAgent (saved): [Bash] ls\nTool call [execute] Bash: ls (done) (saved)\n  | a.txt\n"
                + "Status: Showing the saved transcript; resuming the session\u2026\nPrompt: [Send (disabled)] [Cancel (disabled)] The session is resuming; the prompt box opens when the agent confirms it.\n",
                ConversationText.Render(v));
            v.Confirmed();
            Assert.IsFalse(v.Stale);
            Assert.AreEqual(3L, v.BeginLoadOlder());
            Assert.AreEqual(OlderState.Loading, v.Older.State);
            v.OlderLoaded(new List<ChatTurn> { new ChatTurn { Id = "t0", Role = "user", Text = "first" } }, 2);
            Assert.AreEqual(new[] { "first", "run it" }, v.Items.Where(i => i.Kind == ItemKind.User).Select(i => i.Text).ToArray());
            Assert.AreEqual(2L, v.Base);
            Assert.AreEqual(OlderState.Available, v.Older.State);
        }

        [Test]
        public void UpdatesOfAnotherSessionAreNotDrawnAndALivePromptEchoOpensTheTurn()
        {
            var v = Live("s1");
            Assert.IsFalse(v.Update(Update("s2", "{'sessionUpdate':'agent_message_chunk','content':{'type':'text','text':'x'}}")));
            Assert.AreEqual(0, v.Items.Count);
            v.Update(Update("s1", "{'sessionUpdate':'user_message_chunk','content':{'type':'text','text':'from another editor'}}"));
            Assert.IsTrue(v.TurnRunning, "another editor's prompt: Cancel is offered");
            Assert.IsTrue(v.Prompt.CanCancel);
            v.TurnEnded("cancelled", null);
            StringAssert.Contains("Tether: Turn cancelled.\n", ConversationText.Render(v));
        }

        [Test]
        public void StatusesDecideThePromptBoxAndARateLimitCarriesTheHandoffOffer()
        {
            var v = Live();
            v.OnStatus(ProtocolJson.Read<SessionStatus>(Json.Q(
                "{'sessionId':'s1','state':'rateLimited','attempt':1,'maxAttempts':5,'retryInMs':300000,'message':'Rate limited, resuming in 300 s. Continue with Codex now?',"
                + "'handoff':{'agent':'codex','title':'Continue with Codex','choice':'handoff:codex','question':'Continue with Codex now?','limitedForMs':5400000}}")), null);
            var text = ConversationText.Render(v);
            StringAssert.Contains("? Continue with Codex now? [Continue with Codex] [Keep Waiting]\n", text);
            StringAssert.Contains("Prompt: [Send (disabled)] [Cancel (disabled)] Rate limited, resuming in 300 s. Continue with Codex now? The prompt box opens when the session is back.", text);
            v.Countdown("Rate limited, resuming in 299 s");
            StringAssert.Contains("Status: Rate limited, resuming in 299 s\n", ConversationText.Render(v), "the countdown reaches the window's status line");
            v.DismissHandoff();
            Assert.IsNull(v.Handoff);
            v.OnStatus(new SessionStatus { SessionId = "s1", State = SessionState.Ready }, "Session ready");
            Assert.IsTrue(v.Prompt.CanSend);
            v.Countdown("Rate limited, resuming in 1 s");
            Assert.AreEqual("Session ready", v.Status.Text, "no countdown outside a rate-limit wait");
            v.NeedsChoice("Previous session not found");
            Assert.AreEqual("Tether needs your choice first (see the dialog).", v.Prompt.Reason);
        }

        [Test]
        public void SessionRowsNameTheSourceOfEachEntry()
        {
            var list = ProtocolJson.Read<ListResult>(Json.Q(
                "{'sessions':[{'sessionId':'77b0aaaa-1','agent':'claude','firstPrompt':'why does the build fail?','updatedUtc':'2026-11-22T00:55:00Z','turnCount':2,'live':true,'turnRunning':false,'clients':2},"
                + "{'sessionId':'0110','agent':'claude','title':'please run the tests','updatedUtc':'2026-11-20T09:12:44.120Z','turnCount':0,'live':false,'turnRunning':false,'clients':0,'source':'claude','path':'/h/.claude/projects/p/0110.jsonl','sizeBytes':10},"
                + "{'sessionId':'acp-9','agent':'codex','updatedUtc':'','turnCount':0,'live':false,'turnRunning':false,'clients':0,'source':'acp'}]}"));
            var rows = SessionRows.From(list, new FakeClock().UtcNow);
            Assert.AreEqual(
                "why does the build fail? \u2014 claude \u00b7 Tether's cache \u2014 updated 5 min ago \u00b7 2 turns \u00b7 live, 2 editors \u00b7 77b0aaaa-1\n"
                + "please run the tests \u2014 claude \u00b7 Claude Code's own store \u2014 updated 1 day ago \u00b7 0110 \u00b7 /h/.claude/projects/p/0110.jsonl\n"
                + "Session acp-9 \u2014 codex \u00b7 listed by the running agent \u2014 updated at an unknown time \u00b7 acp-9\n",
                SessionRows.Render(rows));
        }

        [Test]
        public void TheRecoveryDialogShowsEveryChoiceTheServerOffersInItsOrder()
        {
            var result = ProtocolJson.Read<ResumeResult>(Json.Q(
                "{'outcome':'needsChoice','sessionId':'s1','breaker':{'status':'open','attempts':1,'maxAttempts':3,'userRetries':0},"
                + "'recovery':{'message':'Rate limited','detail':'d','actions':[{'id':'retry','title':'Try Again'},{'id':'handoff:codex','title':'Continue with Codex'},"
                + "{'id':'newWithHistory','title':'Continue in a New Session'},{'id':'new','title':'Start New Session'},{'id':'login','title':'Log In'}]}}"));
            var presenter = new SessionPresenter(new FakeClock());
            presenter.OnResumeResult(result);
            var modal = presenter.PendingRecovery;
            CollectionAssert.AreEqual(new[] { "Try Again", "Continue with Codex", "Continue in a New Session", "Start New Session" }, modal.ButtonTitles.ToArray());
            var decision = presenter.OnRecoveryAnswer("handoff:codex");
            Assert.AreEqual("handoff:codex", decision.Choice.Choice);
            Assert.AreEqual("s1", decision.Choice.SessionId);
        }
    }
}
