using System;
using System.Collections.Generic;
using System.Linq;
using System.Text.RegularExpressions;
using System.Threading;
using Newtonsoft.Json.Linq;
using NUnit.Framework;
using Tether.Client.Core.Protocol;
using Tether.Client.Core.Ui;

namespace Tether.Client.Core.Tests
{
    /// <summary>
    /// The tool window's view model against the real <c>tether serve --stdio</c> and real agents
    /// (the scripted agent, and Tether.TestAgent for thoughts, plans, tool calls and diffs): what
    /// a person would see is checked as the window's text (<see cref="ConversationText"/>).
    /// </summary>
    [TestFixture]
    [Category("Integration")]
    public class ToolWindowIntegrationTests : ToolWindowFixture
    {
        [Test]
        public void ALiveTurnShowsThoughtsPlanToolCallsWithOutputDiffsAndTheAnswer()
        {
            var ui = new RecordingUi();
            ServerProcess server;
            var c = Start(Options(RichAgent()), ui, out server);
            var started = server.Await(c.ResumeAsync(null, CancellationToken.None), "session/resume");
            Assert.AreEqual(ResumeOutcome.Started, started.Outcome, server.Diagnostics());
            var before = Window(c, "started");
            StringAssert.Contains("Status: Session is live\nPrompt: [Send] [Cancel (disabled)]\n", before);

            var reply = server.Await(c.SendAsync("run the tests", CancellationToken.None), "session/prompt");
            Assert.AreEqual("end_turn", (string)reply["stopReason"], server.Diagnostics());
            var text = Window(c, "after the turn");
            var notes = System.IO.Path.Combine(Workspace, "notes.txt");
            Assert.AreEqual(
                "== Tether: session rich-1 ==\n" +
                "You: run the tests\n" +
                "Thought: Let me run the tests first.\n" +
                "Plan:\n" +
                "  [done] Run the tests (high)\n" +
                "  [done] Record the result in notes.txt\n" +
                "Tool call [execute] Run the tests (done)\n" +
                "  | running 3 tests\n" +
                "  | 3 passed\n" +
                "Tool call [edit] Edit notes.txt (done)\n" +
                "  Diff " + notes + "\n" +
                "  - tests: unknown\n" +
                "  + tests: 3 passed\n" +
                "Agent: All 3 tests pass; I updated notes.txt.\n" +
                "Status: Session is live\n" +
                "Prompt: [Send] [Cancel (disabled)]\n",
                text, server.Diagnostics());
            server.Shutdown();
        }

        [Test]
        public void OpeningAWorkspaceWithNothingCachedStartsNoAgentAndTheFirstPromptStartsTheSession()
        {
            // R-RESUME-11: the resume at start sends create: false; the real server answers
            // nothingToResume and starts no agent (the scripted agent makes its state folder
            // when it starts); the first prompt starts the session, then runs its turn.
            var script = Script("startup", null, new JObject(new JProperty("reply", "hello from the first session")));
            var agentState = System.IO.Path.Combine(Temp, "agent-state");
            var ui = new RecordingUi();
            ServerProcess server;
            var c = Start(Options(Scripted(script)), ui, out server);
            var atStart = server.Await(c.ResumeAtStartupAsync(CancellationToken.None), "session/resume (create: false)");
            Assert.AreEqual(ResumeOutcome.NothingToResume, atStart.Outcome, server.Diagnostics());
            Assert.IsNull(atStart.SessionId);
            Assert.IsFalse(System.IO.Directory.Exists(agentState), "no agent ran: " + agentState + server.Diagnostics());
            Assert.AreEqual(0, ui.Of<ShowInfo>().Count(i => i.Severity != Severity.Info), "no error or warning shown");
            var idle = Window(c, "nothing to resume");
            StringAssert.Contains("Status: " + StatusText.NoSession + "\nPrompt: [Send] [Cancel (disabled)]\n", idle);

            var reply = server.Await(c.SendAsync("hello", CancellationToken.None), "session/prompt (starts the session)");
            Assert.AreEqual("end_turn", (string)reply["stopReason"], server.Diagnostics());
            Assert.IsNotNull(c.ActiveSessionId);
            Assert.IsTrue(System.IO.Directory.Exists(agentState), "the prompt started the agent" + server.Diagnostics());
            var text = Window(c, "after the first prompt");
            AssertLinesInOrder(text, "You: hello", "Agent: hello from the first session", "Status: Session is live");
            server.Shutdown();
        }

