using System;
using System.Collections.Generic;
using System.IO;
using System.Threading;
using System.Threading.Tasks;
using Newtonsoft.Json;
using Newtonsoft.Json.Linq;
using Tether.Client.Core.Protocol;

namespace Tether.Client.Core.Rpc
{
    /// <summary>The client's view of a connection to <c>tether serve</c>: what Core needs, nothing more.</summary>
    public interface ITetherConnection
    {
        /// <summary>
        /// Sends a request and returns its result. Failures are reported through the task, never
        /// thrown synchronously: <see cref="JsonRpcRemoteException"/> when the server answered with
        /// an error, <see cref="JsonRpcConnectionClosedException"/> when the connection ended (or had
        /// ended) before the answer, a cancellation when <paramref name="cancellationToken"/> fired.
        /// </summary>
        Task<JToken> RequestAsync(string method, JToken parameters, CancellationToken cancellationToken);

        /// <summary>Sends a notification.</summary>
        Task NotifyAsync(string method, JToken parameters);
    }

    /// <summary>A JSON-RPC error response (code, message, data).</summary>
    public sealed class JsonRpcRemoteException : Exception
    {
        /// <summary>Creates the exception.</summary>
        public JsonRpcRemoteException(string method, long code, string message, JToken data)
            : base(method + " failed: " + message + " (code " + code + ")")
        {
            Method = method;
            Code = code;
            RemoteMessage = message;
            ErrorData = data;
        }

        /// <summary>The request's method.</summary>
        public string Method { get; private set; }
        /// <summary>JSON-RPC error code (e.g. -32602 bad params, -32002 unknown session).</summary>
        public long Code { get; private set; }
        /// <summary>The error's message.</summary>
        public string RemoteMessage { get; private set; }
        /// <summary>The error's data, or null.</summary>
        public JToken ErrorData { get; private set; }
    }

    /// <summary>The connection ended (end of stream, framing error, or disposal) before a response arrived.</summary>
    public sealed class JsonRpcConnectionClosedException : Exception
    {
        /// <summary>Creates the exception.</summary>
        public JsonRpcConnectionClosedException(string message, Exception inner) : base(message, inner)
        {
        }
    }

    /// <summary>
    /// A small JSON-RPC 2.0 client over LSP-framed streams: requests correlated to responses by
    /// integer id, notifications dispatched in arrival order on the reader thread, server → client
    /// requests answered asynchronously (so a user's answer never blocks the reader), unknown
    /// server requests answered with -32601. Used by the tests against the real server; in Visual
    /// Studio, the LSP client's StreamJsonRpc connection plays this part.
    /// </summary>
    public sealed class JsonRpcConnection : ITetherConnection, IDisposable
    {
        private readonly Stream input;
        private readonly Stream output;
        private readonly ILog log;
        private readonly object writeGate = new object();
        private readonly object gate = new object();
        private readonly Dictionary<long, Pending> pending = new Dictionary<long, Pending>();
        private readonly Dictionary<string, Action<JToken>> notificationHandlers = new Dictionary<string, Action<JToken>>();
        private readonly Dictionary<string, Func<JToken, Task<JToken>>> requestHandlers = new Dictionary<string, Func<JToken, Task<JToken>>>();
        private readonly TaskCompletionSource<Exception> completion = new TaskCompletionSource<Exception>();
        private long nextId;
        private Thread reader;
        private Exception closedBecause;

        private sealed class Pending
        {
            public string Method;
            public TaskCompletionSource<JToken> Result;
        }

        /// <summary>Creates a connection reading server messages from <paramref name="input"/> and writing to <paramref name="output"/>.</summary>
        public JsonRpcConnection(Stream input, Stream output, ILog log)
        {
            if (input == null) throw new ArgumentNullException("input");
            if (output == null) throw new ArgumentNullException("output");
            this.input = new BufferedStream(input);
            this.output = output;
            this.log = log ?? NullLog.Instance;
        }

        /// <summary>Completes when the reader stops; the value is why (null for a clean end of stream).</summary>
        public Task<Exception> Completion
        {
            get { return completion.Task; }
        }

        /// <summary>Called for every notification whose method has no handler (method, params).</summary>
        public Action<string, JToken> UnhandledNotification { get; set; }

