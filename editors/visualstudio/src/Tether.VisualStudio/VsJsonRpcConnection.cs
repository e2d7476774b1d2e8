using System.Threading;
using System.Threading.Tasks;
using Newtonsoft.Json.Linq;
using StreamJsonRpc;
using Tether.Client.Core.Rpc;

namespace Tether.VisualStudio
{
    /// <summary>
    /// Core's <see cref="ITetherConnection"/> over the Visual Studio LSP client's own StreamJsonRpc
    /// connection (handed to <see cref="TetherLanguageClient.AttachForCustomMessageAsync"/>), so custom
    /// requests share the one stdio pipe of <c>tether serve</c>. Errors are mapped to Core's exceptions.
    /// </summary>
    internal sealed class VsJsonRpcConnection : ITetherConnection
    {
        private readonly JsonRpc rpc;

        public VsJsonRpcConnection(JsonRpc rpc)
        {
            this.rpc = rpc;
        }

        /// <inheritdoc />
        public async Task<JToken> RequestAsync(string method, JToken parameters, CancellationToken cancellationToken)
        {
            try
            {
                return await rpc.InvokeWithParameterObjectAsync<JToken>(method, parameters, cancellationToken).ConfigureAwait(false);
            }
            catch (RemoteInvocationException e)
            {
                throw new JsonRpcRemoteException(method, e.ErrorCode, e.Message, e.ErrorData as JToken);
            }
            catch (ConnectionLostException e)
            {
                throw new JsonRpcConnectionClosedException("connection to the Tether server lost during " + method, e);
            }
        }

        /// <inheritdoc />
        public Task NotifyAsync(string method, JToken parameters)
        {
            return rpc.NotifyWithParameterObjectAsync(method, parameters);
        }
    }
}
