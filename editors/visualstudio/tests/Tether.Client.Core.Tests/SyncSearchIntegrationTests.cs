using System;
using System.Collections.Generic;
using System.IO;
using System.Linq;
using System.Security.Cryptography;
using System.Text;
using System.Text.RegularExpressions;
using System.Threading;
using Newtonsoft.Json.Linq;
using NUnit.Framework;
using Tether.Client.Core.Protocol;
using Tether.Client.Core.Rpc;
using Tether.Client.Core.Ui;

namespace Tether.Client.Core.Tests
{
    /// <summary>
    /// Show Sessions' paging and search, and sessions on every machine, against the real
    /// <c>tether serve --stdio</c>: the list paged by the server's cursor, <c>session/search</c>
    /// finding a cached session and Claude Code's sessions (R-INDEX-8), and two "machines" (two
    /// servers with their own caches and machine names on one folder, one folder as the sync remote, the key
    /// in <c>TETHER_SYNC_KEY</c> as crates/tether/tests/sync.rs does) where B lists A's session
    /// "from machine-a", is refused while A holds it, and takes it over with "Continue Here".
    /// </summary>
    [TestFixture]
    [Category("Integration")]
    public class SyncSearchIntegrationTests : ToolWindowFixture
    {
        [Test]
        public void ShowSessionsPagesTheListAndSearchFindsSessionsOfEveryAgentWithTheirSnippets()
        {
            // Two Claude Code sessions of the workspace (the repository's fixture under two ids) in a private store.
            const string fixtureId = "011056c5-379b-4671-ae05-7da2d0635fdb";
            var fixture = Path.Combine(Binaries.RepoRoot(), "crates", "tether-history", "tests", "fixtures", "claude", "projects", "-home-user-work", fixtureId + ".jsonl");
            var claude = Path.Combine(Temp, "claude");
            var project = Path.Combine(claude, "projects", Regex.Replace(ServerWorkspace, "[^A-Za-z0-9]", "-"));
            Directory.CreateDirectory(project);
            var claudeIds = new[] { Guid.NewGuid().ToString(), Guid.NewGuid().ToString() };
            foreach (var id in claudeIds)
            {
                File.WriteAllText(Path.Combine(project, id + ".jsonl"),
                    File.ReadAllText(fixture).Replace(fixtureId, id).Replace("/home/user/work", ServerWorkspace.Replace("\\", "\\\\")));
            }
            var env = new Dictionary<string, string>
            {
                { "HOME", ServerHost.ServerPath(Path.Combine(Temp, "home")) },
                { "CLAUDE_CONFIG_DIR", ServerHost.ServerPath(claude) },
            };
            var agent = Scripted(Script("healthy", null));
            agent.Env = new Dictionary<string, string>(env);
            ServerProcess server;
            var c = Start(Options(agent), new RecordingUi(), out server, env: env);
            var mine = server.Await(c.ResumeAsync(null, CancellationToken.None), "session/resume");
            server.Await(c.SendAsync("where did the xylophone fixture go", CancellationToken.None), "session/prompt");

            // Paged two at a time: the cached session and the two of Claude Code's store, each once.
            c.SessionPageSize = 2;
            var first = server.Await(c.ListSessionsAsync(CancellationToken.None), "session/list limit 2");
            Console.WriteLine("[sessions, first page]\n" + c.Sessions.Render());
            Assert.AreEqual(2, first.Count, c.Sessions.Render() + server.Diagnostics());
            Assert.IsTrue(c.Sessions.CanLoadMore, "the server gave a nextCursor");
            var all = server.Await(c.LoadMoreSessionsAsync(CancellationToken.None), "session/list with the cursor");
            Console.WriteLine("[sessions, after Load more]\n" + c.Sessions.Render());
            CollectionAssert.AreEquivalent(new[] { mine.SessionId, claudeIds[0], claudeIds[1] }, all.Select(r => r.SessionId).ToArray(), c.Sessions.Render());
            Assert.IsFalse(c.Sessions.CanLoadMore, "the last page has no nextCursor");

            // One search finds the cached session and Claude Code's, with the matched word marked.
            var hits = server.Await(c.SearchSessionsAsync("fixture", CancellationToken.None), "session/search");
            Console.WriteLine("[search]\n" + c.Sessions.Render());
            var cached = hits.SingleOrDefault(r => r.SessionId == mine.SessionId);
            Assert.IsNotNull(cached, "the cached session is found:\n" + c.Sessions.Render() + server.Diagnostics());
            Assert.IsNull(cached.Source);
            StringAssert.StartsWith("scripted \u00b7 Tether's cache \u00b7 updated ", cached.Description);
            StringAssert.Contains("\u00abfixture\u00bb", cached.Snippet);
            StringAssert.Contains("fixture", cached.Detail);
            StringAssert.DoesNotContain("\u00ab", cached.Detail);
            foreach (var id in claudeIds)
            {
                var row = hits.SingleOrDefault(r => r.SessionId == id);
                Assert.IsNotNull(row, "Claude Code's session " + id + " is found:\n" + c.Sessions.Render());
                Assert.AreEqual("claude", row.Source);
                StringAssert.Contains("Claude Code's own store", row.Description);
                StringAssert.Contains("\u00abfixture\u00bb", row.Snippet);
            }
            StringAssert.Contains(hits.Count + " sessions match \u201cfixture\u201d", c.Sessions.Message);

            // Words in one session only.
            hits = server.Await(c.SearchSessionsAsync("xylophone", CancellationToken.None), "session/search xylophone");
            Assert.AreEqual(new[] { mine.SessionId }, hits.Select(r => r.SessionId).ToArray(), c.Sessions.Render());
            server.Shutdown();
        }