        [Test]
        public void TheRestoredTranscriptShowsAtOnceMarkedStaleUntilTheAgentConfirmsIt()
        {
            var script = Script("healthy", null);
            var ui = new RecordingUi();
            ServerProcess first;
            var c1 = Start(Options(Scripted(script)), ui, out first);
            var started = first.Await(c1.ResumeAsync(null, CancellationToken.None), "session/resume (first)");
            first.Await(c1.SendAsync("hello", CancellationToken.None), "session/prompt");
            Assert.IsTrue(first.Await(c1.ShutdownAsync(), "shutdown persist").Saved, first.Diagnostics());
            first.Shutdown();

            // A new Visual Studio: the window draws the saved transcript the moment it arrives.
            string atRestore = null;
            ServerProcess second;
            var c2 = Start(Options(Scripted(script)), new RecordingUi(), out second,
                onNotification: (m, p, c) => { if (m == Methods.Restored) atRestore = ConversationText.Render(c.Conversation); });
            var resumed = second.Await(c2.ResumeAsync(null, CancellationToken.None), "session/resume (second)");
            Assert.AreEqual(ResumeOutcome.Resumed, resumed.Outcome, second.Diagnostics());
            Assert.AreEqual(started.SessionId, resumed.SessionId);
            Console.WriteLine("[window: at session/restored]\n" + atRestore);
            Assert.IsNotNull(atRestore, "session/restored arrives before the answer" + second.Diagnostics());
            AssertLinesInOrder(atRestore,
                "[!] Saved transcript: the agent has not confirmed it yet.",
                "You (saved): hello",
                "Agent (saved): echo: hello");
            AssertLinesInOrder(atRestore, "Status: Showing the saved transcript; resuming the session\u2026",
                "Prompt: [Send (disabled)] [Cancel (disabled)] The session is resuming; the prompt box opens when the agent confirms it.");

            var confirmed = Window(c2, "resumed");
            StringAssert.DoesNotContain("[!]", confirmed, "the stale mark goes when the agent confirmed the session");
            AssertLinesInOrder(confirmed, "You (saved): hello", "Agent (saved): echo: hello", "Status: Session is live", "Prompt: [Send] [Cancel (disabled)]");
            second.Shutdown();
        }

        [Test]
        public void APermissionQuestionIsAskedInlineWithTheAgentsOptionsAndCancelEndsTheTurn()
        {
            var script = Script("permission", new JArray(Fault("session/prompt", new JObject(new JProperty("kind", "permission")))));
            var ui = new RecordingUi();
            ServerProcess server;
            var c = Start(Options(Scripted(script)), ui, out server);
            c.AskPermissionsInline = true;
            server.Await(c.ResumeAsync(null, CancellationToken.None), "session/resume");

            var turn = c.SendAsync("edit it", CancellationToken.None);
            WaitFor(c, v => v.Permission != null, "the inline permission question", server);
            var asking = Window(c, "asking");
            StringAssert.IsMatch(@"\nTool call \[(\w+)\] (.+) \(pending\)\n\? The agent asks for permission: \2 \[\1\] \[Allow\] \[Reject\]\n", asking,
                "the question names the tool call the agent reported");
            StringAssert.Contains("Prompt: [Send (disabled)] [Cancel] The agent is answering; Cancel stops the turn.", asking);
            CollectionAssert.IsEmpty(ui.Choices, "inline: no dialog");
            c.AnswerPermission(c.Conversation.Permission.Key, "allow");
            Assert.AreEqual("end_turn", (string)server.Await(turn, "session/prompt (allow)")["stopReason"]);
            var answered = Window(c, "answered");
            StringAssert.DoesNotContain("? The agent asks", answered);
            StringAssert.Contains("Agent: permission: allow\n", answered);

            // Cancel while the question is open: the turn ends cancelled and the question closes.
            var second = c.SendAsync("edit it again", CancellationToken.None);
            WaitFor(c, v => v.Permission != null, "the second question", server);
            server.Await(c.CancelTurnAsync().ContinueWith(t => true), "session/cancel");
            Assert.AreEqual("cancelled", (string)server.Await(second, "session/prompt (cancelled)")["stopReason"], server.Diagnostics());
            var cancelled = Window(c, "cancelled");
            AssertLinesInOrder(cancelled, "You: edit it again", "Tether: Turn cancelled.", "Prompt: [Send] [Cancel (disabled)]");
            StringAssert.DoesNotContain("? The agent asks", cancelled);
            server.Shutdown();
        }

