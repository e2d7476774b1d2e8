using System;
using System.Globalization;
using Microsoft.VisualStudio.Shell;
using Microsoft.VisualStudio.Shell.Interop;
using Tether.Client.Core;

namespace Tether.VisualStudio
{
    /// <summary>The "Tether" pane of the Output window: where Core's log lines go ("Tether: Show Logs" shows it).</summary>
    internal sealed class OutputPaneLog : ILog
    {
        private static readonly Guid PaneGuid = new Guid("5c0f6a3e-2b7d-4e51-9a8c-3f1d2e4b6a70");
        private readonly IVsOutputWindowPane pane;

        private OutputPaneLog(IVsOutputWindowPane pane)
        {
            this.pane = pane;
        }

        /// <summary>Creates (or finds) the pane. Main thread only.</summary>
        public static OutputPaneLog Create(IServiceProvider services)
        {
            ThreadHelper.ThrowIfNotOnUIThread();
            var window = (IVsOutputWindow)services.GetService(typeof(SVsOutputWindow));
            var guid = PaneGuid;
            IVsOutputWindowPane pane = null;
            if (window != null)
            {
                window.CreatePane(ref guid, "Tether", 1, 0);
                window.GetPane(ref guid, out pane);
            }
            return new OutputPaneLog(pane);
        }

        /// <summary>Path of the server's own log file (<c>tether serve --log-file</c>), shown with the logs.</summary>
        public string ServerLogFile { get; set; }

        /// <inheritdoc />
        public void Write(string line)
        {
            // OutputStringThreadSafe may be called from any thread.
            pane?.OutputStringThreadSafe(DateTime.Now.ToString("HH:mm:ss.fff", CultureInfo.InvariantCulture) + "  " + line + Environment.NewLine);
        }

        /// <summary>Brings the pane to the front. Main thread only.</summary>
        public void Show()
        {
            ThreadHelper.ThrowIfNotOnUIThread();
            if (pane == null)
            {
                return;
            }
            if (!string.IsNullOrEmpty(ServerLogFile))
            {
                Write("server log file: " + ServerLogFile);
            }
            pane.Activate();
        }
    }
}