        /// <summary>Registers the handler of a server notification (replaces any earlier one). Runs on the reader thread, in order.</summary>
        public void OnNotification(string method, Action<JToken> handler)
        {
            lock (gate)
            {
                notificationHandlers[method] = handler;
            }
        }

        /// <summary>
        /// Registers the handler of a server → client request. Its result is the response; a
        /// <see cref="JsonRpcRemoteException"/> it throws becomes that error (code, message, data);
        /// any other exception becomes -32603 with the exception's message.
        /// </summary>
        public void OnRequest(string method, Func<JToken, Task<JToken>> handler)
        {
            lock (gate)
            {
                requestHandlers[method] = handler;
            }
        }

        /// <summary>Starts the reader thread. Call once, after registering handlers.</summary>
        public void Start()
        {
            lock (gate)
            {
                if (reader != null) throw new InvalidOperationException("already started");
                reader = new Thread(ReadLoop) { IsBackground = true, Name = "tether-jsonrpc-reader" };
            }
            reader.Start();
        }

        /// <inheritdoc />
        public Task<JToken> RequestAsync(string method, JToken parameters, CancellationToken cancellationToken)
        {
            var p = new Pending { Method = method, Result = new TaskCompletionSource<JToken>(TaskCreationOptions.RunContinuationsAsynchronously) };
            long id;
            lock (gate)
            {
                if (closedBecause != null || completion.Task.IsCompleted)
                {
                    p.Result.SetException(new JsonRpcConnectionClosedException("connection closed before " + method + " was sent", closedBecause));
                    return p.Result.Task;
                }
                id = ++nextId;
                pending[id] = p;
            }
            var msg = new JObject(new JProperty("jsonrpc", "2.0"), new JProperty("id", id), new JProperty("method", method));
            if (parameters != null)
            {
                msg["params"] = parameters;
            }
            try
            {
                Write(msg);
            }
            catch (Exception e)
            {
                lock (gate)
                {
                    pending.Remove(id);
                }
                p.Result.TrySetException(new JsonRpcConnectionClosedException("could not send " + method + ": " + e.Message, e));
                return p.Result.Task;
            }
            if (cancellationToken.CanBeCanceled)
            {
                cancellationToken.Register(() =>
                {
                    bool removed;
                    lock (gate)
                    {
                        removed = pending.Remove(id);
                    }
                    if (removed)
                    {
                        try
                        {
                            Write(Notification("$/cancelRequest", new JObject(new JProperty("id", id))));
                        }
                        catch (Exception e)
                        {
                            log.Write("could not send $/cancelRequest: " + e.Message);
                        }
                        p.Result.TrySetCanceled();
                    }
                });
            }
            return p.Result.Task;
        }

        /// <inheritdoc />
        public Task NotifyAsync(string method, JToken parameters)
        {
            Write(Notification(method, parameters));
            return Task.FromResult(true);
        }

        private static JObject Notification(string method, JToken parameters)
        {
            var msg = new JObject(new JProperty("jsonrpc", "2.0"), new JProperty("method", method));
            if (parameters != null)
            {
                msg["params"] = parameters;
            }
            return msg;
        }

        private void Write(JObject message)
        {
            var bytes = LspFraming.Frame(message.ToString(Formatting.None));
            lock (writeGate)
            {
                output.Write(bytes, 0, bytes.Length);
                output.Flush();
            }
        }

        private void ReadLoop()
        {
            Exception why = null;
            try
            {
                while (true)
                {
                    var text = LspFraming.ReadMessage(input);
                    if (text == null)
                    {
                        break;
                    }
                    JToken token;
                    try
                    {
                        token = ProtocolJson.Parse(text);
                    }
                    catch (ProtocolException e)
                    {
                        log.Write("dropped a message that is not JSON: " + e.Message);
                        continue;
                    }
                    var msg = token as JObject;
                    if (msg == null)
                    {
                        log.Write("dropped a message that is not a JSON object (batches are not used by Tether)");
                        continue;
                    }
                    Dispatch(msg);
                }
            }
            catch (Exception e)
            {
                why = e;
                log.Write("reader stopped: " + e.Message);
            }
            Close(why);
        }

