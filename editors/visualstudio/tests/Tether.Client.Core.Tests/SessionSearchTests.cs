using System;
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
    /// "Show Sessions" paged with <c>session/list</c>'s <c>limit</c>/<c>cursor</c>/<c>nextCursor</c>
    /// and searched with <c>session/search</c> (R-INDEX-8), in <see cref="SessionListView"/>; over a scripted peer.
    /// </summary>
    [TestFixture]
    public class SessionSearchTests : ScriptedPeer
    {
        private static string Entry(string id, string title)
        {
            return "{'sessionId':'" + id + "','agent':'claude','title':'" + title + "','updatedUtc':'2026-11-22T00:00:00Z','turnCount':2,'live':false,'turnRunning':false,'clients':0}";
        }

        // docs/protocol.md's session/search example.
        private const string Found = "{'sessions':[{'sessionId':'011056c5','agent':'claude','source':'claude','title':'why is the build flaky?','workspace':'/work/ws','updatedUtc':'2026-11-20T09:12:44.120Z',"
            + "'snippet':'\u2026the \u00abflaky\u00bb \u00abbuild\u00bb reads a stale \u00abcache\u00bb key when\u2026','path':'/home/ada/.claude/projects/-work-ws/011056c5.jsonl'},"
            + "{'sessionId':'77b0','agent':'scripted','source':'tether','title':'fix CI','workspace':'/work/ws','updatedUtc':'2026-11-22T00:58:00Z','snippet':'\u2026so the \u00abbuild\u00bb \u00abcache\u00bb was \u00abflaky\u00bb on\u2026'}],'indexed':5120}";

        [Test]
        public void TheListIsPagedWithTheServersCursorUntilTheLastPage()
        {
            Serve("session/list",
                Answer("{'sessions':[" + Entry("a", "first") + "," + Entry("b", "second") + "],'nextCursor':'c-1'}"),
                Answer("{'sessions':[" + Entry("b", "second") + "," + Entry("c", "third") + "]}"));
            pair.Start();
            controller.SessionPageSize = 2;
            var rows = controller.ListSessionsAsync(CancellationToken.None).Result;
            Assert.AreEqual(new[] { "a", "b" }, rows.Select(r => r.SessionId).ToArray());
            AssertJson("{'workspace':{'root':'/work/ws'},'all':true,'limit':2}", Sent("session/list")[0]);
            var view = controller.Sessions;
            Assert.IsTrue(view.CanLoadMore);
            Assert.AreEqual("Sessions of this workspace:\nfirst \u2014 claude \u00b7 Tether's cache \u2014 updated 1 h ago \u00b7 2 turns \u00b7 a\nsecond \u2014 claude \u00b7 Tether's cache \u2014 updated 1 h ago \u00b7 2 turns \u00b7 b\n[Load more sessions]\n", view.Render());

            rows = controller.LoadMoreSessionsAsync(CancellationToken.None).Result;
            AssertJson("{'workspace':{'root':'/work/ws'},'all':true,'limit':2,'cursor':'c-1'}", Sent("session/list")[1]);
            Assert.AreEqual(new[] { "a", "b", "c" }, rows.Select(r => r.SessionId).ToArray(), "a session on two pages (updated in the same millisecond) is shown once");
            Assert.IsFalse(view.CanLoadMore, "the last page has no nextCursor");
            StringAssert.DoesNotContain("[Load more sessions]", view.Render());

            controller.LoadMoreSessionsAsync(CancellationToken.None).Wait(Timeout);
            Assert.AreEqual(2, Sent("session/list").Count, "no page is asked for after the last");
        }

        [Test]
        public void ASearchSendsTheWordsAndShowsTheSessionsFoundWithTheirSnippetsAcrossAgents()
        {
            Serve("session/search", Answer(Found));
            Serve("session/list", Answer("{'sessions':[" + Entry("a", "first") + "]}"));
            pair.Start();
            var rows = controller.SearchSessionsAsync("  flaky build cache ", CancellationToken.None).Result;
            AssertJson("{'query':'flaky build cache','workspace':{'root':'/work/ws'},'limit':50}", Sent("session/search").Single());
            Assert.AreEqual(new[] { "011056c5", "77b0" }, rows.Select(r => r.SessionId).ToArray(), "the server's order");
            Assert.AreEqual("why is the build flaky?", rows[0].Label);
            Assert.AreEqual("claude \u00b7 Claude Code's own store \u00b7 updated 1 day ago", rows[0].Description);
            Assert.AreEqual("claude", rows[0].Source);
            Assert.AreEqual("\u2026the flaky build reads a stale cache key when\u2026", rows[0].Detail);
            Assert.AreEqual("\u2026the \u00abflaky\u00bb \u00abbuild\u00bb reads a stale \u00abcache\u00bb key when\u2026", rows[0].Snippet, "the marks kept for highlighting");
            Assert.AreEqual("scripted \u00b7 Tether's cache \u00b7 updated 2 min ago", rows[1].Description);
            Assert.IsNull(rows[1].Source, "source tether is the cache");
            var view = controller.Sessions;
            Assert.AreEqual("flaky build cache", view.Query);
            Assert.IsFalse(view.CanLoadMore, "a search is not paged");
            StringAssert.StartsWith("Search: flaky build cache\nwhy is the build flaky? \u2014 ", view.Render());
            StringAssert.EndsWith("\n2 sessions match \u201cflaky build cache\u201d (5120 sessions searched).\n", view.Render());

            // Clearing the words goes back to the list.
            rows = controller.SearchSessionsAsync("", CancellationToken.None).Result;
            Assert.AreEqual(1, Sent("session/list").Count);
            Assert.AreEqual(new[] { "a" }, rows.Select(r => r.SessionId).ToArray());
            Assert.IsNull(view.Query);
        }

        [Test]
        public void AnAnswerToASearchTypedOverIsDropped()
        {
            var slow = new TaskCompletionSource<JToken>();
            // Answered by query, not by arrival: the two requests may reach the peer in either
            // order (the newer one first has been seen: it then got the held answer, and the
            // test waited on it for ever).
            Func<JToken, Task<JToken>> byQuery = p => (string)p["query"] == "fl" ? slow.Task : Answer(Found)(p);
            Serve("session/search", byQuery, byQuery);
            pair.Start();
            var first = controller.SearchSessionsAsync("fl", CancellationToken.None);
            var newer = controller.SearchSessionsAsync("flaky build cache", CancellationToken.None);
            Assert.IsTrue(newer.Wait(Timeout), "the newer search is answered while the older one is held");
            var second = newer.Result;
            Assert.AreEqual(2, second.Count);
            slow.SetResult(Json.Q("{'sessions':[{'sessionId':'zz','agent':'claude','source':'claude','updatedUtc':'2026-11-22T00:00:00Z','snippet':'\u00abfl\u00bb'}],'indexed':1}"));
            Assert.IsTrue(first.Wait(Timeout));
            Assert.AreEqual(new[] { "011056c5", "77b0" }, controller.Sessions.Rows.Select(r => r.SessionId).ToArray(), "the newer search's rows stay");
            Assert.AreEqual("flaky build cache", controller.Sessions.Query);
        }

        [Test]
        public void ASearchThatFindsNothingOrCannotRunSaysSoAndKeepsTheRows()
        {
            Serve("session/list", Answer("{'sessions':[" + Entry("a", "first") + "]}"));
            Serve("session/search",
                Answer("{'sessions':[],'indexed':3}"),
                Error("session/search", -32601, "method not found"),
                Error("session/search", -32803, "cannot open the session index", "{'kind':'index','path':'/d/index/sessions.sqlite3'}"));
            pair.Start();
            controller.ListSessionsAsync(CancellationToken.None).Wait(Timeout);
            Assert.AreEqual(0, controller.SearchSessionsAsync("xylophone", CancellationToken.None).Result.Count);
            Assert.AreEqual("No session matches \u201cxylophone\u201d (3 sessions searched).", controller.Sessions.Message);
            controller.SearchSessionsAsync("again", CancellationToken.None).Wait(Timeout);
            Assert.AreEqual("Search is not available: this Tether server does not support session/search.", controller.Sessions.Message);
            controller.SearchSessionsAsync("third", CancellationToken.None).Wait(Timeout);
            Assert.AreEqual("Search failed: cannot open the session index", controller.Sessions.Message);
            Assert.IsFalse(controller.Sessions.Loading);
        }

        [Test]
        public void TheSearchAndPagingRequestsHaveTheDocsShapes()
        {
            var ws = new WorkspaceRef { Root = "/home/ada/proj" };
            AssertJson("{'query':'flaky build cache','limit':2}", ProtocolJson.Write(new SearchParams { Query = "flaky build cache", Limit = 2 }));
            AssertJson("{'workspace':{'root':'/home/ada/proj'},'limit':1,'cursor':'313736333737'}", ProtocolJson.Write(new ListParams { Workspace = ws, Limit = 1, Cursor = "313736333737" }));
            AssertJson("{'workspace':{'root':'/home/ada/proj'},'sessionId':'77b0'}", ProtocolJson.Write(new ContinueHereParams { Workspace = ws, SessionId = "77b0" }));
            var taken = ProtocolJson.Read<ContinueHereResult>(Json.Q("{'epoch':3,'takenFrom':'ada-laptop'}"));
            Assert.AreEqual(3, taken.Epoch);
            Assert.AreEqual("ada-laptop", taken.TakenFrom);
            Assert.AreEqual("313736333737", ProtocolJson.Read<ListResult>(Json.Q("{'sessions':[],'nextCursor':'313736333737'}")).NextCursor);
        }
    }
}
