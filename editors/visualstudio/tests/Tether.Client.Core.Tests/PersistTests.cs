using System;
using System.Collections.Generic;
using System.Linq;
using System.Threading.Tasks;
using Newtonsoft.Json.Linq;
using NUnit.Framework;
using Tether.Client.Core.Persist;
using Tether.Client.Core.Protocol;
using Tether.Client.Core.Ui;

namespace Tether.Client.Core.Tests
{
    [TestFixture]
    public class PersistSchedulerTests
    {
        private FakeClock clock;
        private List<PersistParams> sent;
        private Func<PersistParams, Task<PersistResult>> answer;
        private PersistScheduler scheduler;
        private int snapshots;
        private ListLog log;

        [SetUp]
        public void SetUp()
        {
            clock = new FakeClock();
            sent = new List<PersistParams>();
            snapshots = 0;
            log = new ListLog();
            answer = p => Task.FromResult(new PersistResult { Saved = p.Trigger == PersistTriggers.Shutdown, Coalesced = p.Trigger == PersistTriggers.Timer });
            scheduler = new PersistScheduler(clock, p => { sent.Add(p); return answer(p); }, () =>
            {
                snapshots++;
                var s = SessionSnapshot.Empty("/w");
                s.ChatTurns.Add(new ChatTurn { Id = "t" + snapshots, Role = "user", Text = "n" + snapshots, Complete = true });
                return s;
            }, new WorkspaceRef { Root = "/w" }, log);
        }

        private PersistResult Tick()
        {
            return scheduler.TickAsync().Result;
        }

        [Test]
        public void NothingIsSentWhileNoSessionIsActive()
        {
            clock.Advance(TimeSpan.FromMinutes(5));
            Assert.IsNull(Tick());
            Assert.IsNull(scheduler.ShutdownAsync().Result);
            CollectionAssert.IsEmpty(sent);
            Assert.IsNull(scheduler.NextDueUtc);
        }

        [Test]
        public void ATimerPersistEveryThirtySecondsWhileActive()
        {
            var start = clock.UtcNow;
            scheduler.Activate("s1");
            Assert.AreEqual(start + TimeSpan.FromSeconds(30), scheduler.NextDueUtc);
            clock.Advance(TimeSpan.FromSeconds(29.999));
            Assert.IsNull(Tick(), "not due before 30 s");
            clock.Advance(TimeSpan.FromMilliseconds(1));
            Assert.IsNotNull(Tick(), "due at 30 s");
            Assert.IsNull(Tick(), "one persist per period, however often the host ticks");
            clock.Advance(TimeSpan.FromSeconds(30));
            Assert.IsNotNull(Tick());
            Assert.AreEqual(2, sent.Count);
            Assert.IsTrue(sent.All(p => p.Trigger == "timer" && p.SessionId == "s1" && p.Workspace.Root == "/w"));
            Assert.AreEqual("n2", sent[1].Snapshot.ChatTurns[0].Text, "each persist takes a fresh snapshot");
        }

        [Test]
        public void ALateTickSendsOnceAndRestartsThePeriodFromThen()
        {
            scheduler.Activate("s1");
            clock.Advance(TimeSpan.FromSeconds(95));
            Assert.IsNotNull(Tick());
            Assert.IsNull(Tick(), "missed periods are not replayed as a burst");
            clock.Advance(TimeSpan.FromSeconds(29));
            Assert.IsNull(Tick());
            clock.Advance(TimeSpan.FromSeconds(1));
            Assert.IsNotNull(Tick());
            Assert.AreEqual(2, sent.Count);
        }

        [Test]
        public void DeactivationStopsTimerPersists()
        {
            scheduler.Activate("s1");
            scheduler.Deactivate();
            clock.Advance(TimeSpan.FromMinutes(2));
            Assert.IsNull(Tick());
            CollectionAssert.IsEmpty(sent);
        }

        [Test]
        public void ActivatingAnotherSessionSwitchesAndRestartsThePeriod()
        {
            scheduler.Activate("s1");
            clock.Advance(TimeSpan.FromSeconds(20));
            scheduler.Activate("s2");
            clock.Advance(TimeSpan.FromSeconds(20));
            Assert.IsNull(Tick(), "s2's first persist is due 30 s after it became active");
            clock.Advance(TimeSpan.FromSeconds(10));
            Tick();
            Assert.AreEqual("s2", sent.Single().SessionId);
        }

        [Test]
        public void ReactivatingTheSameSessionKeepsTheSchedule()
        {
            scheduler.Activate("s1");
            clock.Advance(TimeSpan.FromSeconds(20));
            scheduler.Activate("s1");
            clock.Advance(TimeSpan.FromSeconds(10));
            Assert.IsNotNull(Tick());
        }

