using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.IO;
using System.Linq;
using System.Text;
using System.Threading;
using System.Threading.Tasks;
using Newtonsoft.Json.Linq;
using NUnit.Framework;
using Tether.Client.Core.Protocol;
using Tether.Client.Core.Rpc;

namespace Tether.Client.Core.Tests
{
    /// <summary>Where the real binaries are: env overrides, else the repository's target/debug.</summary>
    public static class Binaries
    {
        /// <summary>The repository root: $TETHER_REPO, else the first ancestor of the test assembly holding Cargo.toml and editors/.</summary>
        public static string RepoRoot()
        {
            var env = Environment.GetEnvironmentVariable("TETHER_REPO");
            if (!string.IsNullOrEmpty(env)) return Path.GetFullPath(env);
            var dir = new DirectoryInfo(Path.GetDirectoryName(typeof(Binaries).Assembly.Location));
            while (dir != null)
            {
                if (File.Exists(Path.Combine(dir.FullName, "Cargo.toml")) && Directory.Exists(Path.Combine(dir.FullName, "editors")))
                {
                    return dir.FullName;
                }
                dir = dir.Parent;
            }
            Assert.Fail("cannot find the repository root above " + typeof(Binaries).Assembly.Location + "; set TETHER_REPO");
            return null;
        }

        /// <summary>The path from <paramref name="envVar"/>, else repo/target/debug/<paramref name="name"/>; fails the test naming the binary when it does not exist.</summary>
        public static string Require(string envVar, string name, string buildHint)
        {
            var path = Environment.GetEnvironmentVariable(envVar);
            if (string.IsNullOrEmpty(path))
            {
                path = Path.Combine(RepoRoot(), "target", "debug", name);
            }
            if (!File.Exists(path))
            {
                Assert.Fail("missing binary " + name + ": " + path + " does not exist (" + buildHint + ", or set " + envVar + ")");
            }
            return path;
        }

        /// <summary>The <c>tether</c> server binary ($TETHER_BIN).</summary>
        public static string Tether()
        {
            return Require("TETHER_BIN", "tether", "build it with `cargo build -p tether`");
        }

        /// <summary>The scripted ACP agent ($TETHER_SCRIPTED_AGENT).</summary>
        public static string ScriptedAgent()
        {
            return Require("TETHER_SCRIPTED_AGENT", "tether-scripted-agent", "build it with `cargo build -p tether-host --bins`");
        }
    }

    /// <summary>
    /// <c>tether serve --stdio</c> as a child process, spoken to over its stdio with
    /// <see cref="JsonRpcConnection"/>. Its stderr is drained into memory and shown by failing tests.
    /// </summary>
    public sealed class ServerProcess : IDisposable
    {
        public static readonly TimeSpan Timeout = TimeSpan.FromSeconds(30);

        private readonly Process process;
        private readonly StringBuilder stderr = new StringBuilder();
        public readonly JsonRpcConnection Rpc;
        public readonly ListLog Log = new ListLog();
        public readonly List<JObject> Notifications = new List<JObject>();
        public readonly string LogFile;

        /// <summary>
        /// Starts <c>tether serve --stdio</c>: in-process (<paramref name="remote"/> <c>off</c>), or
        /// <c>auto</c>, forwarding to the per-user daemon found (or started) in
        /// <paramref name="runtimeDir"/> (a private <c>TETHER_RUNTIME_DIR</c>, so the test's daemon is its own).
        /// <paramref name="logFile"/> and <paramref name="runtimeDir"/> are local paths, given to the
        /// server as it sees them (<see cref="ServerHost.ServerPath"/>); <paramref name="env"/> is given as it is.
        /// </summary>
        public ServerProcess(string tetherBin, string logFile, string remote = "off", string runtimeDir = null, IDictionary<string, string> env = null)
        {
            LogFile = logFile;
            var psi = new ProcessStartInfo(tetherBin, "serve --stdio --remote=" + remote + " --log-file \"" + ServerHost.ServerPath(logFile) + "\"")
            {
                UseShellExecute = false,
                RedirectStandardInput = true,
                RedirectStandardOutput = true,
                RedirectStandardError = true,
                CreateNoWindow = true,
            };
            psi.EnvironmentVariables["RUST_BACKTRACE"] = "1";
            if (runtimeDir != null) psi.EnvironmentVariables["TETHER_RUNTIME_DIR"] = ServerHost.ServerPath(runtimeDir);
            if (env != null) foreach (var kv in env) psi.EnvironmentVariables[kv.Key] = kv.Value;
            process = Process.Start(psi);
            process.ErrorDataReceived += (s, e) => { if (e.Data != null) lock (stderr) stderr.AppendLine(e.Data); };
            process.BeginErrorReadLine();
            Rpc = new JsonRpcConnection(process.StandardOutput.BaseStream, process.StandardInput.BaseStream, Log);
            Rpc.UnhandledNotification = (m, p) => Record(m, p);
        }

