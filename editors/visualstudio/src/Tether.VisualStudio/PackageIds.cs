using System;

namespace Tether.VisualStudio
{
    /// <summary>GUIDs and command ids; must match TetherCommands.vsct.</summary>
    internal static class PackageIds
    {
        /// <summary>The package.</summary>
        public const string PackageGuidString = "961c4793-cf7a-4bda-a812-56ce48865366";

        /// <summary>The command set of the Tether commands.</summary>
        public const string CommandSetGuidString = "1bb20099-888b-47a8-9803-6393616dc7e6";

        /// <summary>The command set as a Guid.</summary>
        public static readonly Guid CommandSet = new Guid(CommandSetGuidString);

        /// <summary>"Tether: Resume Session".</summary>
        public const int ResumeSession = 0x0100;

        /// <summary>"Tether: Clear Saved Session".</summary>
        public const int ClearSavedSession = 0x0101;

        /// <summary>"Tether: Show Logs".</summary>
        public const int ShowLogs = 0x0102;

        /// <summary>"Tether: Open Session Window".</summary>
        public const int OpenSessionWindow = 0x0103;

        /// <summary>The tool window (<see cref="SessionToolWindow"/>).</summary>
        public const string ToolWindowGuidString = "5f0c8e2a-7b1d-4e6a-9c3f-2d8b7a41e5c6";
    }
}
