using System;
using System.Collections.Generic;
using System.Threading;
using System.Threading.Tasks;
using Tether.Client.Core.Protocol;
using Tether.Client.Core.Rpc;
using Tether.Client.Core.Ui;

namespace Tether.Client.Core
{
    // "Show Sessions" (Sessions): the workspace's sessions a page at a time
    // (session/list with all, limit and cursor), and search
    // (session/search, R-INDEX-8). Opening a row is OpenSessionAsync.
    public sealed partial class TetherSessionController
    {
        /// <summary>Sessions a <c>session/search</c> asks for at most (the VS Code extension's, one list's worth).</summary>
        public const int SearchLimit = 50;

        /// <summary>The view model of "Show Sessions".</summary>
        public SessionListView Sessions { get; } = new SessionListView();

        /// <summary>Sessions per <c>session/list</c> page (1 to 1000; 50 unless set).</summary>
        public int SessionPageSize { get; set; } = 50;

        /// <summary>
        /// "Show Sessions": the first page of <c>session/list</c> with <c>all: true</c> (Tether's
        /// cache, the agents' own stores, the running agents' lists) and <c>limit</c>
        /// <see cref="SessionPageSize"/>, shown in <see cref="Sessions"/> (leaving a search); returns its rows.
        /// </summary>
        /// <exception cref="JsonRpcRemoteException">The server refused the list (the view says so too).</exception>
        public async Task<List<SessionRow>> ListSessionsAsync(CancellationToken cancellationToken)
        {
            var ticket = Sessions.BeginList();
            var p = new ListParams { Workspace = workspace, All = true, Limit = SessionPageSize };
            var page = await ListPageAsync(p, ticket, cancellationToken).ConfigureAwait(false);
            Sessions.Listed(ticket, page, false, clock.UtcNow);
            return Sessions.Rows;
        }

        /// <summary>
        /// "Load more": the next page of the list (the last page's <c>nextCursor</c> as <c>cursor</c>,
        /// with the same <c>all</c> and <c>limit</c>), added below the rows shown. Does nothing when
        /// there is no next page (or a search is shown). Returns the rows shown.
        /// </summary>
        /// <exception cref="JsonRpcRemoteException">The server refused the page (the view says so too).</exception>
        public async Task<List<SessionRow>> LoadMoreSessionsAsync(CancellationToken cancellationToken)
        {
            var next = Sessions.BeginMore();
            if (next == null) return Sessions.Rows;
            var p = new ListParams { Workspace = workspace, All = true, Limit = SessionPageSize, Cursor = next.Item1 };
            var page = await ListPageAsync(p, next.Item2, cancellationToken).ConfigureAwait(false);
            Sessions.Listed(next.Item2, page, true, clock.UtcNow);
            return Sessions.Rows;
        }

        /// <summary>
        /// The search box: the workspace's sessions whose title or text holds every word of
        /// <paramref name="query"/> (<c>session/search</c>, best match first, every agent's and
        /// store's), shown in <see cref="Sessions"/> with their snippets. Empty words go back to the
        /// list's first page. A server without <c>session/search</c> (-32601) or a failure is said
        /// in the view (the rows shown stay); an answer a newer search overtook is dropped. Returns the rows shown.
        /// </summary>
        public async Task<List<SessionRow>> SearchSessionsAsync(string query, CancellationToken cancellationToken)
        {
            if (string.IsNullOrWhiteSpace(query)) return await ListSessionsAsync(cancellationToken).ConfigureAwait(false);
            var words = query.Trim();
            var ticket = Sessions.BeginSearch(words);
            log.Write("session/search " + words);
            try
            {
                var p = new SearchParams { Query = words, Workspace = workspace, Limit = SearchLimit };
                var r = ProtocolJson.Read<SearchResult>(await connection.RequestAsync(Methods.Search, ProtocolJson.Write(p), cancellationToken).ConfigureAwait(false));
                Sessions.Searched(ticket, r, clock.UtcNow);
            }
            catch (JsonRpcRemoteException e) when (e.Code == -32601)
            {
                Sessions.Failed(ticket, "Search is not available: this Tether server does not support session/search.");
            }
            catch (Exception e) when (e is JsonRpcRemoteException || e is JsonRpcConnectionClosedException || e is ProtocolException)
            {
                log.Write("session/search failed: " + e.Message);
                var remote = e as JsonRpcRemoteException;
                Sessions.Failed(ticket, "Search failed: " + (remote != null ? remote.RemoteMessage : e.Message));
            }
            return Sessions.Rows;
        }

        private async Task<ListResult> ListPageAsync(ListParams p, int ticket, CancellationToken cancellationToken)
        {
            try
            {
                return ProtocolJson.Read<ListResult>(await connection.RequestAsync(Methods.List, ProtocolJson.Write(p), cancellationToken).ConfigureAwait(false));
            }
            catch (Exception e)
            {
                var remote = e as JsonRpcRemoteException;
                Sessions.Failed(ticket, "The sessions could not be listed: " + (remote != null ? remote.RemoteMessage : e.Message));
                throw;
            }
        }
    }
}
