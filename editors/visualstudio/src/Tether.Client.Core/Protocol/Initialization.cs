using System;
using System.Collections.Generic;
using Newtonsoft.Json;
using Newtonsoft.Json.Linq;

namespace Tether.Client.Core.Protocol
{
    /// <summary>How the server drives an agent (docs/protocol.md, initializationOptions.agents.*.protocol).</summary>
    public static class AgentProtocols
    {
        /// <summary>Agent Client Protocol over the agent's stdio.</summary>
        public const string Acp = "acp";
        /// <summary><c>claude -p --output-format json [--resume ID]</c>, one process per prompt.</summary>
        public const string ClaudePrint = "claudePrint";
    }

    /// <summary>One agent entry of <c>initializationOptions.agents</c>.</summary>
    public sealed class AgentConfig
    {
        /// <summary>Executable (absolute path or a name looked up on PATH by the server).</summary>
        [JsonProperty("command")] public string Command { get; set; }
        /// <summary>Arguments.</summary>
        [JsonProperty("args")] public List<string> Args { get; set; } = new List<string>();
        /// <summary>Extra environment variables, names kept exactly as given.</summary>
        [JsonProperty("env")] public Dictionary<string, string> Env { get; set; } = new Dictionary<string, string>();
        /// <summary><see cref="AgentProtocols.Acp"/> or <see cref="AgentProtocols.ClaudePrint"/>.</summary>
        [JsonProperty("protocol")] public string Protocol { get; set; } = AgentProtocols.Acp;
    }

    /// <summary><c>initializationOptions.storage</c>.</summary>
    public sealed class StorageOptions
    {
        /// <summary>Cache folder; null = the platform's per-user local data folder (then omitted on the wire).</summary>
        [JsonProperty("dir", NullValueHandling = NullValueHandling.Ignore)] public string Dir { get; set; }
        /// <summary>Persist sessions between restarts (R-UI-5 "Persist session between restarts").</summary>
        [JsonProperty("persist")] public bool Persist { get; set; } = true;
        /// <summary>Encrypt saved sessions (R-STORE-6, R-UI-5, default off).</summary>
        [JsonProperty("encrypt")] public bool Encrypt { get; set; }
    }

    /// <summary>
    /// <c>initializationOptions.resume</c> override (R-RESUME-3 defaults on the server: 3 attempts,
    /// 1 s base, 4 s cap, no jitter); omitted fields keep the server's defaults.
    /// </summary>
    public sealed class ResumePolicyOptions
    {
        /// <summary>Attempts per round.</summary>
        [JsonProperty("maxAttempts", NullValueHandling = NullValueHandling.Ignore)] public int? MaxAttempts { get; set; }
        /// <summary>First delay in milliseconds.</summary>
        [JsonProperty("baseDelayMs", NullValueHandling = NullValueHandling.Ignore)] public long? BaseDelayMs { get; set; }
        /// <summary>Delay cap in milliseconds.</summary>
        [JsonProperty("maxDelayMs", NullValueHandling = NullValueHandling.Ignore)] public long? MaxDelayMs { get; set; }
        /// <summary><c>none</c> or <c>full</c>.</summary>
        [JsonProperty("jitter", NullValueHandling = NullValueHandling.Ignore)] public string Jitter { get; set; }
    }

    /// <summary>
    /// <c>initializationOptions.rateLimit</c> override (R-RATE-2/R-RATE-6 defaults on the server: 30 s base,
    /// 300 s cap, 5 retries, full jitter); omitted fields keep the server's defaults.
    /// </summary>
    public sealed class RateLimitPolicyOptions
    {
        /// <summary>Retries before giving up.</summary>
        [JsonProperty("maxRetries", NullValueHandling = NullValueHandling.Ignore)] public int? MaxRetries { get; set; }
        /// <summary>First delay in milliseconds (when the failure gives no Retry-After).</summary>
        [JsonProperty("baseDelayMs", NullValueHandling = NullValueHandling.Ignore)] public long? BaseDelayMs { get; set; }
        /// <summary>Delay cap in milliseconds.</summary>
        [JsonProperty("maxDelayMs", NullValueHandling = NullValueHandling.Ignore)] public long? MaxDelayMs { get; set; }
        /// <summary><c>none</c> or <c>full</c>.</summary>
        [JsonProperty("jitter", NullValueHandling = NullValueHandling.Ignore)] public string Jitter { get; set; }
    }

    /// <summary>
    /// <c>initialize.params.initializationOptions</c> (docs/protocol.md). Fields left null are
    /// omitted so the server's defaults apply.
    /// </summary>
    public sealed class InitializationOptions
    {
        /// <summary>Cache settings.</summary>
        [JsonProperty("storage")] public StorageOptions Storage { get; set; } = new StorageOptions();
        /// <summary>Agents by name; null keeps the server's default table.</summary>
        [JsonProperty("agents", NullValueHandling = NullValueHandling.Ignore)] public Dictionary<string, AgentConfig> Agents { get; set; }
        /// <summary>Agent used when a request names none.</summary>
        [JsonProperty("defaultAgent", NullValueHandling = NullValueHandling.Ignore)] public string DefaultAgent { get; set; }
        /// <summary>Resume retry policy override.</summary>
        [JsonProperty("resume", NullValueHandling = NullValueHandling.Ignore)] public ResumePolicyOptions Resume { get; set; }
        /// <summary>Rate-limit wait policy override.</summary>
        [JsonProperty("rateLimit", NullValueHandling = NullValueHandling.Ignore)] public RateLimitPolicyOptions RateLimit { get; set; }
        /// <summary>Idle TTL of a live agent connection, seconds.</summary>
        [JsonProperty("connectionTtlSecs", NullValueHandling = NullValueHandling.Ignore)] public int? ConnectionTtlSecs { get; set; }
    }