        [Test]
        public void OlderTurnsArePagedInThroughSessionHistory()
        {
            var script = Script("healthy", null);
            ServerProcess first;
            var c1 = Start(Options(Scripted(script)), new RecordingUi(), out first);
            first.Await(c1.ResumeAsync(null, CancellationToken.None), "session/resume (first)");
            for (int i = 1; i <= 120; i++) c1.Transcript.AddUserTurn("turn " + i);
            Assert.IsTrue(first.Await(c1.ShutdownAsync(), "shutdown persist of 120 turns").Saved, first.Diagnostics());
            first.Shutdown();

            ServerProcess second;
            var c2 = Start(Options(Scripted(script)), new RecordingUi(), out second);
            second.Await(c2.ResumeAsync(null, CancellationToken.None), "session/resume (second)");
            var top = Window(c2, "restored window");
            StringAssert.Contains("^ 70 older turns [Load older turns]\nYou (saved): turn 71\n", top);
            Assert.AreEqual(50, c2.Conversation.Items.Count);

            second.Await(c2.LoadOlderAsync(CancellationToken.None).ContinueWith(t => { t.Wait(); return true; }), "session/history (1)");
            StringAssert.Contains("^ 20 older turns [Load older turns]\nYou (saved): turn 21\n", Window(c2, "one page up"));
            second.Await(c2.LoadOlderAsync(CancellationToken.None).ContinueWith(t => { t.Wait(); return true; }), "session/history (2)");
            var all = Window(c2, "all turns");
            StringAssert.DoesNotContain("older turn", all);
            var users = c2.Conversation.Items.Where(i => i.Kind == ItemKind.User).Select(i => i.Text).ToList();
            CollectionAssert.AreEqual(Enumerable.Range(1, 120).Select(i => "turn " + i).ToList(), users, "every turn once, oldest first");
            second.Shutdown();
        }

        [Test]
        public void ShowSessionsListsTheCacheAndTheRunningAgentsOwnSessionsWithTheirSourceAndOpensOne()
        {
            // An earlier Tether with another cache made session sess-1 in the agent's store.
            var script = Script("list", null, new JObject(new JProperty("list", true)));
            var realStorage = Storage;
            Storage = System.IO.Path.Combine(Temp, "other-store");
            ServerProcess other;
            var c0 = Start(Options(Scripted(script)), new RecordingUi(), out other);
            var theirs = other.Await(c0.ResumeAsync(null, CancellationToken.None), "session/resume (other cache)");
            other.Await(c0.SendAsync("the agent's own session", CancellationToken.None), "session/prompt (other cache)");
            other.Shutdown();
            Storage = realStorage;

            ServerProcess server;
            var c = Start(Options(Scripted(script)), new RecordingUi(), out server);
            var mine = server.Await(c.ResumeAsync(null, CancellationToken.None), "session/resume");
            server.Await(c.SendAsync("my prompt", CancellationToken.None), "session/prompt");
            var rows = server.Await(c.ListSessionsAsync(CancellationToken.None), "session/list all");
            var text = SessionRows.Render(rows);
            Console.WriteLine("[sessions]\n" + text);
            var cached = rows.Single(r => r.SessionId == mine.SessionId);
            Assert.AreEqual("my prompt", cached.Label);
            StringAssert.StartsWith("scripted \u00b7 Tether's cache", cached.Description);
            StringAssert.IsMatch("^updated just now \u00b7 2 turns \u00b7 live, 1 editor \u00b7 " + mine.SessionId + "$", cached.Detail);
            var listed = rows.SingleOrDefault(r => r.SessionId == theirs.SessionId);
            Assert.IsNotNull(listed, "the running agent's own session (session/list all: R-HIST-7) is listed:\n" + text + server.Diagnostics());
            Assert.AreEqual("acp", listed.Source);
            Assert.AreEqual("scripted \u00b7 listed by the running agent", listed.Description);

            // Opening it resumes it in the window.
            var openResult = server.Await(c.OpenSessionAsync(listed.SessionId, CancellationToken.None), "open the listed session");
            Assert.AreEqual(ResumeOutcome.Resumed, openResult.Outcome, server.Diagnostics());
            Assert.AreEqual(theirs.SessionId, c.Conversation.SessionId);
            var opened = Window(c, "opened");
            StringAssert.StartsWith("== Tether: session " + theirs.SessionId + " ==\n", opened);
            AssertLinesInOrder(opened, "You: the agent's own session", "Agent: echo: the agent's own session", "Status: Session is live", "Prompt: [Send] [Cancel (disabled)]");
            server.Shutdown();
        }

