using System;
using System.Runtime.InteropServices;
using Microsoft.VisualStudio.Shell;

namespace Tether.VisualStudio
{
    /// <summary>
    /// "Tether" tool window (View › Other Windows, or Tools › Tether: Open Session Window): hosts
    /// <see cref="SessionToolWindowControl"/>, which binds Core's conversation view model.
    /// </summary>
    [Guid(PackageIds.ToolWindowGuidString)]
    public sealed class SessionToolWindow : ToolWindowPane
    {
        /// <summary>Creates the pane and its control.</summary>
        public SessionToolWindow() : base(null)
        {
            Caption = "Tether";
            Content = new SessionToolWindowControl();
        }

        /// <summary>The WPF control.</summary>
        internal SessionToolWindowControl Control
        {
            get { return (SessionToolWindowControl)Content; }
        }
    }
}
