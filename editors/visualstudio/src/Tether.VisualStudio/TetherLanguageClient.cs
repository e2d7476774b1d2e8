using System;
using System.Collections.Generic;
using System.ComponentModel.Composition;
using System.Diagnostics;
using System.IO;
using System.Threading;
using System.Threading.Tasks;
using Microsoft.VisualStudio.LanguageServer.Client;
using Microsoft.VisualStudio.Shell;
using Microsoft.VisualStudio.Shell.Interop;
using Microsoft.VisualStudio.Threading;
using Microsoft.VisualStudio.Utilities;
using Newtonsoft.Json.Linq;
using StreamJsonRpc;
using Tether.Client.Core;
using Tether.Client.Core.Protocol;
using Task = System.Threading.Tasks.Task;

namespace Tether.VisualStudio
{
    /// <summary>
    /// Starts <c>tether serve --stdio</c> through Visual Studio's LSP client and connects it to
    /// Core. Exported for the <c>code</c> content type, so the server starts with the first code
    /// file opened in a solution (Visual Studio loads language clients by content type).
    /// <list type="bullet">
    /// <item><see cref="InitializationOptions"/>: the options page as Core's <see cref="InitializationOptions"/>.</item>
    /// <item><see cref="MiddleLayer"/>: declares <c>experimental.tether</c> in <c>initialize</c>.</item>
    /// <item><see cref="CustomMessageTarget"/>: routes <c>session/*</c> and <c>telemetry/event</c> to Core.</item>
    /// <item><see cref="AttachForCustomMessageAsync"/>: gives Core the same JSON-RPC connection for its requests.</item>
    /// </list>
    /// </summary>
    [ContentType("code")]
    [Export(typeof(ILanguageClient))]
    [Export(typeof(TetherLanguageClient))]
    [PartCreationPolicy(CreationPolicy.Shared)]
    public sealed class TetherLanguageClient : ILanguageClient, ILanguageClientCustomMessage2, IDisposable
    {
        private readonly TetherMessageTarget target;
        private TetherMiddleLayer middleLayer;
        private volatile TetherSessionController controller;
        private VsJsonRpcConnection restartedConnection;
        private TetherPackage package;
        private TetherSettings settings;
        private Process server;
        private Timer ticker;

        [ImportingConstructor]
        public TetherLanguageClient()
        {
            target = new TetherMessageTarget(() => controller);
        }

        /// <summary>True once the custom-message connection is attached and Core is wired.</summary>
        internal bool IsAttached
        {
            get { return controller != null; }
        }

        public string Name
        {
            get { return "Tether"; }
        }

        public IEnumerable<string> ConfigurationSections
        {
            get { return null; }
        }

        public object InitializationOptions
        {
            get { return ProtocolJson.Write((settings ?? new TetherSettings()).ToInitializationOptions()); }
        }

        public IEnumerable<string> FilesToWatch
        {
            get { return null; }
        }

        public bool ShowNotificationOnInitializeFailed
        {
            get { return true; }
        }

        public object MiddleLayer
        {
            get { return middleLayer; }
        }

        public object CustomMessageTarget
        {
            get { return target; }
        }

        public event AsyncEventHandler<EventArgs> StartAsync;

#pragma warning disable CS0067 // required by ILanguageClient; Tether never stops its server on its own
        public event AsyncEventHandler<EventArgs> StopAsync;
#pragma warning restore CS0067

        /// <summary>Loads the package (settings, log, UI) and asks Visual Studio to start the server.</summary>
        public async Task OnLoadedAsync()
        {
            await ThreadHelper.JoinableTaskFactory.SwitchToMainThreadAsync();
            var shell = (IVsShell)ServiceProvider.GlobalProvider.GetService(typeof(SVsShell));
            var guid = new Guid(PackageIds.PackageGuidString);
            IVsPackage loaded;
            shell?.LoadPackage(ref guid, out loaded);
            package = TetherPackage.Instance;
            if (package == null)
            {
                return; // the package failed to load; nothing can be rendered, so the server is not started
            }
            settings = package.Settings;
            middleLayer = new TetherMiddleLayer(package.Log);
            if (StartAsync != null)
            {
                await StartAsync.InvokeAsync(this, EventArgs.Empty);
            }
        }

        /// <summary>Starts the server process and returns its stdio as the LSP connection.</summary>
        public async Task<Connection> ActivateAsync(CancellationToken token)
        {
            await TaskScheduler.Default;
            var bundledDir = Path.GetDirectoryName(typeof(TetherLanguageClient).Assembly.Location);
            var exe = ServerLocator.Resolve(settings?.ServerPath, bundledDir, Environment.GetEnvironmentVariable("PATH"), true, File.Exists);
            var logDir = Path.Combine(Environment.GetFolderPath(Environment.SpecialFolder.LocalApplicationData), "Tether", "logs");
            Directory.CreateDirectory(logDir);
            var logFile = Path.Combine(logDir, "visualstudio-serve.log");
            package.Log.ServerLogFile = logFile;
            var psi = new ProcessStartInfo(exe, "serve --stdio --log-file \"" + logFile + "\"")
            {
                UseShellExecute = false,
                RedirectStandardInput = true,
                RedirectStandardOutput = true,
                RedirectStandardError = true,
                CreateNoWindow = true,
            };
            server = Process.Start(psi);
            server.ErrorDataReceived += (s, e) =>
            {
                if (e.Data != null)
                {
                    package.Log.Write("server: " + e.Data);
                }
            };
            server.BeginErrorReadLine();
            package.Log.Write("started " + exe + " (pid " + server.Id + ")");
            return new Connection(server.StandardOutput.BaseStream, server.StandardInput.BaseStream);
        }

