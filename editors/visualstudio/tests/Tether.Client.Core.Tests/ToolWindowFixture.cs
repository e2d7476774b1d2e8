using System;
using System.Collections.Generic;
using System.Diagnostics;
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
    /// <summary>An <see cref="ISessionMemory"/> kept in the test (Visual Studio keeps it in the solution's user settings).</summary>
    public sealed class MemoryStore : ISessionMemory
    {
        public volatile string Value;

        public string Get()
        {
            return Value;
        }

        public void Set(string sessionId)
        {
            Value = sessionId;
        }
    }

    /// <summary>
    /// What the tool window tests share: a temp workspace and cache, real <c>tether serve</c>
    /// processes (in-process or through a private daemon), agents (the scripted agent with a
    /// script, or <c>Tether.TestAgent.exe</c> under mono), controllers wired to them, and waiting
    /// on the view model's own changes (never a sleep). The fields hold local paths; what goes to
    /// the server goes as it sees it (<see cref="ServerHost.ServerPath"/>: itself natively, Wine's
    /// drive Z: under Wine).
    /// </summary>
    public abstract class ToolWindowFixture
    {
        protected string Temp;
        protected string Workspace;
        protected string Storage;
        protected string RuntimeDir;
        protected readonly List<ServerProcess> Servers = new List<ServerProcess>();
        protected string TetherBin;
        protected string ScriptedBin;

        [SetUp]
        public void SetUpFixture()
        {
            ServerHost.IgnoreIfListedAsGap();
            // Short: the daemon's socket path must fit in sockaddr_un (108 bytes).
            Temp = Path.Combine(Path.GetTempPath(), "tvs-" + Guid.NewGuid().ToString("N").Substring(0, 10));
            Workspace = Path.Combine(Temp, "workspace");
            Storage = Path.Combine(Temp, "store");
            RuntimeDir = Path.Combine(Temp, "run");
            Directory.CreateDirectory(Workspace);
            TetherBin = Binaries.Tether();
            ScriptedBin = Binaries.ScriptedAgent();
        }

        /// <summary>The workspace as the server sees it (and as the controller gives it to the server).</summary>
        protected string ServerWorkspace
        {
            get { return ServerHost.ServerPath(Workspace); }
        }

        [TearDown]
        public void TearDownFixture()
        {
            foreach (var s in Servers) s.Dispose();
            Servers.Clear();
            if (Directory.Exists(RuntimeDir)) StopDaemon();
            try
            {
                Directory.Delete(Temp, true);
            }
            catch (IOException)
            {
            }
            catch (UnauthorizedAccessException)
            {
            }
        }

        /// <summary><c>tether daemon stop</c> for the test's private daemon; waits for it to exit.</summary>
        protected void StopDaemon()
        {
            var psi = new ProcessStartInfo(TetherBin, "daemon stop") { UseShellExecute = false, RedirectStandardOutput = true, RedirectStandardError = true };
            psi.EnvironmentVariables["TETHER_RUNTIME_DIR"] = ServerHost.ServerPath(RuntimeDir);
            using (var p = Process.Start(psi))
            {
                p.StandardOutput.ReadToEnd();
                p.StandardError.ReadToEnd();
                p.WaitForExit(30000);
            }
        }

        /// <summary>A scripted agent's script file (crates/tether-host/src/scripted/): loadSession and resume, its state in the test's folder, the given faults and fields (paths among them as the server sees them). Returns its path as the server sees it.</summary>
        protected string Script(string name, JArray faults, JObject fields = null)
        {
            var script = new JObject(
                new JProperty("loadSession", true),
                new JProperty("resume", true),
                new JProperty("stateDir", ServerHost.ServerPath(Path.Combine(Temp, "agent-state"))),
                new JProperty("faults", faults ?? new JArray()));
            if (fields != null) foreach (var p in fields.Properties()) script[p.Name] = p.Value;
            var path = Path.Combine(Temp, "script-" + name + ".json");
            File.WriteAllText(path, script.ToString());
            return ServerHost.ServerPath(path);
        }

        /// <summary>A scripted fault: <paramref name="method"/> on the given calls (none: every call) does <paramref name="action"/>.</summary>
        protected static JObject Fault(string method, JObject action, params int[] calls)
        {
            return new JObject(new JProperty("method", method), new JProperty("calls", new JArray(calls)), new JProperty("action", action));
        }

        /// <summary>The scripted agent running <paramref name="script"/> (a path as the server sees it, from <see cref="Script"/>).</summary>
        protected AgentConfig Scripted(string script)
        {
            return new AgentConfig { Command = ServerHost.ServerPath(ScriptedBin), Args = new List<string> { script }, Env = new Dictionary<string, string>(), Protocol = AgentProtocols.Acp };
        }

        /// <summary>Tether.TestAgent.exe (beside the test assembly) under mono: thoughts, plans, tool calls, diffs.</summary>
        protected AgentConfig RichAgent()
        {
            var exe = Path.Combine(Path.GetDirectoryName(typeof(ToolWindowFixture).Assembly.Location), "Tether.TestAgent.exe");
            if (!File.Exists(exe)) Assert.Fail("missing " + exe + ": build-and-test.sh compiles it from tests/Tether.TestAgent");
            return new AgentConfig { Command = "mono", Args = new List<string> { exe, Workspace }, Env = new Dictionary<string, string>(), Protocol = AgentProtocols.Acp };
        }

        /// <summary>initializationOptions: the cache in the test's folder, the agents, short resume delays (10/20/40 ms).</summary>
        protected JObject Options(Dictionary<string, AgentConfig> agents, string defaultAgent, Action<JObject> edit = null)
        {
            var o = new InitializationOptions
            {
                Storage = new StorageOptions { Dir = ServerHost.ServerPath(Storage), Persist = true, Encrypt = false },
                Agents = agents,
                DefaultAgent = defaultAgent,
                Resume = new ResumePolicyOptions { MaxAttempts = 3, BaseDelayMs = 10, MaxDelayMs = 40, Jitter = "none" },
            };
            var json = (JObject)ProtocolJson.Write(o);
            if (edit != null) edit(json);
            return json;
        }

        protected JObject Options(AgentConfig agent)
        {
            return Options(new Dictionary<string, AgentConfig> { { "scripted", agent } }, "scripted");
        }

        /// <summary>A new server wired to <paramref name="controller"/>'s handlers (null: a new controller), initialized with <paramref name="options"/>.</summary>
        protected TetherSessionController Start(JObject options, RecordingUi ui, out ServerProcess server, bool daemon = false,
            TetherSessionController controller = null, Action<string, JToken, TetherSessionController> onNotification = null,
            IDictionary<string, string> env = null)
        {
            server = new ServerProcess(TetherBin, Path.Combine(Temp, "server-" + Servers.Count + ".log"), daemon ? "auto" : "off", daemon ? RuntimeDir : null, env);
            Servers.Add(server);
            var c = controller ?? new TetherSessionController(server.Rpc, ui, ServerWorkspace, SystemClock.Instance, server.Log);
            var s = server;
            foreach (var m in TetherSessionController.NotificationMethods)
            {
                var method = m;
                server.Rpc.OnNotification(method, p =>
                {
                    s.Record(method, p);
                    c.HandleNotification(method, p);
                    if (onNotification != null) onNotification(method, p, c);
                });
            }
            foreach (var m in TetherSessionController.RequestMethods)
            {
                var method = m;
                server.Rpc.OnRequest(method, p => { s.Record(method, p); return c.HandleRequestAsync(method, p); });
            }
            server.Initialize(ServerWorkspace, options);
            return c;
        }

        /// <summary>Waits until <paramref name="condition"/> holds of the view, re-checking at each of its changes; fails after 30 s with the window's text and the server's diagnostics.</summary>
        protected static void WaitFor(TetherSessionController controller, Func<ConversationView, bool> condition, string what, ServerProcess server)
        {
            var view = controller.Conversation;
            using (var changed = new AutoResetEvent(false))
            {
                EventHandler h = (o, e) => changed.Set();
                view.Changed += h;
                try
                {
                    var deadline = DateTime.UtcNow + ServerProcess.Timeout;
                    while (!condition(view))
                    {
                        var left = deadline - DateTime.UtcNow;
                        if (left <= TimeSpan.Zero || !changed.WaitOne(left) && !condition(view))
                        {
                            Assert.Fail("timed out waiting for " + what + "; the window shows:\n" + ConversationText.Render(view) + server.Diagnostics());
                        }
                    }
                }
                finally
                {
                    view.Changed -= h;
                }
            }
        }

        /// <summary>The window as text, also printed for the test's log.</summary>
        protected static string Window(TetherSessionController controller, string label)
        {
            var text = ConversationText.Render(controller.Conversation);
            Console.WriteLine("[window: " + label + "]\n" + text);
            return text;
        }

        /// <summary>Fails unless <paramref name="lines"/> appear in <paramref name="text"/> in this order (other lines may come between).</summary>
        protected static void AssertLinesInOrder(string text, params string[] lines)
        {
            var all = text.Split('\n');
            int at = 0;
            foreach (var want in lines)
            {
                while (at < all.Length && all[at] != want) at++;
                if (at == all.Length) Assert.Fail("the window lacks the line (or has it out of order):\n  " + want + "\nwindow:\n" + text);
                at++;
            }
        }
    }
}