        [Test]
        public void AClaudeCodeSessionOfTheWorkspaceIsListedWithItsSourceAndOpensWithItsTranscriptFromTheAgentsFile()
        {
            // A real Claude Code 2.1.330 session file (crates/tether-history/tests/fixtures), moved
            // to this workspace's project folder of a private Claude Code store (the folder named
            // from the workspace as the server sees it: a `Z:\…` root under Wine).
            const string id = "011056c5-379b-4671-ae05-7da2d0635fdb";
            var fixture = System.IO.Path.Combine(Binaries.RepoRoot(), "crates", "tether-history", "tests", "fixtures", "claude", "projects", "-home-user-work", id + ".jsonl");
            var claude = System.IO.Path.Combine(Temp, "claude");
            var project = System.IO.Path.Combine(claude, "projects", Regex.Replace(ServerWorkspace, "[^A-Za-z0-9]", "-"));
            System.IO.Directory.CreateDirectory(project);
            var file = System.IO.Path.Combine(project, id + ".jsonl");
            // The fixture's paths are inside JSON strings: a Windows path's backslashes are escaped.
            System.IO.File.WriteAllText(file, System.IO.File.ReadAllText(fixture).Replace("/home/user/work", ServerWorkspace.Replace("\\", "\\\\")));
            var env = new Dictionary<string, string>
            {
                { "HOME", ServerHost.ServerPath(System.IO.Path.Combine(Temp, "home")) },
                { "CLAUDE_CONFIG_DIR", ServerHost.ServerPath(claude) },
            };
            var serverFile = ServerHost.ServerPath(file);
            var agent = Scripted(Script("healthy", null));
            agent.Env = new Dictionary<string, string>(env);

            string atRestore = null;
            var ui = new RecordingUi();
            ui.ModalAnswers.Enqueue(SessionPresenter.NewWithHistoryChoice);
            ServerProcess server;
            var c = Start(Options(agent), ui, out server, env: env,
                onNotification: (m, p, ctl) => { if (m == Methods.Restored) atRestore = ConversationText.Render(ctl.Conversation); });
            var rows = server.Await(c.ListSessionsAsync(CancellationToken.None), "session/list all");
            Console.WriteLine("[sessions]\n" + SessionRows.Render(rows));
            var row = rows.SingleOrDefault(r => r.SessionId == id);
            Assert.IsNotNull(row, "the Claude Code session of the workspace is listed:\n" + SessionRows.Render(rows) + server.Diagnostics());
            Assert.AreEqual("claude", row.Source);
            Assert.AreEqual("please run the fixture command", row.Label);
            StringAssert.Contains("Claude Code's own store", row.Description);
            StringAssert.EndsWith(" \u00b7 " + serverFile, row.Detail);

            var result = server.Await(c.OpenSessionAsync(id, CancellationToken.None), "open the Claude Code session");
            Console.WriteLine("[window: at session/restored]\n" + atRestore);
            Assert.IsNotNull(atRestore, "the agent's transcript is sent before the first attempt" + server.Diagnostics());
            AssertLinesInOrder(atRestore,
                "== Tether: session " + id + " ==",
                "[!] Transcript read from Claude Code's own session store, " + serverFile + ": the agent has not confirmed it yet.",
                "You (saved): please run the fixture command");
            StringAssert.IsMatch(@"\nTool call \[execute\] .+ \(saved\)\n", atRestore, "its tool calls");
            // The scripted agent does not know Claude Code's id: the dialog offers to continue the
            // conversation from the agent's file in a new session (R-HIST-5), which is chosen.
            CollectionAssert.Contains(ui.Modals.Single().ButtonTitles.ToList(), "Continue in a New Session", server.Diagnostics());
            Assert.AreEqual(ResumeOutcome.Started, result.Outcome, server.Diagnostics());
            var marker = (string)server.Received(Methods.Expired).Single()["carriedOver"]["marker"];
            AssertLinesInOrder(Window(c, "continued from the agent's file"), "== Tether: session " + result.SessionId + " ==", "Tether: " + marker, "Prompt: [Send] [Cancel (disabled)]");
            server.Shutdown();
        }

