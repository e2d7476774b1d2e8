using System;
using System.Collections.Generic;
using System.IO;

namespace Tether.Client.Core
{
    /// <summary>
    /// Finds the <c>tether</c> executable (README.md, "Editor set-up": the path from a setting,
    /// else the bundled binary or PATH). A configured path that does not exist is an error,
    /// never silently replaced by another binary.
    /// </summary>
    public static class ServerLocator
    {
        /// <summary>File name of the server: <c>tether.exe</c> on Windows, <c>tether</c> elsewhere.</summary>
        public static string ExecutableName(bool windows)
        {
            return windows ? "tether.exe" : "tether";
        }

        /// <summary>
        /// The server to start: <paramref name="configuredPath"/> when set; else
        /// <c>{bundledDir}/server/{exe}</c> (shipped inside the VSIX); else the first
        /// <c>{dir}/{exe}</c> of <paramref name="pathVariable"/>.
        /// </summary>
        /// <param name="configuredPath">The "Server path" setting, may be empty.</param>
        /// <param name="bundledDir">The extension's install folder, may be null.</param>
        /// <param name="pathVariable">The PATH environment variable, may be null.</param>
        /// <param name="windows">Whether the host is Windows (exe name and PATH separator).</param>
        /// <param name="exists">File existence check (injected for tests).</param>
        /// <exception cref="FileNotFoundException">Nothing found; the message lists every place looked at.</exception>
        public static string Resolve(string configuredPath, string bundledDir, string pathVariable, bool windows, Func<string, bool> exists)
        {
            if (!string.IsNullOrWhiteSpace(configuredPath))
            {
                var p = configuredPath.Trim().Trim('"');
                if (exists(p))
                {
                    return p;
                }
                throw new FileNotFoundException("The Tether server path from the settings does not exist: " + p
                    + ". Fix Tools > Options > Tether > Server path, or clear it to use the bundled server.", p);
            }
            var exe = ExecutableName(windows);
            var looked = new List<string>();
            if (!string.IsNullOrEmpty(bundledDir))
            {
                var bundled = Path.Combine(Path.Combine(bundledDir, "server"), exe);
                looked.Add(bundled);
                if (exists(bundled))
                {
                    return bundled;
                }
            }
            if (!string.IsNullOrEmpty(pathVariable))
            {
                foreach (var dir in pathVariable.Split(windows ? ';' : ':'))
                {
                    var d = dir.Trim().Trim('"');
                    if (d.Length == 0)
                    {
                        continue;
                    }
                    var candidate = Path.Combine(d, exe);
                    looked.Add(candidate);
                    if (exists(candidate))
                    {
                        return candidate;
                    }
                }
            }
            throw new FileNotFoundException("The Tether server (" + exe + ") was not found. Looked in: "
                + (looked.Count == 0 ? "(nowhere: no bundled folder and no PATH)" : string.Join(", ", looked))
                + ". Set Tools > Options > Tether > Server path.", exe);
        }
    }
}
