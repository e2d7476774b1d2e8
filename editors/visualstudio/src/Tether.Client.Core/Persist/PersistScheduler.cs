using System;
using System.Threading.Tasks;
using Tether.Client.Core.Protocol;

namespace Tether.Client.Core.Persist
{
    /// <summary>
    /// The editor's part of the save cadence (R-UI-4, R-STORE-10): a <c>timer</c> persist every 30 s while
    /// a session is active, and a <c>shutdown</c> persist when the extension unloads. Milestone
    /// saves and the 5 s coalescing are the server's (docs/protocol.md, session/persist).
    /// <para>
    /// The scheduler owns no timer: the host calls <see cref="TickAsync"/> periodically (Visual
    /// Studio: once a second from a timer; tests: after moving an injected clock), and the
    /// decision uses only <see cref="IClock"/>. A persist is due when
    /// <c>now ≥ last attempt (or activation) + interval</c>; a failed persist is logged and tried
    /// again one interval later; ticks while a persist is in flight do nothing (never two at once).
    /// Thread-safe.
    /// </para>
    /// </summary>
    public sealed class PersistScheduler
    {
        /// <summary>30 s (R-UI-4: a periodic save every 30 seconds while the session is active).</summary>
        public static readonly TimeSpan DefaultInterval = TimeSpan.FromSeconds(30);

        private readonly object gate = new object();
        private readonly IClock clock;
        private readonly Func<PersistParams, Task<PersistResult>> persist;
        private readonly Func<SessionSnapshot> snapshot;
        private readonly WorkspaceRef workspace;
        private readonly ILog log;
        private readonly TimeSpan interval;
        private string activeSessionId;
        private DateTimeOffset lastAttempt;
        private Task inFlight;

        /// <summary>Creates a scheduler.</summary>
        /// <param name="clock">Time source.</param>
        /// <param name="persist">Sends <c>session/persist</c> and returns its result (throws on failure).</param>
        /// <param name="snapshot">The editor's current view of the session.</param>
        /// <param name="workspace">The workspace sent with every persist.</param>
        /// <param name="log">Diagnostics.</param>
        /// <param name="interval">Timer period; <see cref="DefaultInterval"/> when null. Must be positive.</param>
        public PersistScheduler(IClock clock, Func<PersistParams, Task<PersistResult>> persist, Func<SessionSnapshot> snapshot,
            WorkspaceRef workspace, ILog log, TimeSpan? interval = null)
        {
            if (clock == null) throw new ArgumentNullException("clock");
            if (persist == null) throw new ArgumentNullException("persist");
            if (snapshot == null) throw new ArgumentNullException("snapshot");
            if (workspace == null) throw new ArgumentNullException("workspace");
            this.interval = interval ?? DefaultInterval;
            if (this.interval <= TimeSpan.Zero) throw new ArgumentOutOfRangeException("interval", "must be positive");
            this.clock = clock;
            this.persist = persist;
            this.snapshot = snapshot;
            this.workspace = workspace;
            this.log = log ?? NullLog.Instance;
        }

        /// <summary>The session being saved, or null when none is active.</summary>
        public string ActiveSessionId
        {
            get { lock (gate) { return activeSessionId; } }
        }

        /// <summary>When the next timer persist is due, or null when no session is active.</summary>
        public DateTimeOffset? NextDueUtc
        {
            get { lock (gate) { return activeSessionId == null ? (DateTimeOffset?)null : lastAttempt + interval; } }
        }

        /// <summary>Timer persists that failed (thrown by the persist delegate) since creation.</summary>
        public int FailureCount { get; private set; }

        /// <summary>Timer and shutdown persists sent since creation.</summary>
        public int SentCount { get; private set; }

        /// <summary>
        /// A session became active (resume returned resumed/started): the first timer persist is due
        /// one interval from now. Activating another session switches to it.
        /// </summary>
        public void Activate(string sessionId)
        {
            if (string.IsNullOrEmpty(sessionId)) throw new ArgumentException("session id required", "sessionId");
            lock (gate)
            {
                if (activeSessionId != sessionId)
                {
                    activeSessionId = sessionId;
                    lastAttempt = clock.UtcNow;
                }
            }
        }

        /// <summary>No session is active any more (failed, cleared, or waiting for the user's choice): timer persists stop.</summary>
        public void Deactivate()
        {
            lock (gate)
            {
                activeSessionId = null;
            }
        }

        /// <summary>
        /// Sends a <c>timer</c> persist when one is due; otherwise does nothing and returns null.
        /// Never throws for a failed persist: the failure is logged and counted.
        /// </summary>
        public async Task<PersistResult> TickAsync()
        {
            string sessionId;
            var done = new TaskCompletionSource<bool>();
            lock (gate)
            {
                if (activeSessionId == null || inFlight != null || clock.UtcNow < lastAttempt + interval)
                {
                    return null;
                }
                lastAttempt = clock.UtcNow;
                sessionId = activeSessionId;
                inFlight = done.Task;
            }
            try
            {
                return await Send(sessionId, PersistTriggers.Timer).ConfigureAwait(false);
            }
            catch (Exception e)
            {
                lock (gate)
                {
                    FailureCount++;
                }
                log.Write("persist (timer) failed: " + e.Message);
                return null;
            }
            finally
            {
                lock (gate)
                {
                    inFlight = null;
                }
                done.TrySetResult(true);
            }
        }

        /// <summary>
        /// The extension is unloading: waits for a timer persist in flight, then sends a
        /// <c>shutdown</c> persist of the active session (written durably before the server replies)
        /// and deactivates. Returns null when no session is active. A failure propagates to the
        /// caller, who decides how long to wait at shutdown.
        /// </summary>
        public async Task<PersistResult> ShutdownAsync()
        {
            Task previous;
            string sessionId;
            lock (gate)
            {
                previous = inFlight;
                sessionId = activeSessionId;
                activeSessionId = null;
            }
            if (previous != null)
            {
                // Completes (never faults) when the timer persist in flight has finished, so the
                // shutdown snapshot is the last one the server sees.
                await previous.ConfigureAwait(false);
            }
            if (sessionId == null)
            {
                return null;
            }
            return await Send(sessionId, PersistTriggers.Shutdown).ConfigureAwait(false);
        }

        private Task<PersistResult> Send(string sessionId, string trigger)
        {
            lock (gate)
            {
                SentCount++;
            }
            var p = new PersistParams { SessionId = sessionId, Workspace = workspace, Trigger = trigger, Snapshot = snapshot() };
            return persist(p);
        }
    }
}
