using System;
using System.Collections.Generic;
using System.IO;
using System.Linq;
using System.Threading;
using Newtonsoft.Json.Linq;
using NUnit.Framework;
using Tether.Client.Core.Protocol;
using Tether.Client.Core.Ui;

namespace Tether.Client.Core.Tests
{
    /// <summary>
    /// Core against the real <c>tether serve --stdio</c> (a child process, over its stdio) hosting
    /// the real scripted ACP agent <c>tether-scripted-agent</c>. Nothing is faked on the server
    /// side; the user's clicks are scripted through <see cref="RecordingUi"/>.
    /// Missing binaries fail the test with their name and path (never a skip).
    /// </summary>
    [TestFixture]
    [Category("Integration")]
    public class IntegrationTests
    {
        private string temp;
        private string workspace;
        private string storage;
        private readonly List<ServerProcess> servers = new List<ServerProcess>();

        [SetUp]
        public void SetUp()
        {
            ServerHost.IgnoreIfListedAsGap();
            temp = Path.Combine(Path.GetTempPath(), "tether-vs-it-" + Guid.NewGuid().ToString("N").Substring(0, 12));
            workspace = Path.Combine(temp, "workspace");
            storage = Path.Combine(temp, "store");
            Directory.CreateDirectory(workspace);
            // The store folder is left for the server to create: it refuses one that group or
            // others can read (it wants mode 0700), which a folder made here with the default umask is.
        }

        [TearDown]
        public void TearDown()
        {
            foreach (var s in servers)
            {
                s.Dispose();
            }
            servers.Clear();
            try
            {
                Directory.Delete(temp, true);
            }
            catch (IOException)
            {
            }
            catch (UnauthorizedAccessException)
            {
            }
        }

        /// <summary>
        /// initializationOptions (paths as the server sees them): the cache in a temp folder, the scripted agent as the default
        /// agent (protocol acp), and the R-RESUME-3 resume policy with short delays (10/20/40 ms
        /// instead of 1/2/4 s) so the three attempts run in well under a second.
        /// </summary>
        private JObject Options(string agentPath, Dictionary<string, string> agentEnv, IList<string> agentArgs)
        {
            var o = new InitializationOptions
            {
                Storage = new StorageOptions { Dir = ServerHost.ServerPath(storage), Persist = true, Encrypt = false },
                Agents = new Dictionary<string, AgentConfig>
                {
                    { "scripted", new AgentConfig { Command = ServerHost.ServerPath(agentPath), Args = new List<string>(agentArgs), Env = agentEnv, Protocol = AgentProtocols.Acp } },
                },
                DefaultAgent = "scripted",
                Resume = new ResumePolicyOptions { MaxAttempts = 3, BaseDelayMs = 10, MaxDelayMs = 40, Jitter = "none" },
            };
            return (JObject)ProtocolJson.Write(o);
        }

        /// <summary>Starts a server, completes initialize, and wires a controller (Core's real logic) to it.</summary>
        private TetherSessionController Start(string tether, JObject options, RecordingUi ui, out ServerProcess server, IClock clock = null)
        {
            server = new ServerProcess(tether, Path.Combine(temp, "server-" + servers.Count + ".log"));
            servers.Add(server);
            var controller = new TetherSessionController(server.Rpc, ui, ServerHost.ServerPath(workspace), clock ?? SystemClock.Instance, server.Log);
            var s = server;
            foreach (var m in TetherSessionController.NotificationMethods)
            {
                var method = m;
                server.Rpc.OnNotification(method, p => { s.Record(method, p); controller.HandleNotification(method, p); });
            }
            foreach (var m in TetherSessionController.RequestMethods)
            {
                var method = m;
                server.Rpc.OnRequest(method, p => { s.Record(method, p); return controller.HandleRequestAsync(method, p); });
            }
            var init = server.Initialize(ServerHost.ServerPath(workspace), options);
            Assert.AreEqual("tether", (string)init.SelectToken("serverInfo.name"), "serverInfo.name" + server.Diagnostics());
            Assert.AreEqual(1, TetherCapabilities.ServerProtocolVersion(init), "capabilities.experimental.tether.protocolVersion" + server.Diagnostics());
            return controller;
        }