        [Test]
        public void ASessionOfAnotherMachineIsListedFromItAndContinueHereTakesItOver()
        {
            var remoteDir = Path.Combine(Temp, "remote");
            Directory.CreateDirectory(remoteDir);
            // file:///tmp/…/remote/ natively, file:///Z:/tmp/…/remote/ for tether.exe under Wine.
            var remote = new Uri(ServerHost.ServerPath(remoteDir) + (ServerHost.UnderWine ? "\\" : "/")).AbsoluteUri;
            var key = SyncKey();
            // Both agents keep their sessions in one folder (as Claude Code's file is carried), so B's loads A's session.
            var script = Script("synced", null);
            Func<string, Dictionary<string, string>> machine = name => new Dictionary<string, string>
            {
                { "TETHER_SYNC_KEY", key }, { "TETHER_MACHINE_NAME", name }, { "TETHER_SYNC_REMOTE", "" },
            };
            Func<JObject> options = () => Options(Scripted(script)).Also(o => o["sync"] = new JObject(new JProperty("remote", remote)));

            // Machine A: a session with a turn, pushed to the remote in the background. Both
            // machines open the same folder path (not a git checkout: its project is its path,
            // R-PROJECT-1), each with its own cache and machine name.
            Storage = Path.Combine(Temp, "a", "cache");
            ServerProcess a;
            var ca = Start(options(), new RecordingUi(), out a, env: machine("machine-a"));
            var sid = a.Await(ca.ResumeAsync(null, CancellationToken.None), "resume on A").SessionId;
            a.Await(ca.SendAsync("on a", CancellationToken.None), "prompt on A");

            // Machine B lists it (each list pulls first) from machine-a.
            Storage = Path.Combine(Temp, "b", "cache");
            var uiB = new RecordingUi();
            ServerProcess b;
            var cb = Start(options(), uiB, out b, env: machine("machine-b"));
            SessionRow row = null;
            using (var pushed = new RemoteWatch(remoteDir))
            {
                var deadline = DateTime.UtcNow + ServerProcess.Timeout;
                while ((row = b.Await(cb.ListSessionsAsync(CancellationToken.None), "list on B").SingleOrDefault(r => r.SessionId == sid)) == null)
                {
                    // The event waited for is A's push reaching the remote folder.
                    if (DateTime.UtcNow > deadline) Assert.Fail("A's session never reached B:\n" + cb.Sessions.Render() + a.Diagnostics() + b.Diagnostics());
                    pushed.WaitForChange(deadline - DateTime.UtcNow);
                }
            }
            Console.WriteLine("[sessions on B]\n" + cb.Sessions.Render());
            Assert.AreEqual("machine-a", row.FromMachine);
            StringAssert.EndsWith(" \u00b7 from machine-a, just now", row.Description);

            // Opened on B while A holds it: the banner's offer; a prompt is refused and offers it too.
            b.Await(cb.OpenSessionAsync(sid, CancellationToken.None), "open A's session on B");
            WaitFor(cb, v => v.HeldElsewhere != null, "the heldElsewhere banner's offer", b);
            var refused = Assert.Throws<AggregateException>(() => cb.SendAsync("on b, too early", CancellationToken.None).Wait(ServerProcess.Timeout));
            var remoteError = (JsonRpcRemoteException)refused.InnerException;
            Assert.AreEqual("heldElsewhere", (string)remoteError.ErrorData["kind"], b.Diagnostics());
            Assert.AreEqual("machine-a", cb.Conversation.HeldElsewhere.Machine);
            var window = Window(cb, "refused on B");
            StringAssert.IsMatch(@"\n\? machine-a is continuing this session.*\[Continue Here\]\n", window);
            var bar = uiB.Of<ShowInfoBar>().Last(i => i.Id == "held:" + sid);

            // "Continue Here" (the info bar's action): taken over; the server's bannerCleared removes the offer.
            Assert.IsTrue(cb.OnInfoBarActionAsync(bar.Actions.Single().Id, CancellationToken.None).Wait(ServerProcess.Timeout), "session/continueHere answered");
            Assert.AreEqual("Continued here; taken over from machine-a.", uiB.Of<ShowInfo>().Last().Text, b.Diagnostics());
            WaitFor(cb, v => v.HeldElsewhere == null, "the offer to go with the server's bannerCleared", b);
            Assert.IsTrue(uiB.Of<ClearInfoBar>().Any(i => i.Id == "held:" + sid));
            var answer = b.Await(cb.SendAsync("on b, now", CancellationToken.None), "prompt on B after Continue Here");
            Assert.AreEqual("end_turn", (string)answer["stopReason"], b.Diagnostics());

            // Now A is the one refused, naming B.
            var refusedA = Assert.Throws<AggregateException>(() => ca.SendAsync("on a, after b took it", CancellationToken.None).Wait(ServerProcess.Timeout));
            Assert.AreEqual("machine-b", (string)((JsonRpcRemoteException)refusedA.InnerException).ErrorData["machine"]);
            Assert.AreEqual("machine-b", ca.Conversation.HeldElsewhere.Machine);
            b.Shutdown();
            a.Shutdown();
        }

