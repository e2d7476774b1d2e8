using System;
using System.Collections.Generic;
using System.Globalization;
using System.Linq;
using Tether.Client.Core.Protocol;

namespace Tether.Client.Core.Ui
{
    /// <summary>One row of "Tether: Show Sessions".</summary>
    public sealed class SessionRow
    {
        /// <summary>The session to open (<c>session/resume</c> with this id).</summary>
        public string SessionId { get; set; }
        /// <summary>Its title, else its first prompt, else "Session 1f3a9c2e…".</summary>
        public string Label { get; set; }
        /// <summary>
        /// The agent, and where the entry comes from: "scripted · Tether's cache", "claude · Claude
        /// Code's own store", "codex · listed by the running agent"; for a session another of the
        /// user's machines pushed last, then " · from ada-laptop, 5 min ago" (R-SYNC-1). A search
        /// hit ends with when it was updated instead.
        /// </summary>
        public string Description { get; set; }
        /// <summary>"updated 5 min ago · 12 turns · live, 1 editor · &lt;id&gt;" (and the file for an agent's own store); for a search hit, its snippet without the match marks.</summary>
        public string Detail { get; set; }
        /// <summary>The entry's <c>source</c> (null for Tether's cache).</summary>
        public string Source { get; set; }
        /// <summary>The other machine of the user's that pushed the session's turns last (<c>fromMachine</c>), or null for this machine's.</summary>
        public string FromMachine { get; set; }
        /// <summary>A search hit's snippet as the server sent it, the matched words between « and » (for highlighting); null for a listed session.</summary>
        public string Snippet { get; set; }
    }

    /// <summary><c>session/list</c> and <c>session/search</c> → the rows of "Show Sessions", in the server's order. Pure.</summary>
    public static class SessionRows
    {
        /// <summary>The rows; entries without a session id are left out.</summary>
        public static List<SessionRow> From(ListResult result, DateTimeOffset now)
        {
            var rows = new List<SessionRow>();
            if (result == null || result.Sessions == null) return rows;
            foreach (var s in result.Sessions.Where(s => s != null && !string.IsNullOrEmpty(s.SessionId)))
            {
                var title = !string.IsNullOrWhiteSpace(s.Title) ? s.Title : s.FirstPrompt;
                var detail = new List<string> { "updated " + Ago(s.UpdatedUtc, now) };
                if (s.Source == null) detail.Add(s.TurnCount + " turn" + (s.TurnCount == 1 ? "" : "s"));
                if (s.Live) detail.Add((s.TurnRunning ? "live, a turn runs" : "live") + ", " + s.Clients + (s.Clients == 1 ? " editor" : " editors"));
                detail.Add(s.SessionId);
                if (!string.IsNullOrEmpty(s.Path)) detail.Add(s.Path);
                var from = FromMachineText(s.FromMachine, s.FromMachineAt, now);
                rows.Add(new SessionRow
                {
                    SessionId = s.SessionId,
                    Label = string.IsNullOrWhiteSpace(title) ? "Session " + StatusText.ShortId(s.SessionId) : OneLine(title, 80),
                    Description = (string.IsNullOrEmpty(s.Agent) ? "unknown agent" : s.Agent) + " \u00b7 " + SourceName(s.Source) + (from != null ? " \u00b7 " + from : ""),
                    Detail = string.Join(" \u00b7 ", detail),
                    Source = s.Source,
                    FromMachine = from != null ? s.FromMachine : null,
                });
            }
            return rows;
        }

        /// <summary>
        /// "from ada-laptop, 5 min ago": which other machine of the user's pushed a session's turns
        /// last (<c>fromMachine</c>) and when (<c>fromMachineAt</c>, left out when absent); null
        /// for a session of this machine (no <c>fromMachine</c>).
        /// </summary>
        public static string FromMachineText(string machine, string at, DateTimeOffset now)
        {
            if (string.IsNullOrWhiteSpace(machine)) return null;
            return "from " + OneLine(machine, 60) + (string.IsNullOrEmpty(at) ? "" : ", " + Ago(at, now));
        }