        [Test]
        public void AFailedTimerPersistIsLoggedCountedAndTriedAgainNextPeriod()
        {
            answer = p => { var t = new TaskCompletionSource<PersistResult>(); t.SetException(new InvalidOperationException("disk full")); return t.Task; };
            scheduler.Activate("s1");
            clock.Advance(TimeSpan.FromSeconds(30));
            Assert.IsNull(Tick());
            Assert.AreEqual(1, scheduler.FailureCount);
            StringAssert.Contains("disk full", log.ToString());
            Assert.IsNull(Tick(), "no hammering after a failure");
            answer = p => Task.FromResult(new PersistResult { Coalesced = true });
            clock.Advance(TimeSpan.FromSeconds(30));
            Assert.IsNotNull(Tick());
            Assert.AreEqual(2, sent.Count);
        }

        [Test]
        public void ADelegateThatThrowsSynchronouslyIsAFailureNotACrash()
        {
            answer = p => { throw new InvalidOperationException("not connected"); };
            scheduler.Activate("s1");
            clock.Advance(TimeSpan.FromSeconds(30));
            Assert.IsNull(Tick());
            Assert.AreEqual(1, scheduler.FailureCount);
        }

        [Test]
        public void TicksWhileAPersistIsInFlightDoNothing()
        {
            var gate = new TaskCompletionSource<PersistResult>();
            answer = p => gate.Task;
            scheduler.Activate("s1");
            clock.Advance(TimeSpan.FromSeconds(30));
            var first = scheduler.TickAsync();
            clock.Advance(TimeSpan.FromSeconds(60));
            Assert.IsNull(scheduler.TickAsync().Result, "never two persists at once");
            gate.SetResult(new PersistResult { Coalesced = true });
            Assert.IsTrue(first.Result.Coalesced);
            Assert.AreEqual(1, sent.Count);
        }

        [Test]
        public void ShutdownSendsAShutdownPersistOnceAndDeactivates()
        {
            scheduler.Activate("s1");
            clock.Advance(TimeSpan.FromSeconds(3));
            var r = scheduler.ShutdownAsync().Result;
            Assert.IsTrue(r.Saved);
            Assert.AreEqual("shutdown", sent.Single().Trigger);
            Assert.AreEqual("s1", sent.Single().SessionId);
            Assert.IsNull(scheduler.ActiveSessionId);
            Assert.IsNull(scheduler.ShutdownAsync().Result, "a second shutdown sends nothing");
            clock.Advance(TimeSpan.FromMinutes(1));
            Assert.IsNull(Tick());
            Assert.AreEqual(1, sent.Count);
        }

        [Test]
        public void ShutdownWaitsForATimerPersistInFlightAndGoesLast()
        {
            var gate = new TaskCompletionSource<PersistResult>();
            answer = p => p.Trigger == "timer" ? gate.Task : Task.FromResult(new PersistResult { Saved = true });
            scheduler.Activate("s1");
            clock.Advance(TimeSpan.FromSeconds(30));
            var timer = scheduler.TickAsync();
            var shutdown = scheduler.ShutdownAsync();
            Assert.IsFalse(shutdown.Wait(100), "shutdown must wait for the timer persist in flight");
            Assert.AreEqual(1, sent.Count);
            gate.SetResult(new PersistResult { Coalesced = true });
            Assert.IsTrue(shutdown.Wait(5000));
            Assert.IsTrue(timer.Wait(5000));
            CollectionAssert.AreEqual(new[] { "timer", "shutdown" }, sent.Select(p => p.Trigger).ToArray());
        }

        [Test]
        public void ShutdownFailurePropagatesToTheCaller()
        {
            answer = p => { var t = new TaskCompletionSource<PersistResult>(); t.SetException(new InvalidOperationException("gone")); return t.Task; };
            scheduler.Activate("s1");
            var e = Assert.Throws<AggregateException>(() => scheduler.ShutdownAsync().Wait());
            Assert.AreEqual("gone", e.InnerException.Message);
        }

        [Test]
        public void BadArgumentsAreRejected()
        {
            Assert.Throws<ArgumentOutOfRangeException>(() => new PersistScheduler(clock, p => null, () => null, new WorkspaceRef(), null, TimeSpan.Zero));
            Assert.Throws<ArgumentNullException>(() => new PersistScheduler(null, p => null, () => null, new WorkspaceRef(), null));
            Assert.Throws<ArgumentException>(() => scheduler.Activate(""));
        }

        [Test]
        public void TheDefaultIntervalIsSeed002sThirtySeconds()
        {
            Assert.AreEqual(TimeSpan.FromSeconds(30), PersistScheduler.DefaultInterval);
        }
    }

