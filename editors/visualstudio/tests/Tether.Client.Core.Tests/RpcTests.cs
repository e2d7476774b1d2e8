using System;
using System.Collections.Generic;
using System.IO;
using System.Linq;
using System.Text;
using System.Threading;
using System.Threading.Tasks;
using Newtonsoft.Json.Linq;
using NUnit.Framework;
using Tether.Client.Core.Rpc;

namespace Tether.Client.Core.Tests
{
    [TestFixture]
    public class FramingTests
    {
        private static MemoryStream Bytes(string s)
        {
            return new MemoryStream(Encoding.UTF8.GetBytes(s));
        }

        [Test]
        public void ContentLengthCountsUtf8BytesNotCharacters()
        {
            var json = "{\"text\":\"Resuming\u2026 \u00e9\"}";
            var framed = LspFraming.Frame(json);
            var header = Encoding.ASCII.GetString(framed, 0, framed.Length - Encoding.UTF8.GetByteCount(json));
            Assert.AreEqual("Content-Length: " + Encoding.UTF8.GetByteCount(json) + "\r\n\r\n", header);
            Assert.AreNotEqual(json.Length, Encoding.UTF8.GetByteCount(json), "the test needs multi-byte characters");
            Assert.AreEqual(json, LspFraming.ReadMessage(new MemoryStream(framed)));
        }

        [Test]
        public void MessagesBackToBackThenACleanEnd()
        {
            var ms = new MemoryStream();
            foreach (var m in new[] { "{\"a\":1}", "{\"b\":2}" })
            {
                var f = LspFraming.Frame(m);
                ms.Write(f, 0, f.Length);
            }
            ms.Position = 0;
            Assert.AreEqual("{\"a\":1}", LspFraming.ReadMessage(ms));
            Assert.AreEqual("{\"b\":2}", LspFraming.ReadMessage(ms));
            Assert.IsNull(LspFraming.ReadMessage(ms));
        }

        [Test]
        public void OtherHeadersAndCaseAreAccepted()
        {
            Assert.AreEqual("{}", LspFraming.ReadMessage(Bytes("content-length: 2\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n{}")));
            Assert.AreEqual("{}", LspFraming.ReadMessage(Bytes("Content-Length: 2\n\n{}")), "bare LF line ends are tolerated");
        }

        [Test]
        public void BrokenFramingIsAClearError()
        {
            var cases = new Dictionary<string, string>
            {
                { "Content-Type: x\r\n\r\n{}", "without a Content-Length" },
                { "Content-Length: abc\r\n\r\n{}", "invalid Content-Length" },
                { "Content-Length: -1\r\n\r\n{}", "invalid Content-Length" },
                { "Content-Length: 999999999\r\n\r\n{}", "invalid Content-Length" },
                { "Content-Length: 10\r\n\r\n{}", "end of stream after 2 of 10" },
                { "Content-Length: 2\r\n", "end of stream inside a message header" },
                { "Content-Len", "end of stream inside a message header" },
                { "garbage\r\n\r\n", "without a name and colon" },
            };
            foreach (var c in cases)
            {
                var e = Assert.Throws<LspFramingException>(() => LspFraming.ReadMessage(Bytes(c.Key)), c.Key);
                StringAssert.Contains(c.Value, e.Message, c.Key);
            }
            var bad = new MemoryStream();
            var head = Encoding.ASCII.GetBytes("Content-Length: 2\r\n\r\n");
            bad.Write(head, 0, head.Length);
            bad.WriteByte(0xff);
            bad.WriteByte(0xfe);
            bad.Position = 0;
            StringAssert.Contains("UTF-8", Assert.Throws<LspFramingException>(() => LspFraming.ReadMessage(bad)).Message);
        }
    }

    /// <summary>Two <see cref="JsonRpcConnection"/>s wired back to back through in-memory pipes.</summary>
    public sealed class Pair : IDisposable
    {
        public readonly BlockingPipe ToServer = new BlockingPipe();
        public readonly BlockingPipe ToClient = new BlockingPipe();
        public readonly JsonRpcConnection Client;
        public readonly JsonRpcConnection Server;
        public readonly ListLog ClientLog = new ListLog();

