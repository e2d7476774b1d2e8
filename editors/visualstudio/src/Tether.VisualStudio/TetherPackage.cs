using System;
using System.ComponentModel.Design;
using System.Runtime.InteropServices;
using System.Threading;
using Microsoft.VisualStudio.ComponentModelHost;
using Microsoft.VisualStudio.Shell;
using Microsoft.VisualStudio.Shell.Interop;
using Tether.Client.Core;
using Tether.Client.Core.Protocol;
using Task = System.Threading.Tasks.Task;

namespace Tether.VisualStudio
{
    /// <summary>
    /// The package: loads in the background when a solution opens, registers the three commands
    /// and the options page, owns the output pane and the UI renderer, and sends the
    /// <c>shutdown</c> persist when Visual Studio closes (<see cref="QueryClose"/>).
    /// </summary>
    [PackageRegistration(UseManagedResourcesOnly = true, AllowsBackgroundLoading = true)]
    [InstalledProductRegistration("Tether", "Keeps AI coding agent sessions alive.", "0.1.0")]
    [ProvideMenuResource("Menus.ctmenu", 1)]
    [ProvideOptionPage(typeof(TetherOptionsPage), "Tether", "General", 0, 0, true)]
    [ProvideAutoLoad(UIContextGuids80.SolutionExists, PackageAutoLoadFlags.BackgroundLoad)]
    [ProvideToolWindow(typeof(SessionToolWindow), Style = VsDockStyle.Tabbed, Window = "DocumentWell", Orientation = ToolWindowOrientation.Right)]
    [Guid(PackageIds.PackageGuidString)]
    public sealed class TetherPackage : AsyncPackage
    {
        /// <summary>How long closing Visual Studio may wait for the shutdown persist (it is written durably before the server replies).</summary>
        private static readonly TimeSpan ShutdownPersistBudget = TimeSpan.FromSeconds(3);

        private static TetherPackage instance;

        internal static TetherPackage Instance
        {
            get { return Volatile.Read(ref instance); }
        }

        internal OutputPaneLog Log { get; private set; }

        internal VsTetherUi Ui { get; private set; }

        /// <summary>The current settings from Tools › Options › Tether. Main thread only.</summary>
        internal TetherSettings Settings
        {
            get
            {
                ThreadHelper.ThrowIfNotOnUIThread();
                return ((TetherOptionsPage)GetDialogPage(typeof(TetherOptionsPage))).ToSettings();
            }
        }

        protected override async Task InitializeAsync(CancellationToken cancellationToken, IProgress<ServiceProgressData> progress)
        {
            await JoinableTaskFactory.SwitchToMainThreadAsync(cancellationToken);
            Log = OutputPaneLog.Create(this);
            Ui = new VsTetherUi(this, Log);
            Ui.InfoBarAction += id => RunCommand("Recovery", c => c.OnInfoBarActionAsync(id));
            Volatile.Write(ref instance, this);

            var commands = (OleMenuCommandService)await GetServiceAsync(typeof(IMenuCommandService));
            if (commands != null)
            {
                commands.AddCommand(new MenuCommand((s, e) => RunCommand("Resume", c => c.ResumeFromCommandAsync()),
                    new CommandID(PackageIds.CommandSet, PackageIds.ResumeSession)));
                commands.AddCommand(new MenuCommand((s, e) => RunCommand("Clear Saved Session", c => c.ClearSavedSessionAsync()),
                    new CommandID(PackageIds.CommandSet, PackageIds.ClearSavedSession)));
                commands.AddCommand(new MenuCommand((s, e) => { ThreadHelper.ThrowIfNotOnUIThread(); Log.Show(); },
                    new CommandID(PackageIds.CommandSet, PackageIds.ShowLogs)));
                commands.AddCommand(new MenuCommand((s, e) => JoinableTaskFactory.RunAsync(() => ShowSessionWindowAsync()).FileAndForget("tether/open-window"),
                    new CommandID(PackageIds.CommandSet, PackageIds.OpenSessionWindow)));
            }
            Log.Write("Tether package loaded");
        }

        private void RunCommand(string name, Func<TetherLanguageClient, Task> action)
        {
            JoinableTaskFactory.RunAsync(async () =>
            {
                var client = await GetClientAsync();
                if (client == null || !client.IsAttached)
                {
                    Ui.Apply(new Tether.Client.Core.Ui.ShowInfo
                    {
                        Severity = Tether.Client.Core.Ui.Severity.Warning,
                        Text = name + ": the Tether server is not running yet.",
                        Detail = "It starts with the first code file you open; see Tether: Show Logs.",
                    });
                    return;
                }
                try
                {
                    await action(client);
                }
                catch (Exception e)
                {
                    Log.Write(name + " failed: " + e);
                    Ui.Apply(TetherSessionController.DescribeFailure(name, e));
                }
            }).FileAndForget("tether/command");
        }

        /// <summary>Shows the Tether tool window, bound to the live controller when the server runs.</summary>
        internal async Task ShowSessionWindowAsync()
        {
            var pane = (SessionToolWindow)await ShowToolWindowAsync(typeof(SessionToolWindow), 0, true, DisposalToken);
            var client = await GetClientAsync();
            await JoinableTaskFactory.SwitchToMainThreadAsync();
            if (client != null && client.Controller != null) pane.Control.Bind(client.Controller);
        }

        /// <summary>The language client attached a controller (the server started or restarted): an open tool window shows it.</summary>
        internal void OnControllerAttached(TetherSessionController controller)
        {
            JoinableTaskFactory.RunAsync(async () =>
            {
                await JoinableTaskFactory.SwitchToMainThreadAsync();
                var pane = (SessionToolWindow)FindToolWindow(typeof(SessionToolWindow), 0, false);
                pane?.Control.Bind(controller);
            }).FileAndForget("tether/bind-window");
        }

        private async System.Threading.Tasks.Task<TetherLanguageClient> GetClientAsync()
        {
            var model = (IComponentModel)await GetServiceAsync(typeof(SComponentModel));
            return model?.GetService<TetherLanguageClient>();
        }

        /// <summary>Visual Studio is closing: the shutdown persist, bounded by <see cref="ShutdownPersistBudget"/>.</summary>
        protected override int QueryClose(out bool canClose)
        {
            canClose = true;
            try
            {
                ThreadHelper.JoinableTaskFactory.Run(async () =>
                {
                    var client = await GetClientAsync();
                    if (client != null && client.IsAttached)
                    {
                        var persist = client.ShutdownPersistAsync();
                        var done = await Task.WhenAny(persist, Task.Delay(ShutdownPersistBudget));
                        if (done != persist)
                        {
                            Log.Write("shutdown persist did not finish within " + ShutdownPersistBudget.TotalSeconds + " s");
                        }
                    }
                });
            }
            catch (Exception e)
            {
                Log?.Write("shutdown persist failed: " + e.Message);
            }
            return base.QueryClose(out canClose);
        }
    }
}
