using System.Linq;
using Newtonsoft.Json.Linq;
using NUnit.Framework;
using Tether.Client.Core.Protocol;

namespace Tether.Client.Core.Tests
{
    /// <summary>The conversation's messages read from docs/protocol.md's examples, and the requests written in its shapes.</summary>
    [TestFixture]
    public class ConversationProtocolTests
    {
        [Test]
        public void TheConversationsNotificationsReadTheDocsExamples()
        {
            var status = ProtocolJson.Read<SessionStatus>(Json.Q("{'sessionId':'1f3a','state':'rateLimited','attempt':1,'maxAttempts':5,'retryInMs':300000,'errorKind':'quotaExceeded',"
                + "'message':'Rate limited, resuming in 300 s. Claude\\u2019s quota resets at 13:00; continue with Codex now?',"
                + "'handoff':{'agent':'codex','title':'Continue with Codex','choice':'handoff:codex','question':'Continue with Codex now?','limitedForMs':5400000,'resetsUtc':'2026-11-22T13:00:00Z'}}"));
            Assert.AreEqual(SessionState.RateLimited, status.State);
            Assert.AreEqual("codex", status.Handoff.Agent);
            Assert.AreEqual("handoff:codex", status.Handoff.Choice);
            Assert.AreEqual(5400000, status.Handoff.LimitedForMs);
            Assert.AreEqual("2026-11-22T13:00:00Z", status.Handoff.ResetsUtc);
            Assert.AreEqual(SessionState.AgentSilent, ProtocolJson.Read<SessionStatus>(Json.Q("{'sessionId':'s','state':'agentSilent','attempt':0,'maxAttempts':0,'message':'m'}")).State);

            var expired = ProtocolJson.Read<Expired>(Json.Q("{'previousSessionId':'1f3a','sessionId':'77b0','choice':'newWithHistory','agent':'claude',"
                + "'carriedOver':{'fromSessionId':'1f3a','fromAgent':'claude','turns':12,'verbatimTurns':12,'totalTurns':12,'tokens':2210,'maxTokens':16000,'marker':'Context carried over from session 1f3a\\u2026: 12 turns'}}"));
            Assert.AreEqual("newWithHistory", expired.Choice);
            Assert.AreEqual(2210, expired.CarriedOver.Tokens);
            StringAssert.StartsWith("Context carried over", expired.CarriedOver.Marker);

            var ended = ProtocolJson.Read<TurnEnded>(Json.Q("{'sessionId':'77b0','seq':42,'stopReason':'end_turn'}"));
            Assert.AreEqual(42L, ended.Seq);
            Assert.AreEqual("end_turn", ended.StopReason);

            var resolved = ProtocolJson.Read<PermissionResolved>(Json.Q("{'sessionId':'77b0','seq':17,'questionSeq':15,'toolCallId':'call_2','outcome':{'outcome':'selected','optionId':'allow'},'reason':'answered'}"));
            Assert.AreEqual(15L, resolved.QuestionSeq);
            Assert.AreEqual("call_2", resolved.ToolCallId);
            Assert.AreEqual("allow", (string)resolved.Outcome["optionId"]);

            var reattached = ProtocolJson.Read<Reattached>(Json.Q("{'sessionId':'77b0','result':{'outcome':'resumed','sessionId':'77b0','breaker':{'status':'closed','attempts':1,'maxAttempts':3,'userRetries':0},'stale':false}}"));
            Assert.AreEqual(ResumeOutcome.Resumed, reattached.Result.Outcome);

            var restored = ProtocolJson.Read<Restored>(Json.Q("{'sessionId':'0110','snapshot':{'chatTurns':[],'execTurns':[]},'stale':true,'source':{'agent':'claude','path':'/h/.claude/projects/p/0110.jsonl','complete':true}}"));
            Assert.AreEqual("claude", restored.Source.Agent);
            Assert.IsTrue(restored.Source.Complete);
        }

        [Test]
        public void HistoryAndListAnswersReadTheDocsExamples()
        {
            var page = ProtocolJson.Read<HistoryResult>(Json.Q("{'sessionId':'77b0','chatTurnsBase':48,'chatTurns':[{'id':'t48','role':'user','text':'a'},{'id':'t49','role':'assistant','text':'b'}],'totalChatTurns':100}"));
            Assert.AreEqual(48L, page.ChatTurnsBase);
            Assert.AreEqual(new[] { "t48", "t49" }, page.ChatTurns.Select(t => t.Id).ToArray());
            Assert.AreEqual(100, page.TotalChatTurns);

            var list = ProtocolJson.Read<ListResult>(Json.Q("{'sessions':[{'sessionId':'77b0','agent':'claude','firstPrompt':'why does the build fail?','updatedUtc':'2026-11-22T01:00:00Z','turnCount':2,'live':true,'turnRunning':false,'clients':2},"
                + "{'sessionId':'0110','agent':'claude','title':'please run the tests','updatedUtc':'2026-11-20T09:12:44.120Z','turnCount':0,'live':false,'turnRunning':false,'clients':0,'source':'claude','path':'/p/0110.jsonl','sizeBytes':104861499}]}"));
            Assert.AreEqual("why does the build fail?", list.Sessions[0].FirstPrompt);
            Assert.IsTrue(list.Sessions[0].Live);
            Assert.AreEqual(2, list.Sessions[0].Clients);
            Assert.IsNull(list.Sessions[0].Source);
            Assert.AreEqual("claude", list.Sessions[1].Source);
            Assert.AreEqual(104861499L, list.Sessions[1].SizeBytes);
        }

        [Test]
        public void TheConversationsRequestsHaveTheDocsShapes()
        {
            var ws = new WorkspaceRef { Root = "/home/ada/proj" };
            Assert.IsTrue(JToken.DeepEquals(Json.Q("{'workspace':{'root':'/home/ada/proj'},'sessionId':'77b0','afterSeq':41}"),
                ProtocolJson.Write(new ResumeParams { Workspace = ws, SessionId = "77b0", AfterSeq = 41 })));
            Assert.IsTrue(JToken.DeepEquals(Json.Q("{'workspace':{'root':'/home/ada/proj'}}"), ProtocolJson.Write(new ResumeParams { Workspace = ws })),
                "no afterSeq when none is known");
            Assert.IsTrue(JToken.DeepEquals(Json.Q("{'workspace':{'root':'/home/ada/proj'},'sessionId':'77b0','beforeTurn':50,'limit':2}"),
                ProtocolJson.Write(new HistoryParams { Workspace = ws, SessionId = "77b0", BeforeTurn = 50, Limit = 2 })));
            Assert.IsTrue(JToken.DeepEquals(Json.Q("{'workspace':{'root':'/home/ada/proj'},'all':true}"), ProtocolJson.Write(new ListParams { Workspace = ws, All = true })));
            Assert.IsTrue(JToken.DeepEquals(Json.Q("{'sessionId':'1f3a','workspace':{'root':'/home/ada/proj'},'agent':'codex'}"),
                ProtocolJson.Write(new HandoffParams { SessionId = "1f3a", Workspace = ws, Agent = "codex" })));
        }
    }
}