        [Test]
        public void TheRecoveryDialogOffersAllThreeActionsAndContinueInANewSessionCarriesTheConversation()
        {
            var healthy = Script("healthy", null);
            ServerProcess first;
            var c1 = Start(Options(Scripted(healthy)), new RecordingUi(), out first);
            var old = first.Await(c1.ResumeAsync(null, CancellationToken.None), "session/resume (first)");
            first.Await(c1.SendAsync("remember the number 42", CancellationToken.None), "session/prompt");
            first.Await(c1.ShutdownAsync(), "shutdown persist");
            first.Shutdown();

            var forget = new JArray();
            foreach (var m in new[] { "session/load", "session/resume" })
            {
                forget.Add(Fault(m, new JObject(new JProperty("kind", "error"), new JProperty("code", -32002), new JProperty("message", "Resource not found"),
                    new JProperty("data", new JObject(new JProperty("details", "Session not found"))))));
            }
            var ui = new RecordingUi();
            ui.ModalAnswers.Enqueue(SessionPresenter.NewWithHistoryChoice);
            ServerProcess second;
            var c2 = Start(Options(Scripted(Script("forget", forget))), ui, out second);
            var result = second.Await(c2.ResumeAsync(null, CancellationToken.None), "resume → dialog → Continue in a New Session");
            var dialog = ui.Modals.Single();
            Console.WriteLine("[dialog] " + dialog.Message + " / " + dialog.Detail + " [" + string.Join("] [", dialog.ButtonTitles) + "]");
            Assert.AreEqual("Previous session not found", dialog.Message, second.Diagnostics());
            CollectionAssert.AreEqual(new[] { "Try Again", "Continue in a New Session", "Start New Session" }, dialog.ButtonTitles.ToArray());
            Assert.AreEqual(ResumeOutcome.Started, result.Outcome, second.Diagnostics());
            Assert.AreEqual(old.SessionId, result.PreviousSessionId);
            var expired = second.Received(Methods.Expired).Single();
            Assert.AreEqual("newWithHistory", (string)expired["choice"]);

            var text = Window(c2, "continued");
            AssertLinesInOrder(text,
                "== Tether: session " + result.SessionId + " ==",
                "Tether: " + (string)expired["carriedOver"]["marker"],
                "Status: Session is live",
                "Prompt: [Send] [Cancel (disabled)]");
            StringAssert.Contains("Context carried over from session", text);

            // The new session's first turn carries the conversation to the agent.
            second.Await(c2.SendAsync("which number?", CancellationToken.None), "session/prompt (new session)");
            var agentText = c2.Conversation.Items.Last(i => i.Kind == ItemKind.Agent).Text;
            StringAssert.Contains("remember the number 42", agentText, "the scripted agent echoes the carried-over block with the prompt");
            second.Shutdown();
        }

        [Test]
        public void ALongRateLimitOffersAHandoffAndAcceptingItContinuesWithTheOtherAgent()
        {
            var limited = Script("limited", new JArray(Fault("session/prompt", new JObject(
                new JProperty("kind", "error"), new JProperty("code", -32603), new JProperty("message", "Internal error"),
                new JProperty("data", new JObject(new JProperty("details", "API Error: 429 {\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"Rate limited\"}}")))), 2)));
            var other = Script("other", null, new JObject(new JProperty("sessionPrefix", "other-"), new JProperty("stateDir", ServerHost.ServerPath(System.IO.Path.Combine(Temp, "other-state")))));
            var agents = new Dictionary<string, AgentConfig> { { "scripted", Scripted(limited) }, { "other", Scripted(other) } };
            var options = Options(agents, "scripted", o =>
            {
                o["rateLimit"] = new JObject(new JProperty("baseDelayMs", 60000), new JProperty("maxDelayMs", 60000), new JProperty("maxRetries", 5), new JProperty("jitter", "none"));
                o["handoff"] = new JObject(new JProperty("offerAfterMs", 0));
            });
            var ui = new RecordingUi();
            ServerProcess server;
            var c = Start(options, ui, out server);
            var first = server.Await(c.ResumeAsync(null, CancellationToken.None), "session/resume");
            server.Await(c.SendAsync("hello", CancellationToken.None), "session/prompt (1)");

            var waiting = c.SendAsync("and now?", CancellationToken.None);
            WaitFor(c, v => v.Handoff != null, "the handoff offer", server);
            var offer = Window(c, "rate limited");
            StringAssert.IsMatch(@"\n\? .+ \[Continue with [Oo]ther\] \[Keep Waiting\]\n", offer);
            StringAssert.Contains("Status: Rate limited, resuming in 60 s", offer);

            var handedOff = server.Await(c.AcceptHandoffAsync(CancellationToken.None), "session/handoff");
            Assert.AreEqual(ResumeOutcome.Started, handedOff.Outcome, server.Diagnostics());
            Assert.AreEqual(first.SessionId, handedOff.PreviousSessionId);
            StringAssert.StartsWith("other-", handedOff.SessionId);
            var expired = server.Received(Methods.Expired).Single();
            Assert.AreEqual("handoff:other", (string)expired["choice"]);
            Assert.AreEqual("cancelled", (string)server.Await(waiting, "the rate-limited prompt ends")["stopReason"], "a handoff abandons the wait" + server.Diagnostics());
            var after = Window(c, "handed off");
            AssertLinesInOrder(after, "== Tether: session " + handedOff.SessionId + " ==", "Tether: " + (string)expired["carriedOver"]["marker"]);
            StringAssert.DoesNotContain("[Keep Waiting]", after);
            server.Await(c.SendAsync("still there?", CancellationToken.None), "session/prompt (other agent)");
            StringAssert.Contains("still there?", c.Conversation.Items.Last(i => i.Kind == ItemKind.Agent).Text);
            server.Shutdown();
        }