        /// <summary>
        /// Phase 1: a first server starts a session on the scripted agent and persists it at
        /// shutdown, so the cache holds a session the next agent process does not know. Returns its id.
        /// </summary>
        private string CreateCachedSession(string tether, string agent)
        {
            var ui = new RecordingUi();
            ServerProcess server;
            var controller = Start(tether, Options(agent, ScriptedEnv(ScenarioHealthy), ScriptedArgs(ScenarioHealthy)), ui, out server);
            var first = server.Await(controller.ResumeAsync(null, CancellationToken.None), "session/resume (phase 1)");
            Assert.AreEqual(ResumeOutcome.Started, first.Outcome, "a workspace with nothing cached starts a new session" + server.Diagnostics());
            Assert.IsNotNull(first.SessionId, "started result without sessionId" + server.Diagnostics());
            var persisted = server.Await(controller.ShutdownAsync(), "session/persist (shutdown)");
            Assert.IsNotNull(persisted, "the shutdown persist must be sent while a session is active");
            Assert.IsTrue(persisted.Saved, "a shutdown persist is written durably before the reply" + server.Diagnostics());
            server.Shutdown();
            Assert.IsTrue(server.HasExited, "server exits after shutdown/exit" + server.Diagnostics());
            return first.SessionId;
        }

        // The scripted agent's scripts (crates/tether-host/src/scripted/): both advertise
        // loadSession and resume and keep their sessions in the same state directory, so a new
        // agent process can load what an earlier one created. "healthy" has no faults; "forget"
        // answers every session/load and session/resume with -32002 "Resource not found"
        // {details: "Session not found"}, as Claude, Codex and Copilot do for an unknown session
        // (R-CLASS-3), which the server classifies sessionExpired: no retries, ask at once.
        private const string ScenarioHealthy = "healthy";
        private const string ScenarioForget = "forget";
        // "permission": every prompt first asks session/request_permission (options "allow" /
        // "reject") and replies "permission: <optionId>", or ends the turn cancelled.
        private const string ScenarioPermission = "permission";

        private Dictionary<string, string> ScriptedEnv(string scenario)
        {
            return new Dictionary<string, string>();
        }

        private IList<string> ScriptedArgs(string scenario)
        {
            var faults = new JArray();
            if (scenario == ScenarioPermission)
            {
                faults.Add(new JObject(
                    new JProperty("method", "session/prompt"),
                    new JProperty("calls", new JArray()),
                    new JProperty("action", new JObject(new JProperty("kind", "permission")))));
            }
            if (scenario == ScenarioForget)
            {
                foreach (var method in new[] { "session/load", "session/resume" })
                {
                    faults.Add(new JObject(
                        new JProperty("method", method),
                        new JProperty("calls", new JArray()),
                        new JProperty("action", new JObject(
                            new JProperty("kind", "error"),
                            new JProperty("code", -32002),
                            new JProperty("message", "Resource not found"),
                            new JProperty("data", new JObject(new JProperty("details", "Session not found")))))));
                }
            }
            var script = new JObject(
                new JProperty("loadSession", true),
                new JProperty("resume", true),
                new JProperty("stateDir", ServerHost.ServerPath(Path.Combine(temp, "agent-state"))),
                new JProperty("faults", faults));
            var path = Path.Combine(temp, "script-" + scenario + ".json");
            File.WriteAllText(path, script.ToString());
            return new List<string> { ServerHost.ServerPath(path) };
        }