        /// <summary>
        /// The rows of a <c>session/search</c> answer (R-INDEX-8), in the server's order (best match
        /// first), across agents and stores: the title (else "Session 1f3a9c2e…"); the agent, where
        /// it was found and when it was updated; the snippet around the match as the detail (its «
        /// and » marks dropped, one line), and as the server sent it in <see cref="SessionRow.Snippet"/>.
        /// Entries without a session id are left out.
        /// </summary>
        public static List<SessionRow> FromSearch(SearchResult result, DateTimeOffset now)
        {
            var rows = new List<SessionRow>();
            if (result == null || result.Sessions == null) return rows;
            foreach (var h in result.Sessions.Where(h => h != null && !string.IsNullOrEmpty(h.SessionId)))
            {
                // "tether" is the cache: the list's null source.
                var source = h.Source == "tether" ? null : h.Source;
                rows.Add(new SessionRow
                {
                    SessionId = h.SessionId,
                    Label = string.IsNullOrWhiteSpace(h.Title) ? "Session " + StatusText.ShortId(h.SessionId) : OneLine(h.Title, 80),
                    Description = (string.IsNullOrEmpty(h.Agent) ? "unknown agent" : h.Agent) + " \u00b7 " + SourceName(source) + " \u00b7 updated " + Ago(h.UpdatedUtc, now),
                    Detail = string.IsNullOrEmpty(h.Snippet) ? "" : OneLine(h.Snippet.Replace("\u00ab", "").Replace("\u00bb", ""), 200),
                    Source = source,
                    Snippet = h.Snippet,
                });
            }
            return rows;
        }

        /// <summary>Where an entry comes from, in words (R-HIST-1, R-HIST-7).</summary>
        public static string SourceName(string source)
        {
            if (source == null) return "Tether's cache";
            if (source == "acp") return "listed by the running agent";
            return AgentName(source) + "'s own store";
        }

        /// <summary>The product name of an agent store (<c>claude</c> → "Claude Code"; an unknown one as it is).</summary>
        public static string AgentName(string store)
        {
            switch (store)
            {
                case "claude": return "Claude Code";
                case "codex": return "Codex";
                case "gemini": return "Gemini CLI";
                case "copilot": return "Copilot CLI";
                default: return store;
            }
        }

        /// <summary>"just now", "5 min ago", "3 h ago", "2 days ago", else the date (yyyy-MM-dd).</summary>
        public static string Ago(string utc, DateTimeOffset now)
        {
            DateTimeOffset t;
            if (!DateTimeOffset.TryParse(utc, CultureInfo.InvariantCulture, DateTimeStyles.AssumeUniversal, out t)) return string.IsNullOrEmpty(utc) ? "at an unknown time" : utc;
            var s = Math.Max(0, (long)Math.Round((now - t).TotalSeconds));
            if (s < 60) return "just now";
            if (s < 3600) return s / 60 + " min ago";
            if (s < 86400) return s / 3600 + " h ago";
            if (s < 7 * 86400) return s / 86400 + (s / 86400 == 1 ? " day ago" : " days ago");
            return t.UtcDateTime.ToString("yyyy-MM-dd", CultureInfo.InvariantCulture);
        }

        private static string OneLine(string text, int max)
        {
            var line = string.Join(" ", text.Split((char[])null, StringSplitOptions.RemoveEmptyEntries));
            return line.Length > max ? line.Substring(0, max - 1) + "\u2026" : line;
        }

        /// <summary>The rows as text, one line per row ("label — description — detail"), for the tests' renderer.</summary>
        public static string Render(IEnumerable<SessionRow> rows)
        {
            return string.Concat(rows.Select(r => r.Label + " \u2014 " + r.Description + " \u2014 " + r.Detail + "\n"));
        }
    }
}