        [Test]
        public void TwoWindowsOnOneDaemonSessionSeeEachOthersTurnAndEitherCanCancelIt()
        {
            const int count = 2000;
            var options = Options(Scripted(Streaming(count)));
            ServerProcess a, b;
            var ca = Start(options, new RecordingUi(), out a, daemon: true);
            var started = a.Await(ca.ResumeAsync(null, CancellationToken.None), "session/resume (A)");
            var cb = Start(options, new RecordingUi(), out b, daemon: true);
            var attached = b.Await(cb.ResumeAsync(started.SessionId, CancellationToken.None), "session/resume (B, the same session)");
            Assert.AreEqual(ResumeOutcome.Resumed, attached.Outcome, b.Diagnostics());

            var turn = ca.SendAsync("count", CancellationToken.None);
            WaitFor(cb, v => Numbers(cb).Count >= 5, "A's turn streaming in B's window", b);
            var seen = Window(cb, "B while A's turn runs");
            AssertLinesInOrder(seen, "You: count", "Agent \u2026: 1");
            StringAssert.Contains("Prompt: [Send (disabled)] [Cancel] The agent is answering; Cancel stops the turn.", seen, "B may cancel A's turn");

            b.Await(cb.CancelTurnAsync().ContinueWith(t => true), "session/cancel from B");
            Assert.AreEqual("cancelled", (string)a.Await(turn, "A's prompt")["stopReason"], a.Diagnostics());
            WaitFor(cb, v => !v.TurnRunning, "session/turnEnded in B", b);
            AssertLinesInOrder(Window(cb, "B after the cancel"), "You: count", "Tether: Turn cancelled.", "Prompt: [Send] [Cancel (disabled)]");
            AssertLinesInOrder(Window(ca, "A after the cancel"), "You: count", "Tether: Turn cancelled.", "Prompt: [Send] [Cancel (disabled)]");
            Assert.Less(Numbers(cb).Count, count, "the turn stopped before its end");
            CollectionAssert.AreEqual(Enumerable.Range(1, Numbers(cb).Count).ToList(), Numbers(cb), "B drew each update once, in order");
            a.Shutdown();
            b.Shutdown();
        }

        [Test]
        public void ATurnLostWithAnInProcessServerIsClosedSayingSoAfterTheRestart()
        {
            const int count = 2000;
            var options = Options(Scripted(Streaming(count)));
            ServerProcess first;
            var c = Start(options, new RecordingUi(), out first);
            first.Await(c.ResumeAsync(null, CancellationToken.None), "session/resume");
            var turn = c.SendAsync("count", CancellationToken.None);
            WaitFor(c, v => Numbers(c).Count >= 5, "the first updates", first);
            first.Kill();
            Assert.IsTrue(turn.ContinueWith(t => t.IsFaulted).Wait(ServerProcess.Timeout), "the prompt's connection ended");
            Assert.IsTrue(c.Conversation.TurnRunning, "until the server says otherwise the turn may go on (in a daemon)");

            // Without a daemon the turn died with its server: the restarted server says it does not run it.
            ServerProcess second;
            Start(options, new RecordingUi(), out second, controller: c);
            second.Await(c.ServerRestartedAsync(second.Rpc, CancellationToken.None), "resume after the restart");
            Assert.IsFalse(c.Conversation.TurnRunning, second.Diagnostics());
            StringAssert.Contains("Tether: The prompt failed: " + TetherSessionController.TurnLost, Window(c, "after the restart"));
            second.Shutdown();
        }