    [TestFixture]
    public class TranscriptTests
    {
        private static JToken Update(string kind, string text, bool replay)
        {
            return Json.Q("{'sessionId':'s','update':{'sessionUpdate':'" + kind + "','content':{'type':'text','text':'" + text + "'}},'replay':" + (replay ? "true" : "false") + "}");
        }

        [Test]
        public void ChunksOfTheSameRoleJoinAndARoleChangeStartsATurn()
        {
            var t = new SessionTranscript("/w", new FakeClock());
            Assert.IsTrue(t.OnUpdate(Update("user_message_chunk", "Hel", false)));
            t.OnUpdate(Update("user_message_chunk", "lo", false));
            t.OnUpdate(Update("agent_message_chunk", "Hi ", false));
            t.OnUpdate(Update("agent_message_chunk", "there", false));
            t.CompleteTurn();
            var s = t.ToSnapshot();
            CollectionAssert.AreEqual(new[] { "user", "assistant" }, s.ChatTurns.Select(c => c.Role).ToArray());
            CollectionAssert.AreEqual(new[] { "Hello", "Hi there" }, s.ChatTurns.Select(c => c.Text).ToArray());
            Assert.IsTrue(s.ChatTurns.All(c => c.Complete));
            Assert.AreEqual("2026-11-22T01:00:00.000Z", s.ChatTurns[0].TimestampUtc);
            Assert.AreEqual("/w", (string)s.Extra["context"]["workingDir"]);
        }

        [Test]
        public void APromptSentThroughThisClientIsAUserTurn()
        {
            var t = new SessionTranscript("/w", new FakeClock());
            t.AddUserTurn("fix the build");
            t.OnUpdate(Update("agent_message_chunk", "done", false));
            t.AddUserTurn("thanks");
            var s = t.ToSnapshot();
            CollectionAssert.AreEqual(new[] { "user: fix the build", "assistant: done", "user: thanks" }, s.ChatTurns.Select(c => c.Role + ": " + c.Text).ToArray());
            Assert.IsTrue(s.ChatTurns.All(c => c.Complete));
        }

        [Test]
        public void OtherUpdateKindsAndMalformedUpdatesAreIgnored()
        {
            var t = new SessionTranscript("/w", new FakeClock());
            Assert.IsFalse(t.OnUpdate(Json.Q("{'sessionId':'s','update':{'sessionUpdate':'tool_call','toolCallId':'1'},'replay':false}")));
            Assert.IsFalse(t.OnUpdate(Json.Q("{'sessionId':'s','update':{'sessionUpdate':'agent_message_chunk','content':{'type':'image'}},'replay':false}")));
            Assert.IsFalse(t.OnUpdate(Json.Q("[]")));
            Assert.IsFalse(t.OnUpdate(null));
            CollectionAssert.IsEmpty(t.ToSnapshot().ChatTurns);
        }

        [Test]
        public void ReplayIsIgnoredWhenTheRestoredSnapshotHasTurnsAndKeptWhenItHasNone()
        {
            var restored = ProtocolJson.Read<Restored>(Json.Q(@"{'sessionId':'s','stale':true,'snapshot':{'chatTurns':[{'id':'1','role':'user','text':'cached','timestampUtc':'2026-01-01T00:00:00Z','complete':true}],
                'approvals':{'pending':[{'kind':'exec','callId':'c','message':'m','canRemember':false,'queuedUtc':'2026-01-01T00:00:00Z'}]}}}"));
            var t = new SessionTranscript("/w", new FakeClock());
            t.OnRestored(restored);
            Assert.IsFalse(t.OnUpdate(Update("user_message_chunk", "cached", true)));
            t.OnUpdate(Update("agent_message_chunk", "live", false));
            var s = t.ToSnapshot();
            CollectionAssert.AreEqual(new[] { "cached", "live" }, s.ChatTurns.Select(c => c.Text).ToArray());
            Assert.AreEqual("c", (string)s.Extra["approvals"]["pending"][0]["callId"], "unmodelled sections persist back unchanged");

            var empty = new SessionTranscript("/w", new FakeClock());
            Assert.IsTrue(empty.OnUpdate(Update("user_message_chunk", "replayed", true)));
            Assert.AreEqual("replayed", empty.ToSnapshot().ChatTurns.Single().Text);
        }

        [Test]
        public void ResetStartsEmptyAndSnapshotsAreCopies()
        {
            var t = new SessionTranscript("/w", new FakeClock());
            t.OnUpdate(Update("user_message_chunk", "a", false));
            var copy = t.ToSnapshot();
            copy.ChatTurns[0].Text = "changed";
            Assert.AreEqual("a", t.ToSnapshot().ChatTurns[0].Text);
            t.Reset("/w");
            CollectionAssert.IsEmpty(t.ToSnapshot().ChatTurns);
        }
    }
}
