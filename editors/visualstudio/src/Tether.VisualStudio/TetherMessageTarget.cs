using System;
using System.Threading.Tasks;
using Newtonsoft.Json.Linq;
using StreamJsonRpc;
using Tether.Client.Core;
using Tether.Client.Core.Protocol;

namespace Tether.VisualStudio
{
    /// <summary>
    /// The <c>CustomMessageTarget</c> of <see cref="TetherLanguageClient"/>: StreamJsonRpc routes the
    /// server's custom notifications and requests here by method name. Each method hands the raw
    /// params to Core's <see cref="TetherSessionController"/>; nothing is decided here.
    /// <c>UseSingleObjectParameterDeserialization</c> passes the whole params object as one JToken.
    /// </summary>
    public sealed class TetherMessageTarget
    {
        private readonly Func<TetherSessionController> controller;

        internal TetherMessageTarget(Func<TetherSessionController> controller)
        {
            this.controller = controller;
        }

        private void Notify(string method, JToken p)
        {
            var c = controller();
            if (c != null)
            {
                c.HandleNotification(method, p);
            }
        }

        /// <summary><c>session/restored</c>.</summary>
        [JsonRpcMethod(Methods.Restored, UseSingleObjectParameterDeserialization = true)]
        public void OnRestored(JToken p) { Notify(Methods.Restored, p); }

        /// <summary><c>session/status</c>.</summary>
        [JsonRpcMethod(Methods.Status, UseSingleObjectParameterDeserialization = true)]
        public void OnStatus(JToken p) { Notify(Methods.Status, p); }

        /// <summary><c>session/banner</c>.</summary>
        [JsonRpcMethod(Methods.Banner, UseSingleObjectParameterDeserialization = true)]
        public void OnBanner(JToken p) { Notify(Methods.Banner, p); }

        /// <summary><c>session/bannerCleared</c>.</summary>
        [JsonRpcMethod(Methods.BannerCleared, UseSingleObjectParameterDeserialization = true)]
        public void OnBannerCleared(JToken p) { Notify(Methods.BannerCleared, p); }

        /// <summary><c>session/expired</c>.</summary>
        [JsonRpcMethod(Methods.Expired, UseSingleObjectParameterDeserialization = true)]
        public void OnExpired(JToken p) { Notify(Methods.Expired, p); }

        /// <summary><c>session/update</c>.</summary>
        [JsonRpcMethod(Methods.Update, UseSingleObjectParameterDeserialization = true)]
        public void OnUpdate(JToken p) { Notify(Methods.Update, p); }

        /// <summary><c>session/turnEnded</c>.</summary>
        [JsonRpcMethod(Methods.TurnEnded, UseSingleObjectParameterDeserialization = true)]
        public void OnTurnEnded(JToken p) { Notify(Methods.TurnEnded, p); }

        /// <summary><c>session/permissionResolved</c>.</summary>
        [JsonRpcMethod(Methods.PermissionResolved, UseSingleObjectParameterDeserialization = true)]
        public void OnPermissionResolved(JToken p) { Notify(Methods.PermissionResolved, p); }

        /// <summary><c>session/reattached</c> (from the forwarder, after the daemon was replaced).</summary>
        [JsonRpcMethod(Methods.Reattached, UseSingleObjectParameterDeserialization = true)]
        public void OnReattached(JToken p) { Notify(Methods.Reattached, p); }

        /// <summary><c>telemetry/event</c>.</summary>
        [JsonRpcMethod(Methods.Telemetry, UseSingleObjectParameterDeserialization = true)]
        public void OnTelemetry(JToken p) { Notify(Methods.Telemetry, p); }

        /// <summary><c>session/requestPermission</c> (a request): the user's pick among the agent's options.</summary>
        [JsonRpcMethod(Methods.RequestPermission, UseSingleObjectParameterDeserialization = true)]
        public Task<JToken> OnRequestPermissionAsync(JToken p)
        {
            var c = controller();
            if (c == null)
            {
                // Not attached yet: no one can answer, so the agent's question is cancelled (ACP outcome).
                return Task.FromResult<JToken>(JObject.Parse("{\"outcome\":{\"outcome\":\"cancelled\"}}"));
            }
            return c.HandleRequestAsync(Methods.RequestPermission, p);
        }
    }
}
