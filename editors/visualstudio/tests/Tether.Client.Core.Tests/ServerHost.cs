using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Linq;
using NUnit.Framework;

namespace Tether.Client.Core.Tests
{
    /// <summary>
    /// How the server under test sees this machine. Natively (the default) it is a Linux program
    /// and every path is given as it is. Under Wine (<c>TETHER_VS_WINE</c> names the Wine loader;
    /// tests/wine/visualstudio.sh sets it, with <c>TETHER_BIN</c> a wrapper that runs
    /// <c>tether.exe</c> under that loader and <c>WINEPREFIX</c> the suite's prefix) the server is
    /// a Windows program: every path it is given (the workspace, the cache, the agent's command,
    /// scripts, log files, the runtime folder) is the Windows path of Wine's drive Z:, which maps
    /// the Unix root in every Wine prefix (<c>dosdevices/z:</c> → <c>/</c>), and a process it names
    /// by pid is a Windows process, ended with Wine's <c>taskkill /F</c> (TerminateProcess).
    /// </summary>
    public static class ServerHost
    {
        /// <summary>The Wine loader (<c>$TETHER_VS_WINE</c>), or null when the server runs natively.</summary>
        public static readonly string WineLoader = NullIfEmpty(Environment.GetEnvironmentVariable("TETHER_VS_WINE"));

        /// <summary>Whether the server under test is <c>tether.exe</c> under Wine.</summary>
        public static bool UnderWine
        {
            get { return WineLoader != null; }
        }

        /// <summary>
        /// <paramref name="local"/> (an absolute Unix path of this machine) as the server sees it:
        /// itself natively, <c>Z:\a\b</c> for <c>/a/b</c> under Wine.
        /// </summary>
        public static string ServerPath(string local)
        {
            if (!UnderWine) return local;
            if (!local.StartsWith("/", StringComparison.Ordinal)) throw new ArgumentException("not an absolute Unix path: " + local, "local");
            return "Z:" + local.Replace('/', '\\');
        }

        /// <summary>Ends the server-side process <paramref name="pid"/> at once: SIGKILL natively, TerminateProcess (<c>taskkill /F</c>) under Wine.</summary>
        public static void Kill(int pid)
        {
            var psi = UnderWine
                ? new ProcessStartInfo(WineLoader, "taskkill.exe /F /PID " + pid)
                : new ProcessStartInfo("kill", "-KILL " + pid);
            psi.UseShellExecute = false;
            using (var p = Process.Start(psi))
            {
                if (!p.WaitForExit(30000)) Assert.Fail(psi.FileName + " " + psi.Arguments + " did not finish within 30 s");
                Assert.AreEqual(0, p.ExitCode, psi.FileName + " " + psi.Arguments + " failed");
            }
        }

        /// <summary>
        /// The tests the run was told not to run (<c>$TETHER_VS_GAPS</c>: one <c>TestName|reason</c>
        /// a line; tests/wine/visualstudio.sh lists there what Wine cannot provide, prints the list
        /// and checks that exactly these were ignored).
        /// </summary>
        private static readonly Dictionary<string, string> Gaps = (Environment.GetEnvironmentVariable("TETHER_VS_GAPS") ?? "")
            .Split('\n')
            .Select(l => l.Trim())
            .Where(l => l.Length > 0)
            .ToDictionary(l => l.Split('|')[0], l => l.Contains("|") ? l.Substring(l.IndexOf('|') + 1) : "(no reason given)");

        /// <summary>Ignores the current test, with its reason, when <c>$TETHER_VS_GAPS</c> lists it (called by each integration fixture's SetUp).</summary>
        public static void IgnoreIfListedAsGap()
        {
            string reason;
            if (Gaps.TryGetValue(TestContext.CurrentContext.Test.Name, out reason))
            {
                Assert.Ignore("not run" + (UnderWine ? " under Wine" : "") + ": " + reason);
            }
        }

        private static string NullIfEmpty(string s)
        {
            return string.IsNullOrEmpty(s) ? null : s;
        }
    }
}