        private void Dispatch(JObject msg)
        {
            var method = msg["method"];
            var id = msg["id"];
            if (method != null && method.Type == JTokenType.String)
            {
                if (id == null)
                {
                    DispatchNotification((string)method, msg["params"]);
                }
                else
                {
                    DispatchRequest((string)method, id, msg["params"]);
                }
                return;
            }
            if (id == null || id.Type != JTokenType.Integer)
            {
                log.Write("dropped a response without an integer id: " + msg.ToString(Formatting.None));
                return;
            }
            Pending p;
            lock (gate)
            {
                long key = id.Value<long>();
                if (!pending.TryGetValue(key, out p))
                {
                    log.Write("dropped a response to unknown or cancelled request " + key);
                    return;
                }
                pending.Remove(key);
            }
            var error = msg["error"] as JObject;
            if (error != null)
            {
                var code = error["code"];
                var message = error["message"];
                p.Result.TrySetException(new JsonRpcRemoteException(
                    p.Method,
                    code != null && code.Type == JTokenType.Integer ? code.Value<long>() : 0,
                    message != null && message.Type == JTokenType.String ? (string)message : "(no message)",
                    error["data"]));
            }
            else
            {
                p.Result.TrySetResult(msg["result"] ?? JValue.CreateNull());
            }
        }

        private void DispatchNotification(string method, JToken parameters)
        {
            Action<JToken> handler;
            Action<string, JToken> fallback;
            lock (gate)
            {
                notificationHandlers.TryGetValue(method, out handler);
                fallback = UnhandledNotification;
            }
            try
            {
                if (handler != null)
                {
                    handler(parameters);
                }
                else if (fallback != null)
                {
                    fallback(method, parameters);
                }
            }
            catch (Exception e)
            {
                log.Write("handler of " + method + " failed: " + e);
            }
        }

        private void DispatchRequest(string method, JToken id, JToken parameters)
        {
            Func<JToken, Task<JToken>> handler;
            lock (gate)
            {
                requestHandlers.TryGetValue(method, out handler);
            }
            if (handler == null)
            {
                Respond(id, null, -32601, "Method not found: " + method);
                return;
            }
            Task.Run(async () =>
            {
                try
                {
                    var result = await handler(parameters).ConfigureAwait(false);
                    Respond(id, result ?? JValue.CreateNull(), 0, null);
                }
                catch (JsonRpcRemoteException e)
                {
                    // A handler that means a specific JSON-RPC error (e.g. -32800 request cancelled).
                    Respond(id, null, e.Code, e.RemoteMessage, e.ErrorData);
                }
                catch (Exception e)
                {
                    log.Write("handler of request " + method + " failed: " + e);
                    Respond(id, null, -32603, e.Message);
                }
            });
        }

        private void Respond(JToken id, JToken result, long code, string message, JToken data = null)
        {
            var msg = new JObject(new JProperty("jsonrpc", "2.0"), new JProperty("id", id));
            if (message == null)
            {
                msg["result"] = result;
            }
            else
            {
                var error = new JObject(new JProperty("code", code), new JProperty("message", message));
                if (data != null)
                {
                    error["data"] = data;
                }
                msg["error"] = error;
            }
            try
            {
                Write(msg);
            }
            catch (Exception e)
            {
                log.Write("could not send a response: " + e.Message);
            }
        }

        private void Close(Exception why)
        {
            List<Pending> orphans;
            lock (gate)
            {
                if (closedBecause == null)
                {
                    closedBecause = why ?? new EndOfStreamException("the server closed its output");
                }
                orphans = new List<Pending>(pending.Values);
                pending.Clear();
            }
            foreach (var p in orphans)
            {
                p.Result.TrySetException(new JsonRpcConnectionClosedException(
                    "connection closed while waiting for " + p.Method + ": " + closedBecause.Message, closedBecause));
            }
            completion.TrySetResult(why);
        }

        /// <summary>Closes both streams; pending requests fail with <see cref="JsonRpcConnectionClosedException"/>.</summary>
        public void Dispose()
        {
            try
            {
                output.Dispose();
            }
            catch (IOException)
            {
                // The peer may already be gone.
            }
            try
            {
                input.Dispose();
            }
            catch (IOException)
            {
                // Same.
            }
            Close(new ObjectDisposedException("JsonRpcConnection"));
        }
    }
}
