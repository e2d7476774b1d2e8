using System;
using System.Collections.Generic;
using System.Linq;
using System.Text;
using Tether.Client.Core.Protocol;

namespace Tether.Client.Core.Ui
{
    /// <summary>
    /// The view model of "Show Sessions": the workspace's sessions a page at a time
    /// (<c>session/list</c> with <c>limit</c>; "Load more" sends the answer's <c>nextCursor</c>
    /// back), or, while the search box holds words, the sessions <c>session/search</c> found with
    /// their snippets, across agents. The server pages and ranks; this keeps the rows of the last
    /// answer asked for and drops any answer that a newer request made stale (a search typed on
    /// while an earlier one was out). <see cref="TetherSessionController"/> feeds it; the window
    /// binds it. Thread-safe: one lock; readers get copies; <see cref="Changed"/> is raised after
    /// each change, outside the lock.
    /// </summary>
    public sealed class SessionListView
    {
        private readonly object gate = new object();
        private List<SessionRow> rows = new List<SessionRow>();
        private string query;
        private string nextCursor;
        private string message = "";
        private bool loading;
        private int generation;
        private int revision;

        /// <summary>Raised after every change (on the thread that made it; WPF marshals to its dispatcher).</summary>
        public event EventHandler Changed;

        /// <summary>A copy of the rows shown, in the server's order.</summary>
        public List<SessionRow> Rows { get { lock (gate) return rows.ToList(); } }
        /// <summary>The words searched for; null while the list is shown.</summary>
        public string Query { get { lock (gate) return query; } }
        /// <summary>The list's next page exists (the last answer had a <c>nextCursor</c>) and none is being asked for: "Load more" is offered.</summary>
        public bool CanLoadMore { get { lock (gate) return query == null && nextCursor != null && !loading; } }
        /// <summary>A request of this view is out.</summary>
        public bool Loading { get { lock (gate) return loading; } }
        /// <summary>A line under the rows: how many a search found, why a search or a page failed, or that there is nothing; "" when there is nothing to say.</summary>
        public string Message { get { lock (gate) return message; } }
        /// <summary>Increases with every change.</summary>
        public int Revision { get { lock (gate) return revision; } }

        /// <summary>A first page of the list is asked for: the search is left. Returns the request's ticket for <see cref="Listed"/>.</summary>
        public int BeginList()
        {
            int ticket = 0;
            Change(() =>
            {
                ticket = ++generation;
                query = null;
                loading = true;
            });
            return ticket;
        }

        /// <summary>The list's next page is asked for: the cursor to send and the request's ticket, or null when there is no next page (or a request is out).</summary>
        public Tuple<string, int> BeginMore()
        {
            Tuple<string, int> next = null;
            Change(() =>
            {
                if (query != null || nextCursor == null || loading) return;
                next = Tuple.Create(nextCursor, ++generation);
                loading = true;
            });
            return next;
        }

        /// <summary>A search for <paramref name="words"/> is asked for. Returns the request's ticket for <see cref="Searched"/>.</summary>
        public int BeginSearch(string words)
        {
            int ticket = 0;
            Change(() =>
            {
                ticket = ++generation;
                query = words;
                loading = true;
            });
            return ticket;
        }

        /// <summary>A <c>session/list</c> page arrived (<paramref name="more"/>: it follows the rows shown); dropped when a newer request was made since.</summary>
        public void Listed(int ticket, ListResult page, bool more, DateTimeOffset now)
        {
            Change(() =>
            {
                if (ticket != generation) return;
                loading = false;
                var added = SessionRows.From(page, now);
                // A session updated in the same millisecond may come on two pages (docs/protocol.md, Paging): once here.
                rows = more ? rows.Concat(added.Where(r => rows.All(o => o.SessionId != r.SessionId))).ToList() : added;
                nextCursor = page != null && !string.IsNullOrEmpty(page.NextCursor) ? page.NextCursor : null;
                message = rows.Count == 0 ? "No saved sessions of this workspace yet." : "";
            });
        }

        /// <summary>A <c>session/search</c> answer arrived; dropped when a newer request was made since.</summary>
        public void Searched(int ticket, SearchResult result, DateTimeOffset now)
        {
            Change(() =>
            {
                if (ticket != generation) return;
                loading = false;
                rows = SessionRows.FromSearch(result, now);
                var searched = result != null ? result.Indexed : 0;
                message = rows.Count == 0
                    ? "No session matches \u201c" + query + "\u201d (" + Count(searched) + " searched)."
                    : Count(rows.Count) + (rows.Count == 1 ? " matches" : " match") + " \u201c" + query + "\u201d (" + Count(searched) + " searched).";
            });
        }

        /// <summary>The request with <paramref name="ticket"/> failed: <paramref name="why"/> is said under the rows, which stay; dropped when a newer request was made since.</summary>
        public void Failed(int ticket, string why)
        {
            Change(() =>
            {
                if (ticket != generation) return;
                loading = false;
                message = why;
            });
        }

        /// <summary>The view as text, as the window lays it out: the search line, one line per row (label — description — detail), "Load more", the message.</summary>
        public string Render()
        {
            List<SessionRow> r;
            string q, m;
            bool more;
            lock (gate)
            {
                r = rows.ToList();
                q = query;
                m = message;
                more = query == null && nextCursor != null && !loading;
            }
            var sb = new StringBuilder();
            sb.Append(q == null ? "Sessions of this workspace:\n" : "Search: " + q + "\n");
            sb.Append(SessionRows.Render(r));
            if (more) sb.Append("[Load more sessions]\n");
            if (!string.IsNullOrEmpty(m)) sb.Append(m).Append('\n');
            return sb.ToString();
        }

        private static string Count(long n)
        {
            return n + (n == 1 ? " session" : " sessions");
        }

        private void Change(Action a)
        {
            lock (gate)
            {
                a();
                revision++;
            }
            var h = Changed;
            if (h != null) h(this, EventArgs.Empty);
        }
    }
}
