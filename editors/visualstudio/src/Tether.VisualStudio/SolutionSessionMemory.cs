using System;
using Microsoft.VisualStudio.Settings;
using Microsoft.VisualStudio.Shell;
using Microsoft.VisualStudio.Shell.Settings;
using Tether.Client.Core;

namespace Tether.VisualStudio
{
    /// <summary>
    /// <see cref="ISessionMemory"/> in Visual Studio's per-user settings store
    /// (<c>ShellSettingsManager</c>, <c>SettingsScope.UserSettings</c>), one value per workspace
    /// root under the collection <c>Tether\Sessions</c>: a restarted Visual Studio resumes the
    /// session its Tether window showed. Failures are logged by Core, never thrown into it.
    /// </summary>
    internal sealed class SolutionSessionMemory : ISessionMemory
    {
        private const string Collection = "Tether\\Sessions";
        private readonly WritableSettingsStore store;
        private readonly string key;

        public SolutionSessionMemory(IServiceProvider services, string workspaceRoot)
        {
            ThreadHelper.ThrowIfNotOnUIThread();
            store = new ShellSettingsManager(services).GetWritableSettingsStore(SettingsScope.UserSettings);
            key = workspaceRoot;
        }

        public string Get()
        {
            return store.CollectionExists(Collection) && store.PropertyExists(Collection, key) ? store.GetString(Collection, key) : null;
        }

        public void Set(string sessionId)
        {
            if (sessionId == null)
            {
                if (store.CollectionExists(Collection) && store.PropertyExists(Collection, key)) store.DeleteProperty(Collection, key);
                return;
            }
            if (!store.CollectionExists(Collection)) store.CreateCollection(Collection);
            store.SetString(Collection, key, sessionId);
        }
    }
}