        /// <summary>A sync key's text form as <c>tether sync init</c> prints it: <c>tsk1_</c>, then base64url of 32 random bytes and a 4-byte check (crates/tether-sync/src/key.rs).</summary>
        private static string SyncKey()
        {
            var bytes = new byte[32];
            using (var rng = RandomNumberGenerator.Create()) rng.GetBytes(bytes);
            byte[] digest;
            using (var sha = SHA256.Create()) digest = sha.ComputeHash(Encoding.ASCII.GetBytes("tether-sync key check\0").Concat(bytes).ToArray());
            return "tsk1_" + Convert.ToBase64String(bytes.Concat(digest.Take(4)).ToArray()).TrimEnd('=').Replace('+', '-').Replace('/', '_');
        }

        /// <summary>Changes under the remote folder (a machine's push), waited for as events.</summary>
        private sealed class RemoteWatch : IDisposable
        {
            private readonly FileSystemWatcher watcher;
            private readonly AutoResetEvent changed = new AutoResetEvent(false);

            public RemoteWatch(string dir)
            {
                watcher = new FileSystemWatcher(dir) { IncludeSubdirectories = true };
                FileSystemEventHandler h = (o, e) => changed.Set();
                watcher.Created += h;
                watcher.Changed += h;
                watcher.Renamed += (o, e) => changed.Set();
                watcher.EnableRaisingEvents = true;
            }

            public void WaitForChange(TimeSpan atMost)
            {
                if (atMost > TimeSpan.Zero) changed.WaitOne(atMost);
            }

            public void Dispose()
            {
                watcher.Dispose();
                changed.Dispose();
            }
        }
    }

    internal static class JObjectExtensions
    {
        /// <summary>Applies <paramref name="edit"/> to <paramref name="o"/> and returns it.</summary>
        public static JObject Also(this JObject o, Action<JObject> edit)
        {
            edit(o);
            return o;
        }
    }
}
