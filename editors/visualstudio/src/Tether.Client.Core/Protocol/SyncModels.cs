// Message models of sessions on every machine (docs/protocol.md, R-SYNC-7): session/continueHere
// and the data of a prompt refused because another machine holds the session.
using Newtonsoft.Json;

namespace Tether.Client.Core.Protocol
{
    /// <summary>Params of <c>session/continueHere</c>.</summary>
    public sealed class ContinueHereParams
    {
        /// <summary>The workspace the session belongs to here.</summary>
        [JsonProperty("workspace")] public WorkspaceRef Workspace { get; set; }
        /// <summary>The session to take over.</summary>
        [JsonProperty("sessionId")] public string SessionId { get; set; }
    }

    /// <summary>Result of <c>session/continueHere</c>.</summary>
    public sealed class ContinueHereResult
    {
        /// <summary>The lease epoch this machine now holds.</summary>
        [JsonProperty("epoch")] public long Epoch { get; set; }
        /// <summary>The machine it was taken from, when one held it.</summary>
        [JsonProperty("takenFrom")] public string TakenFrom { get; set; }
    }

    /// <summary>
    /// The <c>data</c> of a <c>session/prompt</c> refused because another of the user's machines
    /// holds the session: <c>-32803</c> with <c>{kind: "heldElsewhere", machine, untilMs, retryable: false}</c>.
    /// </summary>
    public sealed class HeldElsewhereData
    {
        /// <summary>The error's kind: <c>heldElsewhere</c>.</summary>
        [JsonProperty("kind")] public string Kind { get; set; }
        /// <summary>The machine that holds the session.</summary>
        [JsonProperty("machine")] public string Machine { get; set; }
        /// <summary>When its lease lapses (Unix milliseconds), when given.</summary>
        [JsonProperty("untilMs")] public long? UntilMs { get; set; }
        /// <summary>Whether sending the prompt again could work (false).</summary>
        [JsonProperty("retryable")] public bool Retryable { get; set; }
    }
}
