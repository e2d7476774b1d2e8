using System.ComponentModel;
using Microsoft.VisualStudio.Shell;
using Tether.Client.Core.Protocol;

namespace Tether.VisualStudio
{
    /// <summary>
    /// Tools › Options › Tether › General (R-UI-5 "Persist session between
    /// restarts", "Encrypt saved session"). Sent to the server as <c>initializationOptions</c>, so a
    /// change takes effect when the server next starts (restart Visual Studio or reload the solution).
    /// </summary>
    public sealed class TetherOptionsPage : DialogPage
    {
        /// <summary>Persist sessions between restarts.</summary>
        [Category("Sessions")]
        [DisplayName("Persist session between restarts")]
        [Description("Save the session (transcript, exec output, diffs, approvals, draft) so it can be resumed after Visual Studio restarts.")]
        [DefaultValue(true)]
        public bool PersistenceEnabled { get; set; } = true;

        /// <summary>Encrypt saved sessions.</summary>
        [Category("Sessions")]
        [DisplayName("Encrypt saved session")]
        [Description("Encrypt saved sessions at rest with a key kept in the operating system's credential store.")]
        [DefaultValue(false)]
        public bool EncryptionEnabled { get; set; }

        /// <summary>Agent command line.</summary>
        [Category("Agent")]
        [DisplayName("Agent command")]
        [Description("The ACP agent to run, e.g. claude-code-acp or \"opencode acp\". Empty: the server's default agent.")]
        [DefaultValue("")]
        public string AgentCommand { get; set; } = "";

        /// <summary>Path of tether.exe.</summary>
        [Category("Server")]
        [DisplayName("Server path")]
        [Description("Full path of tether.exe. Empty: the server bundled with the extension, then PATH.")]
        [DefaultValue("")]
        public string ServerPath { get; set; } = "";

        /// <summary>The settings as Core's <see cref="TetherSettings"/>.</summary>
        internal TetherSettings ToSettings()
        {
            return new TetherSettings
            {
                PersistenceEnabled = PersistenceEnabled,
                EncryptionEnabled = EncryptionEnabled,
                AgentCommand = AgentCommand,
                ServerPath = ServerPath,
            };
        }
    }
}
