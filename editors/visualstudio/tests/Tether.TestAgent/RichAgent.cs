// A small ACP agent for the integration tests (Agent Client Protocol: JSON-RPC 2.0, one message
// per line on stdio). Every prompt turn sends what a real coding agent sends in one turn and the
// scripted agent (crates/tether-host) does not: a thought, a plan and its updates, a tool call
// that runs with output and completes, an edit tool call carrying a diff, then the answer in two
// chunks; then it ends the turn with end_turn (or cancelled when `session/cancel` came first).
//
// It is the test's fixture, run as a real child process by the real `tether serve`; what the
// tests check is what the server forwards of it and how the tool window draws that.
// Usage: mono Tether.TestAgent.exe <workspace dir>   (the diff's file is <workspace>/notes.txt)
using System;
using System.IO;
using System.Text;
using System.Threading;
using Newtonsoft.Json;
using Newtonsoft.Json.Linq;

namespace Tether.TestAgent
{
    public static class RichAgent
    {
        private static readonly object WriteGate = new object();
        private static TextWriter output;
        private static int sessions;
        private static volatile bool cancelled;

        public static int Main(string[] args)
        {
            var workspace = args.Length > 0 ? args[0] : Directory.GetCurrentDirectory();
            output = new StreamWriter(Console.OpenStandardOutput(), new UTF8Encoding(false)) { AutoFlush = true, NewLine = "\n" };
            var input = new StreamReader(Console.OpenStandardInput(), new UTF8Encoding(false));
            string line;
            while ((line = input.ReadLine()) != null)
            {
                if (line.Trim().Length == 0) continue;
                JObject msg;
                try
                {
                    msg = JObject.Parse(line);
                }
                catch (JsonException e)
                {
                    Console.Error.WriteLine("test agent: not JSON: " + e.Message);
                    continue;
                }
                var method = (string)msg["method"];
                var id = msg["id"];
                if (method == null) continue; // a response to a request of ours (none are sent)
                switch (method)
                {
                    case "initialize":
                        Reply(id, new JObject(
                            new JProperty("protocolVersion", 1),
                            new JProperty("agentCapabilities", new JObject(new JProperty("loadSession", false))),
                            new JProperty("authMethods", new JArray()),
                            new JProperty("agentInfo", new JObject(new JProperty("name", "tether-vs-test-agent"), new JProperty("version", "1.0.0")))));
                        break;
                    case "session/new":
                        Reply(id, new JObject(new JProperty("sessionId", "rich-" + Interlocked.Increment(ref sessions))));
                        break;
                    case "session/cancel":
                        cancelled = true;
                        break;
                    case "session/prompt":
                        cancelled = false;
                        var sid = (string)msg["params"]["sessionId"];
                        var request = id;
                        new Thread(() => Turn(request, sid, workspace)) { IsBackground = true }.Start();
                        break;
                    default:
                        if (id != null)
                        {
                            Send(new JObject(new JProperty("jsonrpc", "2.0"), new JProperty("id", id),
                                new JProperty("error", new JObject(new JProperty("code", -32601), new JProperty("message", "Method not found: " + method)))));
                        }
                        break;
                }
            }
            return 0;
        }

        private static void Turn(JToken id, string sid, string workspace)
        {
            var notes = Path.Combine(workspace, "notes.txt");
            Update(sid, Chunk("agent_thought_chunk", "Let me run the tests first."));
            Update(sid, Plan("pending", "pending"));
            Update(sid, Q("{'sessionUpdate':'tool_call','toolCallId':'call_test','title':'Run the tests','kind':'execute','status':'pending'}"));
            Update(sid, ToolUpdate("call_test", "in_progress", "running 3 tests"));
            Update(sid, Plan("completed", "in_progress"));
            Update(sid, ToolUpdate("call_test", "completed", "running 3 tests\n3 passed"));
            var edit = Q("{'sessionUpdate':'tool_call','toolCallId':'call_edit','title':'Edit notes.txt','kind':'edit','status':'completed'}");
            edit["content"] = new JArray(new JObject(
                new JProperty("type", "diff"), new JProperty("path", notes),
                new JProperty("oldText", "tests: unknown\n"), new JProperty("newText", "tests: 3 passed\n")));
            Update(sid, edit);
            Update(sid, Plan("completed", "completed"));
            Update(sid, Chunk("agent_message_chunk", "All 3 tests pass; "));
            Update(sid, Chunk("agent_message_chunk", "I updated notes.txt."));
            Reply(id, new JObject(new JProperty("stopReason", cancelled ? "cancelled" : "end_turn")));
        }

        private static JObject Q(string singleQuoted)
        {
            return JObject.Parse(singleQuoted.Replace('\'', '"'));
        }

        private static JObject Chunk(string kind, string text)
        {
            return new JObject(new JProperty("sessionUpdate", kind),
                new JProperty("content", new JObject(new JProperty("type", "text"), new JProperty("text", text))));
        }

        private static JObject Plan(string first, string second)
        {
            return new JObject(new JProperty("sessionUpdate", "plan"), new JProperty("entries", new JArray(
                new JObject(new JProperty("content", "Run the tests"), new JProperty("priority", "high"), new JProperty("status", first)),
                new JObject(new JProperty("content", "Record the result in notes.txt"), new JProperty("priority", "medium"), new JProperty("status", second)))));
        }

        private static JObject ToolUpdate(string callId, string status, string text)
        {
            return new JObject(new JProperty("sessionUpdate", "tool_call_update"), new JProperty("toolCallId", callId), new JProperty("status", status),
                new JProperty("content", new JArray(new JObject(new JProperty("type", "content"),
                    new JProperty("content", new JObject(new JProperty("type", "text"), new JProperty("text", text)))))));
        }

        private static void Update(string sid, JObject update)
        {
            Send(new JObject(new JProperty("jsonrpc", "2.0"), new JProperty("method", "session/update"),
                new JProperty("params", new JObject(new JProperty("sessionId", sid), new JProperty("update", update)))));
        }

        private static void Reply(JToken id, JObject result)
        {
            Send(new JObject(new JProperty("jsonrpc", "2.0"), new JProperty("id", id), new JProperty("result", result)));
        }

        private static void Send(JObject message)
        {
            lock (WriteGate) output.WriteLine(message.ToString(Formatting.None));
        }
    }
}
