using System;
using System.Collections.Generic;
using System.Globalization;
using System.Linq;
using Newtonsoft.Json.Linq;
using Tether.Client.Core.Protocol;

namespace Tether.Client.Core.Ui
{
    /// <summary>
    /// The snapshot the shim persists: the cached snapshot from <c>session/restored</c>, plus the
    /// text the agent streams afterwards (ACP <c>user_message_chunk</c> / <c>agent_message_chunk</c>
    /// appended to the last turn of that role while it is open, else a new turn). Replayed updates
    /// (<c>replay: true</c>, a <c>session/load</c> re-sending history) are ignored when a cached
    /// snapshot with turns was restored, since that snapshot already holds them, and appended
    /// otherwise (a load that replays into an empty view). Other sections of the restored
    /// snapshot pass through unchanged. Thread-safe.
    /// </summary>
    public sealed class SessionTranscript
    {
        private readonly object gate = new object();
        private readonly IClock clock;
        private SessionSnapshot snapshot;
        private bool restoredHadTurns;
        private int counter;

        /// <summary>Creates an empty transcript for a workspace.</summary>
        public SessionTranscript(string workingDir, IClock clock)
        {
            this.clock = clock ?? SystemClock.Instance;
            snapshot = SessionSnapshot.Empty(workingDir);
        }

        /// <summary>Replaces the view with the restored (stale) snapshot.</summary>
        public void OnRestored(Restored restored)
        {
            lock (gate)
            {
                if (restored.Snapshot != null)
                {
                    snapshot = restored.Snapshot;
                    if (snapshot.ChatTurns == null) snapshot.ChatTurns = new List<ChatTurn>();
                    restoredHadTurns = snapshot.ChatTurns.Count > 0;
                }
            }
        }

        /// <summary>A new session replaced the old one (<c>session/expired</c>): the view starts empty.</summary>
        public void Reset(string workingDir)
        {
            lock (gate)
            {
                snapshot = SessionSnapshot.Empty(workingDir);
                restoredHadTurns = false;
            }
        }

        /// <summary>
        /// Applies a <c>session/update</c> params object (<c>{sessionId, update, replay}</c>).
        /// Returns true when the view changed. Unknown update kinds are ignored.
        /// </summary>
        public bool OnUpdate(JToken parameters)
        {
            var p = parameters as JObject;
            if (p == null) return false;
            var replay = p["replay"];
            var update = p["update"] as JObject;
            if (update == null) return false;
            var kind = update["sessionUpdate"];
            string role;
            if (kind == null || kind.Type != JTokenType.String) return false;
            switch ((string)kind)
            {
                case "user_message_chunk": role = "user"; break;
                case "agent_message_chunk": role = "assistant"; break;
                default: return false;
            }
            var content = update["content"] as JObject;
            var text = content != null ? content["text"] : null;
            if (text == null || text.Type != JTokenType.String) return false;
            lock (gate)
            {
                if (replay != null && replay.Type == JTokenType.Boolean && (bool)replay && restoredHadTurns)
                {
                    return false;
                }
                var last = snapshot.ChatTurns.LastOrDefault();
                if (last != null && last.Role == role && !last.Complete)
                {
                    last.Text += (string)text;
                }
                else
                {
                    if (last != null) last.Complete = true;
                    snapshot.ChatTurns.Add(new ChatTurn
                    {
                        Id = "vs-" + (++counter).ToString(CultureInfo.InvariantCulture),
                        Role = role,
                        Text = (string)text,
                        TimestampUtc = clock.UtcNow.UtcDateTime.ToString("yyyy-MM-dd'T'HH:mm:ss.fff'Z'", CultureInfo.InvariantCulture),
                        Complete = false,
                    });
                }
                return true;
            }
        }

        /// <summary>
        /// The user sent a prompt through this client: a complete user turn (agents do not echo a
        /// live prompt back as <c>user_message_chunk</c>, so without this the persisted snapshot
        /// would hold the agent's answers only).
        /// </summary>
        public void AddUserTurn(string text)
        {
            lock (gate)
            {
                var last = snapshot.ChatTurns.LastOrDefault();
                if (last != null) last.Complete = true;
                snapshot.ChatTurns.Add(new ChatTurn
                {
                    Id = "vs-" + (++counter).ToString(CultureInfo.InvariantCulture),
                    Role = "user",
                    Text = text ?? "",
                    TimestampUtc = clock.UtcNow.UtcDateTime.ToString("yyyy-MM-dd'T'HH:mm:ss.fff'Z'", CultureInfo.InvariantCulture),
                    Complete = true,
                });
            }
        }

        /// <summary>A prompt turn ended (stop reason received): the open turn is complete.</summary>
        public void CompleteTurn()
        {
            lock (gate)
            {
                var last = snapshot.ChatTurns.LastOrDefault();
                if (last != null) last.Complete = true;
            }
        }

        /// <summary>A deep copy of the current view, safe to serialize on another thread.</summary>
        public SessionSnapshot ToSnapshot()
        {
            lock (gate)
            {
                return ProtocolJson.Read<SessionSnapshot>(ProtocolJson.Write(snapshot));
            }
        }
    }
}
