using System;
using System.Collections.Generic;
using System.Linq;
using Newtonsoft.Json.Linq;
using NUnit.Framework;
using Tether.Client.Core.Protocol;

namespace Tether.Client.Core.Tests
{
    [TestFixture]
    public class ProtocolTests
    {
        [Test]
        public void ResumeResultNeedsChoiceReadsEveryField()
        {
            var r = ProtocolJson.Read<ResumeResult>(Json.Q(@"{'outcome':'needsChoice','sessionId':'s-1','previousSessionId':'s-0',
                'breaker':{'status':'open','attempts':3,'maxAttempts':3,'userRetries':1},
                'error':{'kind':'network','message':'connection refused','retryable':true,'retryAfterMs':1500,'source':'process','code':-32603},
                'recovery':{'message':'Cannot connect to claude','detail':'Network error after 3 attempts: connection refused',
                            'actions':[{'id':'retry','title':'Try Again'},{'id':'new','title':'Start New Session'}]},
                'reconciliation':{'confirmedTurns':4,'staleExecCount':1,'staleDiffCount':2,'droppedApprovals':3},
                'stale':true}"));
            Assert.AreEqual(ResumeOutcome.NeedsChoice, r.Outcome);
            Assert.AreEqual("s-1", r.SessionId);
            Assert.AreEqual("s-0", r.PreviousSessionId);
            Assert.AreEqual(BreakerStatus.Open, r.Breaker.Status);
            Assert.AreEqual(3, r.Breaker.Attempts);
            Assert.AreEqual(3, r.Breaker.MaxAttempts);
            Assert.AreEqual(1, r.Breaker.UserRetries);
            Assert.AreEqual(ErrorKind.Network, r.Error.Kind);
            Assert.AreEqual("connection refused", r.Error.Message);
            Assert.IsTrue(r.Error.Retryable);
            Assert.AreEqual(1500, r.Error.RetryAfterMs);
            Assert.AreEqual(ErrorSource.Process, r.Error.Source);
            Assert.AreEqual(-32603, r.Error.Code);
            Assert.AreEqual("Cannot connect to claude", r.Recovery.Message);
            Assert.AreEqual(new[] { "retry", "new" }, r.Recovery.Actions.Select(a => a.Id).ToArray());
            Assert.AreEqual(new[] { "Try Again", "Start New Session" }, r.Recovery.Actions.Select(a => a.Title).ToArray());
            Assert.AreEqual(4, r.Reconciliation.ConfirmedTurns);
            Assert.AreEqual(1, r.Reconciliation.StaleExecCount);
            Assert.AreEqual(2, r.Reconciliation.StaleDiffCount);
            Assert.AreEqual(3, r.Reconciliation.DroppedApprovals);
            Assert.IsTrue(r.Stale);
        }

        [Test]
        public void EveryWireEnumValueOfTheSketchParses()
        {
            CollectionAssert.AreEqual(
                new[] { ResumeOutcome.Resumed, ResumeOutcome.Started, ResumeOutcome.NeedsChoice, ResumeOutcome.Failed },
                new[] { "resumed", "started", "needsChoice", "failed" }.Select(s => (ResumeOutcome)WireEnumConverter.Parse(typeof(ResumeOutcome), s)));
            CollectionAssert.AreEqual(
                new[] { BreakerStatus.Closed, BreakerStatus.Retrying, BreakerStatus.Open, BreakerStatus.HalfOpen },
                new[] { "closed", "retrying", "open", "halfOpen" }.Select(s => (BreakerStatus)WireEnumConverter.Parse(typeof(BreakerStatus), s)));
            var kinds = new[] { "sessionExpired", "sessionNotReady", "network", "serverError", "rateLimited", "quotaExceeded",
                "authentication", "sessionCorrupt", "agentCrashed", "invalidRequest", "cancelled", "unknown" };
            foreach (var k in kinds)
            {
                var parsed = (ErrorKind)WireEnumConverter.Parse(typeof(ErrorKind), k);
                Assert.AreEqual(k, WireEnumConverter.ToWire(parsed), "error kind " + k + " must round-trip");
            }
            foreach (var s in new[] { "resuming", "waitingRetry", "rateLimited", "ready", "failed" })
            {
                Assert.AreEqual(s, WireEnumConverter.ToWire((SessionState)WireEnumConverter.Parse(typeof(SessionState), s)));
            }
            foreach (var s in new[] { "restoreFailed", "staleSnapshot", "streamError", "persistenceDisabled", "recoveredLive", "cannotSave", "movedHere", "notSynced" })
            {
                Assert.AreEqual(s, WireEnumConverter.ToWire((BannerKind)WireEnumConverter.Parse(typeof(BannerKind), s)));
            }
            foreach (var s in new[] { "acp", "process", "http" })
            {
                Assert.AreEqual(s, WireEnumConverter.ToWire((ErrorSource)WireEnumConverter.Parse(typeof(ErrorSource), s)));
            }
        }

        [Test]
        public void AnEnumValueFromANewerServerFallsBackInsteadOfDroppingTheMessage()
        {
            var r = ProtocolJson.Read<ResumeResult>(Json.Q("{'outcome':'somethingNew','breaker':{'status':'quarantined'},'stale':false}"));
            Assert.AreEqual(ResumeOutcome.Unknown, r.Outcome);
            Assert.AreEqual(BreakerStatus.Unknown, r.Breaker.Status);
            var b = ProtocolJson.Read<Banner>(Json.Q("{'id':'b','kind':'quotaWarning','message':'m','dismissible':true}"));
            Assert.AreEqual(BannerKind.Unknown, b.Kind);
            Assert.AreEqual("m", b.Message);
        }

        [Test]
        public void StatusWithAndWithoutOptionalFields()
        {
            var s = ProtocolJson.Read<SessionStatus>(Json.Q("{'sessionId':'s','state':'rateLimited','attempt':1,'maxAttempts':5,'retryInMs':40000,'errorKind':'rateLimited','message':'x'}"));
            Assert.AreEqual(SessionState.RateLimited, s.State);
            Assert.AreEqual(40000, s.RetryInMs);
            Assert.AreEqual(ErrorKind.RateLimited, s.ErrorKind);
            Assert.AreEqual("x", s.Message);
            var t = ProtocolJson.Read<SessionStatus>(Json.Q("{'sessionId':'s','state':'resuming','attempt':2,'maxAttempts':3}"));
            Assert.IsNull(t.RetryInMs);
            Assert.IsNull(t.ErrorKind);
        }

        [Test]
        public void NotificationsOfTheSketchParse()
        {
            var e = ProtocolJson.Read<Expired>(Json.Q("{'previousSessionId':'old','sessionId':'new'}"));
            Assert.AreEqual("old", e.PreviousSessionId);
            Assert.AreEqual("new", e.SessionId);
            var c = ProtocolJson.Read<BannerCleared>(Json.Q("{'id':'tether.stale'}"));
            Assert.AreEqual("tether.stale", c.Id);
            var p = ProtocolJson.Read<PermissionRequest>(Json.Q(@"{'sessionId':'s','toolCall':{'toolCallId':'t1','title':'Run ls'},
                'options':[{'optionId':'a','name':'Allow once','kind':'allow_once'},{'optionId':'r','name':'Reject','kind':'reject_once'}]}"));
            Assert.AreEqual("Run ls", (string)p.ToolCall["title"]);
            Assert.AreEqual(2, p.Options.Count);
            Assert.AreEqual("allow_once", p.Options[0].Kind);
            var pr = ProtocolJson.Read<PersistResult>(Json.Q("{'saved':true,'coalesced':false,'bytes':812,'durationMs':0.4,'schemaVersion':1}"));
            Assert.IsTrue(pr.Saved);
            Assert.AreEqual(812, pr.Bytes);
            Assert.AreEqual(0.4, pr.DurationMs, 1e-9);
            Assert.AreEqual(1, pr.SchemaVersion);
            var t = ProtocolJson.Read<TelemetryEvent>(Json.Q("{'name':'session.resume.partial','properties':{'staleExecCount':1}}"));
            Assert.AreEqual("session.resume.partial", t.Name);
        }

        [Test]
        public void MalformedMessagesGiveAProtocolExceptionNamingTheType()
        {
            var e = Assert.Throws<ProtocolException>(() => ProtocolJson.Read<SessionStatus>(Json.Q("[1,2]")));
            StringAssert.Contains("SessionStatus", e.Message);
            e = Assert.Throws<ProtocolException>(() => ProtocolJson.Read<SessionStatus>(null));
            StringAssert.Contains("SessionStatus", e.Message);
            e = Assert.Throws<ProtocolException>(() => ProtocolJson.Read<SessionStatus>(Json.Q("{'attempt':'two'}")));
            StringAssert.Contains("SessionStatus", e.Message);
            e = Assert.Throws<ProtocolException>(() => ProtocolJson.Read<SessionStatus>(Json.Q("{'state':7}")));
            StringAssert.Contains("SessionState", e.Message);
            Assert.Throws<ProtocolException>(() => ProtocolJson.Parse("{\"a\":"));
            Assert.Throws<ProtocolException>(() => ProtocolJson.Parse("{} {}"));
        }

        [Test]
        public void SnapshotRoundTripKeepsSectionsThisClientDoesNotModel()
        {
            var json = Json.Q(@"{'chatTurns':[{'id':'1','role':'user','text':'hi','timestampUtc':'2026-11-22T01:00:00Z','complete':true,'linkedExecId':'e1'}],
                'execTurns':[{'execId':'e1','header':'ls','command':'ls','status':'completed','exitCode':0,'buffer':'a\nb','truncatedBytes':0}],
                'uiState':{'draftInput':'half','isStreamErrorVisible':false},'context':{'workingDir':'/w'}}");
            var s = ProtocolJson.Read<SessionSnapshot>(json);
            Assert.AreEqual("hi", s.ChatTurns[0].Text);
            Assert.AreEqual("2026-11-22T01:00:00Z", s.ChatTurns[0].TimestampUtc, "times stay RFC 3339 strings, never re-formatted");
            var back = ProtocolJson.Write(s);
            Assert.IsTrue(JToken.DeepEquals(json, back), "round trip changed the snapshot:\n" + back);
        }

        [Test]
        public void RequestParamsHaveTheSketchShape()
        {
            var resume = ProtocolJson.Write(new ResumeParams { Workspace = new WorkspaceRef { Root = "/w" } });
            Assert.IsTrue(JToken.DeepEquals(Json.Q("{'workspace':{'root':'/w'}}"), resume), resume.ToString());
            var resume2 = ProtocolJson.Write(new ResumeParams { Workspace = new WorkspaceRef { Root = "/w" }, SessionId = "s", Agent = "claude", WorkDoneToken = "tok" });
            Assert.IsTrue(JToken.DeepEquals(Json.Q("{'workspace':{'root':'/w'},'sessionId':'s','agent':'claude','workDoneToken':'tok'}"), resume2), resume2.ToString());
            var choice = ProtocolJson.Write(new RecoveryChoiceParams { SessionId = "s", Choice = "retry" });
            Assert.IsTrue(JToken.DeepEquals(Json.Q("{'sessionId':'s','choice':'retry'}"), choice), choice.ToString());
            var clear = ProtocolJson.Write(new ClearParams { Workspace = new WorkspaceRef { Root = "/w" } });
            Assert.IsTrue(JToken.DeepEquals(Json.Q("{'workspace':{'root':'/w'}}"), clear), clear.ToString());
        }

        [Test]
        public void SettingsBecomeInitializationOptions()
        {
            var defaults = ProtocolJson.Write(new TetherSettings().ToInitializationOptions());
            Assert.IsTrue(JToken.DeepEquals(Json.Q("{'storage':{'persist':true,'encrypt':false}}"), defaults), defaults.ToString());

            var s = new TetherSettings { PersistenceEnabled = false, EncryptionEnabled = true, AgentCommand = "  opencode  acp \"--flag with space\" " };
            var o = ProtocolJson.Write(s.ToInitializationOptions());
            var expected = Json.Q(@"{'storage':{'persist':false,'encrypt':true},
                'agents':{'configured':{'command':'opencode','args':['acp','--flag with space'],'env':{},'protocol':'acp'}},
                'defaultAgent':'configured'}");
            Assert.IsTrue(JToken.DeepEquals(expected, o), o.ToString());
        }

        [Test]
        public void AgentEnvironmentNamesKeepTheirCase()
        {
            var o = new InitializationOptions
            {
                Agents = new Dictionary<string, AgentConfig>
                {
                    { "Scripted", new AgentConfig { Command = "/bin/agent", Env = new Dictionary<string, string> { { "TETHER_SCENARIO", "/tmp/x.json" } } } },
                },
                Resume = new ResumePolicyOptions { MaxAttempts = 3, BaseDelayMs = 10, MaxDelayMs = 40, Jitter = "none" },
            };
            var j = ProtocolJson.Write(o);
            Assert.AreEqual("/tmp/x.json", (string)j.SelectToken("agents.Scripted.env.TETHER_SCENARIO"), j.ToString());
            Assert.IsTrue(JToken.DeepEquals(Json.Q("{'maxAttempts':3,'baseDelayMs':10,'maxDelayMs':40,'jitter':'none'}"), j["resume"]), j.ToString());
            Assert.IsNull(j["rateLimit"], "unset policies are omitted so the server's defaults apply");
        }

        [Test]
        public void CommandLineSplitting()
        {
            CollectionAssert.AreEqual(new[] { "a", "b c", "d" }, CommandLine.Split("a \"b c\" d"));
            CollectionAssert.AreEqual(new[] { "C:\\Program Files\\x.exe" }, CommandLine.Split("\"C:\\Program Files\\x.exe\""));
            CollectionAssert.AreEqual(new[] { "" }, CommandLine.Split("\"\""));
            CollectionAssert.IsEmpty(CommandLine.Split("   "));
            CollectionAssert.IsEmpty(CommandLine.Split(null));
            Assert.Throws<FormatException>(() => CommandLine.Split("a \"b"));
        }

        [Test]
        public void TetherCapabilityIsAddedWithoutLosingOtherCapabilities()
        {
            var init = Json.Q("{'processId':1,'capabilities':{'window':{'workDoneProgress':true},'experimental':{'other':1}}}");
            TetherCapabilities.AddTo(init);
            Assert.IsTrue(JToken.DeepEquals(Json.Q("{'recoveryDialog':true,'banners':true,'status':true}"), init.SelectToken("capabilities.experimental.tether")));
            Assert.AreEqual(1, (int)init.SelectToken("capabilities.experimental.other"));
            Assert.AreEqual(true, (bool)init.SelectToken("capabilities.window.workDoneProgress"));
            var bare = Json.Q("{}");
            TetherCapabilities.AddTo(bare);
            Assert.AreEqual(true, (bool)bare.SelectToken("capabilities.experimental.tether.recoveryDialog"));
            Assert.Throws<ArgumentException>(() => TetherCapabilities.AddTo(new JArray()));
        }

        [Test]
        public void ServerProtocolVersionIsReadFromTheInitializeResult()
        {
            Assert.AreEqual(1, TetherCapabilities.ServerProtocolVersion(Json.Q("{'capabilities':{'experimental':{'tether':{'protocolVersion':1}}},'serverInfo':{'name':'tether'}}")));
            Assert.IsNull(TetherCapabilities.ServerProtocolVersion(Json.Q("{'capabilities':{}}")));
            Assert.IsNull(TetherCapabilities.ServerProtocolVersion(Json.Q("{'capabilities':{'experimental':{'tether':{'protocolVersion':'1'}}}}")));
        }
    }
}