        /// <summary>Records a notification (for assertions) — the controller's handlers call this too.</summary>
        public void Record(string method, JToken parameters)
        {
            lock (Notifications) Notifications.Add(new JObject(new JProperty("method", method), new JProperty("params", parameters)));
        }

        public List<JToken> Received(string method)
        {
            lock (Notifications) return Notifications.Where(n => (string)n["method"] == method).Select(n => n["params"]).ToList();
        }

        /// <summary>What the server said on stderr and in its log file, the client's log, and its exit state: for failure messages.</summary>
        public string Diagnostics()
        {
            string err;
            lock (stderr) err = stderr.ToString();
            string file = "";
            try
            {
                if (File.Exists(LogFile)) file = File.ReadAllText(LogFile);
            }
            catch (IOException)
            {
            }
            return "\n--- server stderr ---\n" + Tail(err) + "\n--- server log file ---\n" + Tail(file)
                + "\n--- client log ---\n" + Log + "\n--- exited: " + (process.HasExited ? "yes, code " + process.ExitCode : "no") + " ---";
        }

        private static string Tail(string s)
        {
            return s.Length <= 6000 ? s : "…" + s.Substring(s.Length - 6000);
        }

        /// <summary>Waits for <paramref name="task"/>; fails with the server's diagnostics on timeout or error.</summary>
        public T Await<T>(Task<T> task, string what)
        {
            try
            {
                if (!task.Wait(Timeout))
                {
                    Assert.Fail(what + " did not complete within " + Timeout.TotalSeconds + " s" + Diagnostics());
                }
            }
            catch (AggregateException e)
            {
                Assert.Fail(what + " failed: " + e.InnerException + Diagnostics());
            }
            return task.Result;
        }

        /// <summary>LSP <c>initialize</c> with the Tether capability and the given options, then <c>initialized</c>; <paramref name="rootPath"/> as the server sees it.</summary>
        public JToken Initialize(string rootPath, JObject initializationOptions)
        {
            Rpc.Start();
            var init = new JObject(
                new JProperty("processId", Process.GetCurrentProcess().Id),
                new JProperty("clientInfo", new JObject(new JProperty("name", "Tether.Client.Core.Tests"))),
                new JProperty("rootUri", new Uri(rootPath).AbsoluteUri),
                new JProperty("capabilities", new JObject()),
                new JProperty("initializationOptions", initializationOptions));
            TetherCapabilities.AddTo(init);
            var result = Await(Rpc.RequestAsync("initialize", init, CancellationToken.None), "initialize");
            Rpc.NotifyAsync("initialized", new JObject()).Wait();
            return result;
        }

        /// <summary>LSP <c>shutdown</c> then <c>exit</c>, then the end of its input; waits for the process, kills it if it does not go.</summary>
        public void Shutdown()
        {
            if (process.HasExited) return;
            try
            {
                var t = Rpc.RequestAsync("shutdown", null, CancellationToken.None);
                t.Wait(Timeout);
                Rpc.NotifyAsync("exit", null).Wait();
                // The editor is done with the server: its input ends too. tether.exe reads its
                // stdin on a blocking thread, which only the end of input frees: without it the
                // process lingers the 2 s its runtime waits for that thread (cli/serve.rs).
                process.StandardInput.Close();
            }
            catch (Exception e)
            {
                Log.Write("shutdown: " + e.Message);
            }
            if (!process.WaitForExit((int)Timeout.TotalMilliseconds))
            {
                Log.Write("server did not exit after shutdown/exit; killing it");
                process.Kill();
            }
        }

        /// <summary>Kills the process at once (an editor that crashed or was closed without LSP shutdown).</summary>
        public void Kill()
        {
            if (!process.HasExited)
            {
                process.Kill();
                process.WaitForExit(10000);
            }
        }

        public bool HasExited
        {
            get { return process.HasExited; }
        }

        public int ExitCode
        {
            get { return process.ExitCode; }
        }

        public void Dispose()
        {
            try
            {
                if (!process.HasExited)
                {
                    process.Kill();
                    process.WaitForExit(5000);
                }
            }
            catch (InvalidOperationException)
            {
            }
            Rpc.Dispose();
            process.Dispose();
        }
    }
}
