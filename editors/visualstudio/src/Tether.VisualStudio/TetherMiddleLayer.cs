using System;
using System.Threading.Tasks;
using Microsoft.VisualStudio.LanguageServer.Client;
using Newtonsoft.Json.Linq;
using Tether.Client.Core;
using Tether.Client.Core.Protocol;

namespace Tether.VisualStudio
{
    /// <summary>
    /// Adds <c>capabilities.experimental.tether = {recoveryDialog, banners, status}</c> to the
    /// <c>initialize</c> request that Visual Studio's LSP client builds (it offers no other way to
    /// declare client capabilities). If a Visual Studio version does not route <c>initialize</c>
    /// through middle layers, the server sees no Tether capability and falls back, as the protocol
    /// says, to <c>window/showMessageRequest</c> (rendered natively by Visual Studio, same buttons)
    /// and <c>window/showMessage</c>; the info bar then logs a warning (see
    /// <see cref="TetherLanguageClient.OnServerInitializedAsync"/>).
    /// </summary>
    internal sealed class TetherMiddleLayer : ILanguageClientMiddleLayer
    {
        private readonly ILog log;

        public TetherMiddleLayer(ILog log)
        {
            this.log = log;
        }

        /// <summary>True once <c>initialize</c> went through <see cref="HandleRequestAsync"/>.</summary>
        public bool SawInitialize { get; private set; }

        public bool CanHandle(string methodName)
        {
            return methodName == "initialize";
        }

        public Task HandleNotificationAsync(string methodName, JToken methodParam, Func<JToken, Task> sendNotification)
        {
            return sendNotification(methodParam);
        }

        public Task<JToken> HandleRequestAsync(string methodName, JToken methodParam, Func<JToken, Task<JToken>> sendRequest)
        {
            if (methodName == "initialize" && methodParam is JObject)
            {
                TetherCapabilities.AddTo(methodParam);
                SawInitialize = true;
                log.Write("initialize: declared experimental.tether {recoveryDialog, banners, status}");
            }
            return sendRequest(methodParam);
        }
    }
}