        [Test]
        public void ResumeNeedsChoiceThenStartNewSession()
        {
            var tether = Binaries.Tether();
            var agent = Binaries.ScriptedAgent();
            var oldId = CreateCachedSession(tether, agent);

            var ui = new RecordingUi();
            ui.ModalAnswers.Enqueue(SessionPresenter.NewChoice);
            ServerProcess server;
            var controller = Start(tether, Options(agent, ScriptedEnv(ScenarioForget), ScriptedArgs(ScenarioForget)), ui, out server);
            var result = server.Await(controller.ResumeAsync(null, CancellationToken.None), "session/resume → needsChoice → session/recoveryChoice(new)");

            // The dialog: the server's texts, our two buttons.
            var modal = ui.Modals.SingleOrDefault();
            Assert.IsNotNull(modal, "resume must end needsChoice and show the recovery dialog" + server.Diagnostics());
            Assert.AreEqual(oldId, modal.SessionId);
            Assert.IsNotNullOrEmpty(modal.Message);
            Assert.IsNotNullOrEmpty(modal.Detail);
            CollectionAssert.AreEqual(new[] { "Try Again", "Start New Session" }, modal.ButtonTitles.ToArray());
            var restored = server.Received(Methods.Restored);
            Assert.AreEqual(1, restored.Count, "session/restored is sent before the first attempt" + server.Diagnostics());
            Assert.AreEqual(oldId, (string)restored[0]["sessionId"]);
            Assert.IsTrue(ui.Of<SetStatus>().Any(s => s.Text.StartsWith("Resuming\u2026 attempt 1 of ", StringComparison.Ordinal)),
                "status texts seen: " + string.Join(" | ", ui.Of<SetStatus>().Select(s => s.Text)) + server.Diagnostics());

            Console.WriteLine("[integration] dialog: \"" + modal.Message + "\" / \"" + modal.Detail + "\" buttons: " + string.Join(", ", modal.ButtonTitles));
            Console.WriteLine("[integration] status texts: " + string.Join(" | ", ui.Of<SetStatus>().Select(x => x.Text)));
            Console.WriteLine("[integration] notifications: " + string.Join(", ", server.Notifications.Select(n => (string)n["method"])));
            Console.WriteLine("[integration] result: " + result.Outcome + " " + result.SessionId + " (previous " + result.PreviousSessionId + ")");

            // The choice: a new session replaced the old one.
            Assert.AreEqual(ResumeOutcome.Started, result.Outcome, server.Diagnostics());
            Assert.IsNotNull(result.SessionId);
            Assert.AreNotEqual(oldId, result.SessionId);
            Assert.AreEqual(oldId, result.PreviousSessionId);
            var expired = server.Received(Methods.Expired);
            Assert.AreEqual(1, expired.Count, "Start New Session sends session/expired" + server.Diagnostics());
            Assert.AreEqual(oldId, (string)expired[0]["previousSessionId"]);
            Assert.AreEqual(result.SessionId, (string)expired[0]["sessionId"]);
            StringAssert.Contains(StatusText.ShortId(result.SessionId), ui.Of<ShowInfo>().Single().Text);
            Assert.AreEqual("Session ready", ui.Of<SetStatus>().Last().Text);
            Assert.AreEqual(result.SessionId, controller.Persist.ActiveSessionId);

            // The shim's shutdown persist of the new session is accepted.
            var persisted = server.Await(controller.ShutdownAsync(), "session/persist (shutdown)");
            Assert.IsTrue(persisted.Saved, server.Diagnostics());
            server.Shutdown();
            Assert.AreEqual(0, server.ExitCode, "clean exit after shutdown/exit" + server.Diagnostics());
        }

        [Test]
        public void TryAgainRunsAnotherRoundThenDismissalKeepsTheBreakerOpen()
        {
            var tether = Binaries.Tether();
            var agent = Binaries.ScriptedAgent();
            var oldId = CreateCachedSession(tether, agent);

            var ui = new RecordingUi();
            ui.ModalAnswers.Enqueue(SessionPresenter.RetryChoice);
            ui.ModalAnswers.Enqueue(null);
            ServerProcess server;
            var controller = Start(tether, Options(agent, ScriptedEnv(ScenarioForget), ScriptedArgs(ScenarioForget)), ui, out server);
            var result = server.Await(controller.ResumeAsync(null, CancellationToken.None), "session/resume → retry → dismiss");

            Console.WriteLine("[integration] after Try Again: " + result.Outcome + ", breaker " + result.Breaker.Status + " attempts " + result.Breaker.Attempts
                + "/" + result.Breaker.MaxAttempts + " userRetries " + result.Breaker.UserRetries + "; dialogs: "
                + string.Join(" || ", ui.Modals.Select(m => m.Message + " [" + string.Join(", ", m.ButtonTitles) + "]")));
            Assert.AreEqual(2, ui.Modals.Count, "after Try Again fails, the dialog shows again" + server.Diagnostics());
            Assert.AreEqual(ResumeOutcome.NeedsChoice, result.Outcome, server.Diagnostics());
            Assert.AreEqual(1, result.Breaker.UserRetries, "one user retry counted" + server.Diagnostics());
            Assert.AreEqual(BreakerStatus.Open, result.Breaker.Status);
            CollectionAssert.IsEmpty(server.Received(Methods.Expired), "no new session without the user's choice");
            Assert.IsTrue(ui.Of<ShowInfoBar>().Any(b => b.Id == SessionPresenter.RecoveryInfoBarId), "a dismissal leaves the 'offer again' info bar");
            CollectionAssert.AreEqual(new[] { "Start New Session" }, ui.Modals[1].ButtonTitles.ToArray(),
                "after the user's retry is spent the server offers only a new session, and the dialog shows exactly that");
            Assert.IsNull(controller.Persist.ActiveSessionId);

            // The info bar's action offers the dialog again; this time Start New Session.
            ui.ModalAnswers.Enqueue(SessionPresenter.NewChoice);
            var again = server.Await(controller.ReofferRecoveryAsync(CancellationToken.None), "re-offered recovery dialog");
            Assert.AreEqual(ResumeOutcome.Started, again.Outcome, server.Diagnostics());
            Assert.AreEqual(oldId, again.PreviousSessionId);
            server.Shutdown();
        }

