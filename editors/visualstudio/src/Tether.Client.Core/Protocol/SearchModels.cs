// Message models of session/search (docs/protocol.md, R-INDEX-8): the request and its answer.
using System.Collections.Generic;
using Newtonsoft.Json;

namespace Tether.Client.Core.Protocol
{
    /// <summary>Params of <c>session/search</c>.</summary>
    public sealed class SearchParams
    {
        /// <summary>The user's words, each taken as plain text (never search syntax).</summary>
        [JsonProperty("query")] public string Query { get; set; }
        /// <summary>Keeps the sessions of this folder; null searches every workspace.</summary>
        [JsonProperty("workspace", NullValueHandling = NullValueHandling.Ignore)] public WorkspaceRef Workspace { get; set; }
        /// <summary>Keeps one agent's sessions (a store's name or a configured agent); null: every agent's.</summary>
        [JsonProperty("agent", NullValueHandling = NullValueHandling.Ignore)] public string Agent { get; set; }
        /// <summary>1 to 500 (the server's default is 50).</summary>
        [JsonProperty("limit", NullValueHandling = NullValueHandling.Ignore)] public int? Limit { get; set; }
        /// <summary><c>rank</c> (best match first, the server's default) or <c>newest</c>.</summary>
        [JsonProperty("order", NullValueHandling = NullValueHandling.Ignore)] public string Order { get; set; }
    }

    /// <summary>One session <c>session/search</c> found.</summary>
    public sealed class SearchHit
    {
        /// <summary>The session (opened with <c>session/resume</c>).</summary>
        [JsonProperty("sessionId")] public string SessionId { get; set; }
        /// <summary>The configured agent whose command names the store's agent, else the store's name; for a cached session the agent it recorded.</summary>
        [JsonProperty("agent")] public string Agent { get; set; }
        /// <summary><c>tether</c> (Tether's cache) or the agent's store (<c>claude</c>, <c>codex</c>, <c>gemini</c>, <c>copilot</c>, <c>opencode</c>).</summary>
        [JsonProperty("source")] public string Source { get; set; }
        /// <summary>Its title, when it has one (redacted).</summary>
        [JsonProperty("title")] public string Title { get; set; }
        /// <summary>The folder the session ran in, when known.</summary>
        [JsonProperty("workspace")] public string Workspace { get; set; }
        /// <summary>RFC 3339 UTC.</summary>
        [JsonProperty("updatedUtc")] public string UpdatedUtc { get; set; }
        /// <summary>About a dozen words around the best match on one line, the matched words between « and », … where text was cut.</summary>
        [JsonProperty("snippet")] public string Snippet { get; set; }
        /// <summary>The session's file in the agent's store, when there is one.</summary>
        [JsonProperty("path")] public string Path { get; set; }
    }

    /// <summary>Result of <c>session/search</c>.</summary>
    public sealed class SearchResult
    {
        /// <summary>The sessions found, in the server's order.</summary>
        [JsonProperty("sessions")] public List<SearchHit> Sessions { get; set; }
        /// <summary>How many sessions the filters kept (how many were searched).</summary>
        [JsonProperty("indexed")] public long Indexed { get; set; }
    }
}