        public Pair()
        {
            Client = new JsonRpcConnection(ToClient, ToServer, ClientLog);
            Server = new JsonRpcConnection(ToServer, ToClient, null);
        }

        public void Start()
        {
            Client.Start();
            Server.Start();
        }

        public void Dispose()
        {
            ToServer.CloseWriter();
            ToClient.CloseWriter();
        }
    }

    [TestFixture]
    public class JsonRpcConnectionTests
    {
        private static readonly TimeSpan Timeout = TimeSpan.FromSeconds(10);

        [Test]
        public void RequestsAreCorrelatedByIdEvenWhenAnsweredOutOfOrder()
        {
            using (var pair = new Pair())
            {
                var slow = new TaskCompletionSource<JToken>();
                pair.Server.OnRequest("slow", p => slow.Task);
                pair.Server.OnRequest("echo", p => Task.FromResult(p));
                pair.Start();
                var a = pair.Client.RequestAsync("slow", new JObject(), CancellationToken.None);
                var b = pair.Client.RequestAsync("echo", new JObject(new JProperty("n", 2)), CancellationToken.None);
                Assert.IsTrue(b.Wait(Timeout));
                Assert.AreEqual(2, (int)b.Result["n"]);
                Assert.IsFalse(a.IsCompleted);
                slow.SetResult(new JValue("done"));
                Assert.IsTrue(a.Wait(Timeout));
                Assert.AreEqual("done", (string)a.Result);
            }
        }

        [Test]
        public void ErrorResponsesBecomeRemoteExceptionsWithCodeAndData()
        {
            using (var pair = new Pair())
            {
                pair.Start();
                var e = Assert.Throws<AggregateException>(() => pair.Client.RequestAsync("nope", null, CancellationToken.None).Wait(Timeout));
                var remote = (JsonRpcRemoteException)e.InnerException;
                Assert.AreEqual(-32601, remote.Code);
                Assert.AreEqual("nope", remote.Method);
                StringAssert.Contains("Method not found", remote.RemoteMessage);
            }
        }

        [Test]
        public void AHandlerThatThrowsAnswersInternalError()
        {
            using (var pair = new Pair())
            {
                pair.Server.OnRequest("boom", p => { throw new InvalidOperationException("kaput"); });
                pair.Start();
                var e = Assert.Throws<AggregateException>(() => pair.Client.RequestAsync("boom", null, CancellationToken.None).Wait(Timeout));
                var remote = (JsonRpcRemoteException)e.InnerException;
                Assert.AreEqual(-32603, remote.Code);
                Assert.AreEqual("kaput", remote.RemoteMessage);
            }
        }

        [Test]
        public void AHandlerCanAnswerASpecificError()
        {
            using (var pair = new Pair())
            {
                pair.Server.OnRequest("gone", p => { throw new JsonRpcRemoteException("gone", -32002, "unknown session", new JObject(new JProperty("sessionId", "s"))); });
                pair.Start();
                var e = Assert.Throws<AggregateException>(() => pair.Client.RequestAsync("gone", null, CancellationToken.None).Wait(Timeout));
                var remote = (JsonRpcRemoteException)e.InnerException;
                Assert.AreEqual(-32002, remote.Code);
                Assert.AreEqual("unknown session", remote.RemoteMessage);
                Assert.AreEqual("s", (string)remote.ErrorData["sessionId"]);
            }
        }

        [Test]
        public void NotificationsArriveInOrderAndUnhandledOnesGoToTheFallback()
        {
            using (var pair = new Pair())
            {
                var seen = new List<int>();
                var other = new List<string>();
                var done = new ManualResetEventSlim();
                pair.Client.OnNotification("n", p => { lock (seen) { seen.Add((int)p["i"]); if (seen.Count == 50) done.Set(); } });
                pair.Client.UnhandledNotification = (m, p) => { lock (other) other.Add(m); };
                pair.Start();
                pair.Server.NotifyAsync("x/unknown", null).Wait();
                for (int i = 0; i < 50; i++) pair.Server.NotifyAsync("n", new JObject(new JProperty("i", i))).Wait();
                Assert.IsTrue(done.Wait(Timeout));
                CollectionAssert.AreEqual(Enumerable.Range(0, 50).ToArray(), seen.ToArray());
                CollectionAssert.AreEqual(new[] { "x/unknown" }, other.ToArray());
            }
        }