    /// <summary>
    /// The editor's settings (Tools › Options › Tether in Visual Studio) and how they become
    /// <see cref="InitializationOptions"/>.
    /// </summary>
    public sealed class TetherSettings
    {
        /// <summary>Persist sessions between restarts.</summary>
        public bool PersistenceEnabled { get; set; } = true;
        /// <summary>Encrypt saved sessions.</summary>
        public bool EncryptionEnabled { get; set; }
        /// <summary>
        /// Agent command line, e.g. <c>claude-code-acp</c> or <c>opencode acp</c>; empty keeps the
        /// server's default agent. Split on whitespace, with double quotes grouping.
        /// </summary>
        public string AgentCommand { get; set; }
        /// <summary>Path of the <c>tether</c> executable; empty = bundled, then PATH.</summary>
        public string ServerPath { get; set; }

        /// <summary>Name under which a configured <see cref="AgentCommand"/> is registered.</summary>
        public const string ConfiguredAgentName = "configured";

        /// <summary>
        /// Builds the initializationOptions. A non-empty <see cref="AgentCommand"/> becomes agent
        /// <see cref="ConfiguredAgentName"/> (protocol <c>acp</c>) and the default agent.
        /// </summary>
        /// <exception cref="FormatException">The agent command has an unterminated quote.</exception>
        public InitializationOptions ToInitializationOptions()
        {
            var o = new InitializationOptions
            {
                Storage = new StorageOptions { Persist = PersistenceEnabled, Encrypt = EncryptionEnabled },
            };
            if (!string.IsNullOrWhiteSpace(AgentCommand))
            {
                var words = CommandLine.Split(AgentCommand);
                var agent = new AgentConfig { Command = words[0] };
                for (int i = 1; i < words.Count; i++)
                {
                    agent.Args.Add(words[i]);
                }
                o.Agents = new Dictionary<string, AgentConfig> { { ConfiguredAgentName, agent } };
                o.DefaultAgent = ConfiguredAgentName;
            }
            return o;
        }
    }

    /// <summary>Splits a command line into words: whitespace separates, double quotes group, no escapes.</summary>
    public static class CommandLine
    {
        /// <summary>The words of <paramref name="line"/>; empty list for blank input.</summary>
        /// <exception cref="FormatException">A double quote is not closed.</exception>
        public static List<string> Split(string line)
        {
            var words = new List<string>();
            if (line == null)
            {
                return words;
            }
            var current = new System.Text.StringBuilder();
            bool inQuotes = false, inWord = false;
            foreach (var c in line)
            {
                if (c == '"')
                {
                    inQuotes = !inQuotes;
                    inWord = true;
                }
                else if (char.IsWhiteSpace(c) && !inQuotes)
                {
                    if (inWord)
                    {
                        words.Add(current.ToString());
                        current.Clear();
                        inWord = false;
                    }
                }
                else
                {
                    current.Append(c);
                    inWord = true;
                }
            }
            if (inQuotes)
            {
                throw new FormatException("unterminated double quote in command line: " + line);
            }
            if (inWord)
            {
                words.Add(current.ToString());
            }
            return words;
        }
    }

    /// <summary>The client side of Tether's LSP capability negotiation.</summary>
    public static class TetherCapabilities
    {
        /// <summary>
        /// <c>{"recoveryDialog": true, "banners": true, "status": true}</c>: this client renders the
        /// recovery dialog, banners and status itself (else the server falls back to
        /// <c>window/showMessageRequest</c> and <c>window/showMessage</c>).
        /// </summary>
        public static JObject ClientTether()
        {
            return new JObject(
                new JProperty("recoveryDialog", true),
                new JProperty("banners", true),
                new JProperty("status", true));
        }

        /// <summary>
        /// Adds <c>capabilities.experimental.tether</c> to an <c>initialize</c> params object in place,
        /// keeping every other capability (and any other experimental key) as it was. Used by the
        /// Visual Studio middle layer, whose LSP client builds the capabilities itself.
        /// </summary>
        /// <exception cref="ArgumentException"><paramref name="initializeParams"/> is not a JSON object.</exception>
        public static JObject AddTo(JToken initializeParams)
        {
            var p = initializeParams as JObject;
            if (p == null)
            {
                throw new ArgumentException("initialize params must be a JSON object", "initializeParams");
            }
            var caps = p["capabilities"] as JObject;
            if (caps == null)
            {
                caps = new JObject();
                p["capabilities"] = caps;
            }
            var exp = caps["experimental"] as JObject;
            if (exp == null)
            {
                exp = new JObject();
                caps["experimental"] = exp;
            }
            exp["tether"] = ClientTether();
            return p;
        }

        /// <summary>
        /// The protocol version the server announced in
        /// <c>result.capabilities.experimental.tether.protocolVersion</c>, or null when absent (not a Tether server).
        /// </summary>
        public static int? ServerProtocolVersion(JToken initializeResult)
        {
            var v = initializeResult?.SelectToken("capabilities.experimental.tether.protocolVersion");
            if (v == null || v.Type != JTokenType.Integer)
            {
                return null;
            }
            return v.Value<int>();
        }
    }
}