        [Test]
        public void WhenTheDaemonDiesTheForwarderReattachesTheSessionAndTheWindowGoesOn()
        {
            var options = Options(Scripted(Script("healthy", null)));
            ServerProcess server;
            var c = Start(options, new RecordingUi(), out server, daemon: true);
            var started = server.Await(c.ResumeAsync(null, CancellationToken.None), "session/resume");
            server.Await(c.SendAsync("hello", CancellationToken.None), "session/prompt");

            // The daemon is killed (SIGKILL, or TerminateProcess under Wine, by its pid from `tether daemon status --json`).
            var psi = new System.Diagnostics.ProcessStartInfo(TetherBin, "daemon status --json") { UseShellExecute = false, RedirectStandardOutput = true };
            psi.EnvironmentVariables["TETHER_RUNTIME_DIR"] = ServerHost.ServerPath(RuntimeDir);
            int pid;
            using (var p = System.Diagnostics.Process.Start(psi))
            {
                var json = JObject.Parse(p.StandardOutput.ReadToEnd());
                p.WaitForExit(30000);
                pid = (int)json["pid"];
            }
            ServerHost.Kill(pid);

            // The forwarder starts a new daemon, resumes the session there and says so.
            WaitFor(c, v => server.Received(Methods.Reattached).Count > 0 && v.Status.State == "live", "session/reattached and the session live again", server);
            var reattached = server.Received(Methods.Reattached).Single();
            Assert.AreEqual(started.SessionId, (string)reattached["sessionId"], server.Diagnostics());
            Assert.AreEqual("resumed", (string)reattached["result"]["outcome"], server.Diagnostics());
            Assert.IsNull(c.LastSeq, "the new daemon numbers its events from 1: no afterSeq from the old one");
            AssertLinesInOrder(Window(c, "reattached"), "You (saved): hello", "Agent (saved): echo: hello", "Status: Session is live", "Prompt: [Send] [Cancel (disabled)]");

            server.Await(c.SendAsync("again", CancellationToken.None), "session/prompt on the new daemon");
            AssertLinesInOrder(Window(c, "after a prompt on the new daemon"), "Agent (saved): echo: hello", "You: again", "Agent: echo: again");
            server.Shutdown();
        }

        /// <summary>A scripted agent whose first prompt streams <paramref name="count"/> numbered chunks ("1\n", "2\n", …) at 25 a second.</summary>
        private string Streaming(int count)
        {
            return Script("stream", new JArray(Fault("session/prompt", new JObject(new JProperty("kind", "stream"), new JProperty("count", count), new JProperty("perSecond", 25)), 1)));
        }

        private static List<int> Numbers(TetherSessionController c)
        {
            var agent = string.Concat(c.Conversation.Items.Where(i => i.Kind == ItemKind.Agent).Select(i => i.Text));
            return Regex.Matches(agent, @"(?m)^(\d+)$").Cast<Match>().Select(m => int.Parse(m.Groups[1].Value)).ToList();
        }

        [Test]
        public void AfterAVisualStudioRestartTheRunningTurnContinuesInTheWindowEveryUpdateOnce()
        {
            // 10 s at 25 a second: still running when the restarted window attaches, even on a loaded machine.
            const int count = 250;
            var options = Options(Scripted(Streaming(count)));
            var memory = new MemoryStore();
            ServerProcess first;
            var c1 = Start(options, new RecordingUi(), out first, daemon: true);
            c1.Memory = memory;
            var started = first.Await(c1.ResumeAsync(null, CancellationToken.None), "session/resume");
            var turn = c1.SendAsync("count", CancellationToken.None);
            WaitFor(c1, v => Numbers(c1).Count >= 10, "the first 10 updates", first);
            Assert.AreEqual(started.SessionId, memory.Value, "the window's session is remembered");

            // Visual Studio exits without a word: its tether serve dies; the daemon runs the turn on.
            first.Kill();
            Assert.IsTrue(turn.ContinueWith(t => t.IsFaulted).Wait(ServerProcess.Timeout), "the prompt's connection ended");

            // Visual Studio starts again: a new window, a new server, the remembered session.
            ServerProcess second;
            var c2 = Start(options, new RecordingUi(), out second, daemon: true);
            c2.Memory = memory;
            var resumed = second.Await(c2.ResumeAsync(null, CancellationToken.None), "session/resume after the restart");
            Assert.AreEqual(ResumeOutcome.Resumed, resumed.Outcome, second.Diagnostics());
            Assert.AreEqual(started.SessionId, resumed.SessionId);
            StringAssert.Contains("session/resume " + ServerWorkspace + " " + started.SessionId + "\n", second.Log + "\n", "by the remembered id, without afterSeq");
            WaitFor(c2, v => !v.TurnRunning && Numbers(c2).Count > 0, "the turn's end in the restarted window", second);
            CollectionAssert.AreEqual(Enumerable.Range(1, count).ToList(), Numbers(c2), "every update of the turn once, in order");
            var text = Window(c2, "after the restart");
            AssertLinesInOrder(text, "== Tether: session " + started.SessionId + " ==", "You: count", "Agent: 1", "  " + count, "  echo: count", "Status: Session is live", "Prompt: [Send] [Cancel (disabled)]");
            second.Shutdown();
        }

