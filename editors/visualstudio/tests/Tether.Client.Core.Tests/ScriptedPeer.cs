using System;
using System.Collections.Generic;
using System.Linq;
using System.Threading;
using System.Threading.Tasks;
using Newtonsoft.Json.Linq;
using NUnit.Framework;
using Tether.Client.Core.Rpc;
using Tether.Client.Core.Ui;

namespace Tether.Client.Core.Tests
{
    /// <summary>
    /// A controller for workspace <c>/work/ws</c> over a real JSON-RPC connection to a peer the
    /// test scripts: each method answers with the next of its answers and records its params.
    /// </summary>
    public abstract class ScriptedPeer
    {
        protected static readonly TimeSpan Timeout = TimeSpan.FromSeconds(10);
        protected const string Started = "{'outcome':'started','sessionId':'s1','breaker':{'status':'closed','attempts':0,'maxAttempts':3,'userRetries':0},'stale':false}";
        protected Pair pair;
        protected RecordingUi ui;
        protected ListLog log;
        protected FakeClock clock;
        protected TetherSessionController controller;
        private List<JObject> received;

        [SetUp]
        public void SetUpPeer()
        {
            pair = new Pair();
            ui = new RecordingUi();
            log = new ListLog();
            clock = new FakeClock();
            received = new List<JObject>();
            controller = new TetherSessionController(pair.Client, ui, "/work/ws", clock, log);
            controller.AttachTo(pair.Client);
        }

        [TearDown]
        public void TearDownPeer()
        {
            pair.Dispose();
        }

        /// <summary>A scripted server method: records its params, answers with the next of <paramref name="answers"/>.</summary>
        protected void Serve(string method, params Func<JToken, Task<JToken>>[] answers)
        {
            var queue = new Queue<Func<JToken, Task<JToken>>>(answers);
            pair.Server.OnRequest(method, p =>
            {
                lock (received) received.Add(new JObject(new JProperty("method", method), new JProperty("params", p)));
                Func<JToken, Task<JToken>> next;
                lock (queue) next = queue.Count > 0 ? queue.Dequeue() : null;
                if (next == null) throw new InvalidOperationException("unexpected " + method);
                return next(p);
            });
        }

        protected static Func<JToken, Task<JToken>> Answer(string json)
        {
            return p => Task.FromResult(Json.Q(json));
        }

        /// <summary>An error answer (code, message, data).</summary>
        protected static Func<JToken, Task<JToken>> Error(string method, long code, string message, string data = null)
        {
            return p => { throw new JsonRpcRemoteException(method, code, message, data != null ? Json.Q(data) : null); };
        }

        /// <summary>Every request the peer received (<c>{method, params}</c>), in order.</summary>
        protected List<JObject> Received()
        {
            lock (received) return received.ToList();
        }

        /// <summary>The params of the requests of <paramref name="method"/> the peer received, in order.</summary>
        protected List<JToken> Sent(string method)
        {
            lock (received) return received.Where(r => (string)r["method"] == method).Select(r => r["params"]).ToList();
        }

        protected static void AssertJson(string expected, JToken actual)
        {
            Assert.IsTrue(JToken.DeepEquals(Json.Q(expected), actual), "expected " + Json.Q(expected).ToString(Newtonsoft.Json.Formatting.None) + ", got " + (actual == null ? "null" : actual.ToString(Newtonsoft.Json.Formatting.None)));
        }

        /// <summary>Waits until <paramref name="condition"/> holds, re-checking at each change of the window's view model (never a sleep).</summary>
        protected void WaitForView(Func<ConversationView, bool> condition, string what)
        {
            var view = controller.Conversation;
            using (var changed = new AutoResetEvent(false))
            {
                EventHandler h = (o, e) => changed.Set();
                view.Changed += h;
                try
                {
                    var deadline = DateTime.UtcNow + Timeout;
                    while (!condition(view))
                    {
                        var left = deadline - DateTime.UtcNow;
                        if (left <= TimeSpan.Zero || !changed.WaitOne(left) && !condition(view))
                            Assert.Fail("timed out waiting for " + what + "; the window shows:\n" + ConversationText.Render(view));
                    }
                }
                finally
                {
                    view.Changed -= h;
                }
            }
        }
    }
}