        [Test]
        public void PermissionQuestionsAreAnsweredAndTheShimsSnapshotIsPersistedAndRestored()
        {
            var tether = Binaries.Tether();
            var agent = Binaries.ScriptedAgent();
            var clock = new FakeClock();
            var ui = new RecordingUi();
            ServerProcess server;
            var controller = Start(tether, Options(agent, ScriptedEnv(ScenarioPermission), ScriptedArgs(ScenarioPermission)), ui, out server, clock);
            var started = server.Await(controller.ResumeAsync(null, CancellationToken.None), "session/resume");
            Assert.AreEqual(ResumeOutcome.Started, started.Outcome, server.Diagnostics());

            // Allow: the agent's options reach the user; the chosen id reaches the agent.
            ui.ChoiceAnswers.Enqueue("allow");
            var allowed = server.Await(controller.PromptAsync(started.SessionId, "edit it", CancellationToken.None), "session/prompt (allow)");
            Assert.AreEqual("end_turn", (string)allowed["stopReason"], allowed + server.Diagnostics());
            var ask = ui.Choices.Single();
            CollectionAssert.AreEqual(new[] { "allow", "reject" }, ask.Options.Select(o => o.Id).ToArray());
            CollectionAssert.AreEqual(new[] { "Allow", "Reject" }, ask.Options.Select(o => o.Label).ToArray());
            StringAssert.StartsWith("The agent asks for permission", ask.Title);
            var turns = controller.Transcript.ToSnapshot().ChatTurns;
            Assert.IsTrue(turns.Any(t => t.Role == "assistant" && t.Text.Contains("permission: allow")),
                "the agent's reply streamed as session/update: " + string.Join(" | ", turns.Select(t => t.Role + ": " + t.Text)) + server.Diagnostics());

            // No answer: the question is cancelled and so is the turn.
            ui.ChoiceAnswers.Enqueue(null);
            var cancelled = server.Await(controller.PromptAsync(started.SessionId, "edit it again", CancellationToken.None), "session/prompt (no answer)");
            Assert.AreEqual("cancelled", (string)cancelled["stopReason"], cancelled + server.Diagnostics());

            // The 30 s timer persist (clock moved, not waited) and the shutdown persist of the shim's snapshot.
            clock.Advance(TimeSpan.FromSeconds(30));
            var timer = server.Await(controller.Persist.TickAsync(), "session/persist (timer)");
            Assert.IsNotNull(timer, "a timer persist is due 30 s after the session became active");
            Assert.IsTrue(timer.Saved || timer.Coalesced, "timer persist: " + ProtocolJson.Write(timer) + server.Diagnostics());
            var shutdown = server.Await(controller.ShutdownAsync(), "session/persist (shutdown)");
            Assert.IsTrue(shutdown.Saved, server.Diagnostics());
            Assert.Greater(shutdown.Bytes, 0);
            server.Shutdown();

            // A new server restores what the shim persisted.
            var ui2 = new RecordingUi();
            ServerProcess server2;
            var controller2 = Start(tether, Options(agent, ScriptedEnv(ScenarioHealthy), ScriptedArgs(ScenarioHealthy)), ui2, out server2);
            var resumed = server2.Await(controller2.ResumeAsync(null, CancellationToken.None), "session/resume after restart");
            Assert.AreEqual(ResumeOutcome.Resumed, resumed.Outcome, server2.Diagnostics());
            Assert.AreEqual(started.SessionId, resumed.SessionId);
            var restored = server2.Received(Methods.Restored).Single();
            var restoredTurns = restored["snapshot"]["chatTurns"].Select(t => (string)t["role"] + ": " + (string)t["text"]).ToList();
            CollectionAssert.IsSubsetOf(new[] { "user: edit it", "assistant: permission: allow", "user: edit it again" }, restoredTurns,
                "the shim's persisted snapshot comes back: " + string.Join(" | ", restoredTurns) + server2.Diagnostics());
            Console.WriteLine("[integration] restored turns: " + string.Join(" | ", restored["snapshot"]["chatTurns"].Select(t => (string)t["role"] + ": " + (string)t["text"])));
            server2.Shutdown();
        }