        [Test]
        public void AServerRequestWaitingForTheUserDoesNotBlockNotifications()
        {
            using (var pair = new Pair())
            {
                var user = new TaskCompletionSource<JToken>();
                var note = new ManualResetEventSlim();
                pair.Client.OnRequest("ask", p => user.Task);
                pair.Client.OnNotification("n", p => note.Set());
                pair.Start();
                var asked = pair.Server.RequestAsync("ask", new JObject(), CancellationToken.None);
                pair.Server.NotifyAsync("n", null).Wait();
                Assert.IsTrue(note.Wait(Timeout), "the notification must be delivered while the question is open");
                user.SetResult(new JObject(new JProperty("answer", 42)));
                Assert.IsTrue(asked.Wait(Timeout));
                Assert.AreEqual(42, (int)asked.Result["answer"]);
            }
        }

        [Test]
        public void CancellationSendsCancelRequestAndCancelsTheTask()
        {
            using (var pair = new Pair())
            {
                var cancelled = new TaskCompletionSource<JToken>();
                pair.Server.OnRequest("slow", p => new TaskCompletionSource<JToken>().Task);
                pair.Server.OnNotification("$/cancelRequest", p => cancelled.TrySetResult(p));
                pair.Start();
                var cts = new CancellationTokenSource();
                var t = pair.Client.RequestAsync("slow", null, cts.Token);
                cts.Cancel();
                Assert.IsTrue(cancelled.Task.Wait(Timeout));
                Assert.AreEqual(1, (int)cancelled.Task.Result["id"]);
                var e = Assert.Throws<AggregateException>(() => t.Wait(Timeout));
                Assert.IsInstanceOf<TaskCanceledException>(e.InnerException);
            }
        }

        [Test]
        public void EndOfStreamFailsPendingRequestsAndLaterOnes()
        {
            using (var pair = new Pair())
            {
                pair.Server.OnRequest("slow", p => new TaskCompletionSource<JToken>().Task);
                pair.Start();
                var t = pair.Client.RequestAsync("slow", null, CancellationToken.None);
                pair.ToClient.CloseWriter();
                var e = Assert.Throws<AggregateException>(() => t.Wait(Timeout));
                Assert.IsInstanceOf<JsonRpcConnectionClosedException>(e.InnerException);
                StringAssert.Contains("slow", e.InnerException.Message);
                Assert.IsTrue(pair.Client.Completion.Wait(Timeout));
                Assert.IsNull(pair.Client.Completion.Result, "a clean end of stream");
                var later = pair.Client.RequestAsync("later", null, CancellationToken.None);
                var e2 = Assert.Throws<AggregateException>(() => later.Wait(Timeout), "reported through the task, not thrown");
                Assert.IsInstanceOf<JsonRpcConnectionClosedException>(e2.InnerException);
            }
        }

        [Test]
        public void GarbageBetweenMessagesIsDroppedButCorruptFramingStopsTheReader()
        {
            var toClient = new BlockingPipe();
            var log = new ListLog();
            var c = new JsonRpcConnection(toClient, new MemoryStream(), log);
            var got = new ManualResetEventSlim();
            c.OnNotification("ok", p => got.Set());
            c.Start();
            foreach (var body in new[] { "not json", "[1]", "{\"jsonrpc\":\"2.0\",\"id\":99,\"result\":1}", "{\"jsonrpc\":\"2.0\",\"method\":\"ok\"}" })
            {
                var f = LspFraming.Frame(body);
                toClient.Write(f, 0, f.Length);
            }
            Assert.IsTrue(got.Wait(Timeout), "a good message after bad ones is still delivered:\n" + log);
            var bad = Encoding.ASCII.GetBytes("Content-Length: nope\r\n\r\n");
            toClient.Write(bad, 0, bad.Length);
            Assert.IsTrue(c.Completion.Wait(Timeout));
            Assert.IsInstanceOf<LspFramingException>(c.Completion.Result);
            var text = log.ToString();
            StringAssert.Contains("not JSON", text);
            StringAssert.Contains("not a JSON object", text);
            StringAssert.Contains("unknown or cancelled request 99", text);
        }
    }
}