        [Test]
        public void APermissionQuestionLeftOpenWhenVisualStudioExitedIsAskedInTheRestartedWindow()
        {
            var options = Options(Scripted(Script("permission", new JArray(Fault("session/prompt", new JObject(new JProperty("kind", "permission")))))));
            var memory = new MemoryStore();
            ServerProcess first;
            var c1 = Start(options, new RecordingUi(), out first, daemon: true);
            c1.Memory = memory;
            c1.AskPermissionsInline = true;
            var started = first.Await(c1.ResumeAsync(null, CancellationToken.None), "session/resume");
            var turn = c1.SendAsync("edit it", CancellationToken.None);
            WaitFor(c1, v => v.Permission != null, "the question in the first window", first);
            first.Kill();
            Assert.IsTrue(turn.ContinueWith(t => t.IsFaulted).Wait(ServerProcess.Timeout), "the prompt's connection ended");

            // The daemon holds the question (R-DAEMON-6) and asks the window that attaches next.
            ServerProcess second;
            var c2 = Start(options, new RecordingUi(), out second, daemon: true);
            c2.Memory = memory;
            c2.AskPermissionsInline = true;
            var resumed = second.Await(c2.ResumeAsync(null, CancellationToken.None), "session/resume after the restart");
            Assert.AreEqual(started.SessionId, resumed.SessionId, second.Diagnostics());
            WaitFor(c2, v => v.Permission != null, "the held question in the restarted window", second);
            AssertLinesInOrder(Window(c2, "restarted, asking"), "You: edit it", "? The agent asks for permission: Edit file [other] [Allow] [Reject]");
            c2.AnswerPermission(c2.Conversation.Permission.Key, "allow");
            WaitFor(c2, v => !v.TurnRunning, "the turn's end", second);
            AssertLinesInOrder(Window(c2, "restarted, answered"), "You: edit it", "Agent: permission: allow", "Prompt: [Send] [Cancel (disabled)]");
            second.Shutdown();
        }

        [Test]
        public void AfterTheServerRestartsTheWindowResumesAfterTheLastEventItDrewEveryUpdateOnce()
        {
            // 10 s at 25 a second: still running when the restarted window attaches, even on a loaded machine.
            const int count = 250;
            var options = Options(Scripted(Streaming(count)));
            ServerProcess first;
            var c = Start(options, new RecordingUi(), out first, daemon: true);
            var started = first.Await(c.ResumeAsync(null, CancellationToken.None), "session/resume");
            var turn = c.SendAsync("count", CancellationToken.None);
            WaitFor(c, v => Numbers(c).Count >= 10, "the first 10 updates", first);
            first.Kill();
            Assert.IsTrue(turn.ContinueWith(t => t.IsFaulted).Wait(ServerProcess.Timeout), "the prompt's connection ended");
            Assert.IsTrue(c.Conversation.TurnRunning, "the turn stays open in the window: it goes on in the daemon");
            StringAssert.Contains("Status: " + ConversationView.ReconnectingText, Window(c, "reconnecting"));
            var lastSeq = c.LastSeq;
            Assert.IsNotNull(lastSeq);

            // The language client starts a new server; the same window resumes after the last event drawn.
            ServerProcess second;
            Start(options, new RecordingUi(), out second, daemon: true, controller: c);
            var resumed = second.Await(c.ServerRestartedAsync(second.Rpc, CancellationToken.None), "resume after the server restart");
            Assert.AreEqual(ResumeOutcome.Resumed, resumed.Outcome, second.Diagnostics());
            Assert.AreEqual(started.SessionId, resumed.SessionId);
            StringAssert.Contains("session/resume " + ServerWorkspace + " " + started.SessionId + " afterSeq=" + lastSeq, first.Log.ToString(), "the window's controller logs its resume");
            CollectionAssert.IsEmpty(second.Received(Methods.Restored), "with afterSeq no transcript is sent again");
            WaitFor(c, v => !v.TurnRunning, "the turn's end", second);
            CollectionAssert.AreEqual(Enumerable.Range(1, count).ToList(), Numbers(c), "every update of the turn once, in order");
            AssertLinesInOrder(Window(c, "after the server restart"), "You: count", "Agent: 1", "  echo: count", "Status: Session is live");
            second.Shutdown();
        }
    }
}