        [Test]
        public void ClearSavedSessionRemovesTheCachedSession()
        {
            var tether = Binaries.Tether();
            var agent = Binaries.ScriptedAgent();
            CreateCachedSession(tether, agent);
            var ui = new RecordingUi();
            ServerProcess server;
            var controller = Start(tether, Options(agent, ScriptedEnv(ScenarioHealthy), ScriptedArgs(ScenarioHealthy)), ui, out server);
            var memory = new MemoryStore { Value = "sess-1" };
            controller.Memory = memory;
            var removed = server.Await(controller.ClearSavedSessionAsync(CancellationToken.None), "session/clear");
            Assert.AreEqual(1, removed, server.Diagnostics());
            Assert.IsNull(memory.Value, "the remembered session is forgotten with the cache: a restart resumes the most recent again");
            var list = server.Await(server.Rpc.RequestAsync(Methods.List, new JObject(new JProperty("workspace", new JObject(new JProperty("root", ServerHost.ServerPath(workspace))))), CancellationToken.None), "session/list");
            CollectionAssert.IsEmpty((JArray)list["sessions"], server.Diagnostics());
            server.Shutdown();
        }

        /// <summary>
        /// The real Claude (claude-agent-acp, answering from the test kit's fake model API) behind the
        /// server: Core starts a session and plays one prompt turn, whose answer (the fake's echo of the
        /// prompt) streams into the transcript. Its agent entry (command, args, env) is the JSON file
        /// <c>$TETHER_VS_REAL_CLAUDE</c>, written by the windows suite (tests/wine/real-agents.sh, which
        /// selects this category with TETHER_VS_TESTS=real-claude); every other run leaves the category
        /// out and says so (build-and-test.sh). Its steps wait up to 240 s: the agent starts under Wine.
        /// </summary>
        [Test]
        [Category("RealClaude")]
        public void ARealClaudeTurnStreamsIntoTheTranscript()
        {
            var file = Environment.GetEnvironmentVariable("TETHER_VS_REAL_CLAUDE");
            Assert.IsFalse(string.IsNullOrEmpty(file), "TETHER_VS_REAL_CLAUDE names no agent entry: run this test through TETHER_VS_TESTS=real-claude (tests/wine/real-agents.sh)");
            var entry = JObject.Parse(File.ReadAllText(file));
            var o = new InitializationOptions
            {
                Storage = new StorageOptions { Dir = ServerHost.ServerPath(storage), Persist = true, Encrypt = false },
                Agents = new Dictionary<string, AgentConfig>
                {
                    {
                        "claude", new AgentConfig
                        {
                            Command = (string)entry["command"],
                            Args = entry["args"].Select(a => (string)a).ToList(),
                            Env = entry["env"].ToObject<Dictionary<string, string>>(),
                            Protocol = AgentProtocols.Acp,
                        }
                    },
                },
                DefaultAgent = "claude",
            };
            var tether = Binaries.Tether();
            var ui = new RecordingUi();
            ServerProcess server;
            var controller = Start(tether, (JObject)ProtocolJson.Write(o), ui, out server);
            var long_ = TimeSpan.FromSeconds(240);
            var resuming = controller.ResumeAsync(null, CancellationToken.None);
            resuming.Wait(long_);
            var started = server.Await(resuming, "session/resume (the real Claude starts)");
            Assert.AreEqual(ResumeOutcome.Started, started.Outcome, server.Diagnostics());
            var prompting = controller.PromptAsync(started.SessionId, "hello from visual studio", CancellationToken.None);
            prompting.Wait(long_);
            var answer = server.Await(prompting, "session/prompt (the real Claude's turn)");
            Assert.AreEqual("end_turn", (string)answer["stopReason"], answer + server.Diagnostics());
            var turns = controller.Transcript.ToSnapshot().ChatTurns;
            var said = string.Join(" | ", turns.Select(t => t.Role + ": " + t.Text));
            Assert.IsTrue(turns.Any(t => t.Role == "assistant" && t.Text.Contains("ok: hello from visual studio")),
                "the real Claude's answer streamed into the transcript: " + said + server.Diagnostics());
            Console.WriteLine("[integration] the real Claude's turn: " + said);
            var persisted = server.Await(controller.ShutdownAsync(), "session/persist (shutdown)");
            Assert.IsTrue(persisted.Saved, server.Diagnostics());
            server.Shutdown();
        }
    }
}