        /// <summary>Wires Core to the LSP client's JSON-RPC connection.</summary>
        public async Task AttachForCustomMessageAsync(JsonRpc rpc)
        {
            await ThreadHelper.JoinableTaskFactory.SwitchToMainThreadAsync();
            var connection = new VsJsonRpcConnection(rpc);
            rpc.Disconnected += (s, e) => controller?.ConnectionLost();
            if (controller != null)
            {
                // Visual Studio restarted the server: the same window and conversation go on with
                // the new connection (OnServerInitializedAsync resumes after the last event drawn).
                restartedConnection = connection;
                return;
            }
            var root = WorkspaceRoot();
            controller = new TetherSessionController(connection, package.Ui, root, SystemClock.Instance, package.Log)
            {
                Memory = new SolutionSessionMemory(ServiceProvider.GlobalProvider, root),
            };
            package.OnControllerAttached(controller);
        }

        /// <summary>The controller (null until the server's first start); the tool window binds its view model.</summary>
        internal TetherSessionController Controller
        {
            get { return controller; }
        }

        /// <summary>
        /// The server answered <c>initialize</c>: start the 1 s ticker (rate-limit countdown and the
        /// 30 s timer persist, both decided by Core) and resume the workspace's session.
        /// </summary>
        public Task OnServerInitializedAsync()
        {
            if (middleLayer != null && !middleLayer.SawInitialize)
            {
                package.Log.Write("initialize did not pass through the middle layer: the server will use window/showMessageRequest for the recovery dialog");
            }
            ticker?.Dispose();
            ticker = new Timer(_ => Tick(), null, TimeSpan.FromSeconds(1), TimeSpan.FromSeconds(1));
            var restarted = Interlocked.Exchange(ref restartedConnection, null);
            ThreadHelper.JoinableTaskFactory.RunAsync(async () =>
            {
                try
                {
                    if (restarted != null) await controller.ServerRestartedAsync(restarted, CancellationToken.None);
                    // Only what exists is resumed: opening a solution starts no agent (R-RESUME-11).
                    else await controller.ResumeAtStartupAsync(CancellationToken.None);
                }
                catch (Exception e)
                {
                    package.Log.Write("resume at start failed: " + e);
                    package.Ui.Apply(TetherSessionController.DescribeFailure("Resume", e));
                }
            }).FileAndForget("tether/resume-at-start");
            return Task.CompletedTask;
        }

        public Task<InitializationFailureContext> OnServerInitializeFailedAsync(ILanguageClientInitializationInfo initializationState)
        {
            var message = "Tether server failed to start: " + (initializationState.StatusMessage ?? initializationState.InitializationException?.Message ?? "unknown error")
                + ". See Tether: Show Logs.";
            package?.Log.Write(message);
            return Task.FromResult(new InitializationFailureContext { FailureMessage = message });
        }

        /// <summary>
        /// The older overload (kept on <see cref="ILanguageClient"/> in some SDK versions, where both
        /// must be implemented; harmless where it is not).
        /// </summary>
        public Task OnServerInitializeFailedAsync(Exception e)
        {
            package?.Log.Write("Tether server failed to start: " + e);
            return Task.CompletedTask;
        }

        private void Tick()
        {
            var c = controller;
            if (c == null)
            {
                return;
            }
            c.RefreshCountdown(); // applies the refreshed text itself while a rate-limit wait runs
            c.Persist.TickAsync().FileAndForget("tether/persist-timer");
        }

        /// <summary>"Tether: Resume Session": starts a session when there is none to resume (the resume at start does not).</summary>
        internal Task ResumeFromCommandAsync()
        {
            return controller.ResumeAsync(null, CancellationToken.None);
        }

        /// <summary>"Tether: Clear Saved Session".</summary>
        internal Task ClearSavedSessionAsync()
        {
            return controller.ClearSavedSessionAsync(CancellationToken.None);
        }

        /// <summary>An info bar action was clicked.</summary>
        internal Task OnInfoBarActionAsync(string actionId)
        {
            return controller.OnInfoBarActionAsync(actionId, CancellationToken.None);
        }

        /// <summary>Visual Studio is closing: the <c>shutdown</c> persist.</summary>
        internal Task ShutdownPersistAsync()
        {
            var c = controller;
            return c == null ? Task.CompletedTask : c.ShutdownAsync();
        }

        private static string WorkspaceRoot()
        {
            ThreadHelper.ThrowIfNotOnUIThread();
            var solution = (IVsSolution)ServiceProvider.GlobalProvider.GetService(typeof(SVsSolution));
            string dir = null, file, options;
            if (solution != null)
            {
                solution.GetSolutionInfo(out dir, out file, out options);
            }
            return string.IsNullOrEmpty(dir) ? Environment.CurrentDirectory : Path.GetFullPath(dir);
        }

        public void Dispose()
        {
            ticker?.Dispose();
            try
            {
                if (server != null && !server.HasExited)
                {
                    // Visual Studio sends shutdown/exit first; this only reaps a server that did not go.
                    server.WaitForExit(2000);
                    if (!server.HasExited)
                    {
                        server.Kill();
                    }
                }
            }
            catch (InvalidOperationException)
            {
            }
        }
    }
}
