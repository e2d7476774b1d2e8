using System;
using Newtonsoft.Json.Linq;
using Tether.Client.Core.Protocol;
using Tether.Client.Core.Rpc;

namespace Tether.Client.Core.Ui
{
    /// <summary>
    /// The "Continue Here" offer of a session another of the user's machines holds (R-SYNC-7),
    /// shown in the tool window and as the main window's info bar.
    /// </summary>
    public sealed class HeldElsewhereOffer
    {
        /// <summary>The session held elsewhere (what <c>session/continueHere</c> takes over).</summary>
        public string SessionId { get; set; }
        /// <summary>The machine that holds it, when the server named one.</summary>
        public string Machine { get; set; }
        /// <summary>The server's message (it names the machine).</summary>
        public string Message { get; set; }
        /// <summary>The action's title: "Continue Here".</summary>
        public string ActionTitle { get; set; }
    }

    /// <summary>
    /// Sessions on every machine as this client shows them (the VS Code extension's
    /// editors/vscode/src/core/sync.ts): a <c>heldElsewhere</c> banner or a prompt refused as
    /// <c>heldElsewhere</c> → the "Continue Here" offer; the answer to <c>session/continueHere</c>
    /// → the message shown. The server decides whether a session is held, by whom, and what
    /// taking it over does; this only reads its answers. Pure.
    /// </summary>
    public static class HeldElsewhere
    {
        /// <summary>The action's title.</summary>
        public const string ContinueHereTitle = "Continue Here";
        /// <summary>The id prefix of a <c>heldElsewhere</c> banner: <c>held:&lt;sessionId&gt;</c> (docs/protocol.md).</summary>
        public const string BannerIdPrefix = "held:";
        /// <summary>The prefix of the info bar action that takes a session over: <c>tether.continueHere:&lt;sessionId&gt;</c>.</summary>
        public const string ActionIdPrefix = "tether.continueHere:";

        /// <summary>The offer of a <c>heldElsewhere</c> banner (its session: <c>sessionId</c>, else the id after <c>held:</c>); null for another kind or when neither names one.</summary>
        public static HeldElsewhereOffer FromBanner(Banner banner)
        {
            if (banner == null || banner.Kind != BannerKind.HeldElsewhere) return null;
            var sid = !string.IsNullOrEmpty(banner.SessionId) ? banner.SessionId : SessionOfBannerId(banner.Id);
            if (sid == null) return null;
            return new HeldElsewhereOffer { SessionId = sid, Message = banner.Message ?? "", ActionTitle = ContinueHereTitle };
        }

        /// <summary>
        /// Whether a failed <c>session/prompt</c> of <paramref name="sessionId"/> was refused because
        /// another of the user's machines holds the session: its error's <c>data.kind</c> is
        /// <c>heldElsewhere</c> (the kind alone decides). The offer, or null for any other failure.
        /// </summary>
        public static HeldElsewhereOffer FromRefusal(Exception error, string sessionId)
        {
            var remote = error as JsonRpcRemoteException;
            var data = remote != null ? remote.ErrorData as JObject : null;
            if (data == null || sessionId == null || (string)(data["kind"] as JValue) != "heldElsewhere") return null;
            var machine = data["machine"] as JValue;
            var name = machine != null && machine.Type == JTokenType.String && !string.IsNullOrWhiteSpace((string)machine) ? (string)machine : null;
            var message = !string.IsNullOrWhiteSpace(remote.RemoteMessage)
                ? remote.RemoteMessage
                : (name ?? "Another of your machines") + " is continuing this session: it is read-only here.";
            return new HeldElsewhereOffer { SessionId = sessionId, Machine = name, Message = message, ActionTitle = ContinueHereTitle };
        }

        /// <summary>
        /// The main window's info bar of an offer: the id of the session's <c>heldElsewhere</c>
        /// banner (<c>held:&lt;session&gt;</c>), so a refused prompt's offer and the banner are one
        /// bar and the server's <c>session/bannerCleared</c> removes either; not dismissible; one
        /// action, "Continue Here".
        /// </summary>
        public static ShowInfoBar InfoBar(HeldElsewhereOffer offer)
        {
            return new ShowInfoBar
            {
                Id = BannerIdPrefix + offer.SessionId,
                Kind = "heldElsewhere",
                Severity = Severity.Warning,
                Text = offer.Message,
                Dismissible = false,
                Actions = { new InfoBarAction(ActionIdPrefix + offer.SessionId, offer.ActionTitle) },
            };
        }

        /// <summary>The session an info bar action takes over, or null when it is not "Continue Here".</summary>
        public static string SessionOfAction(string actionId)
        {
            return actionId != null && actionId.StartsWith(ActionIdPrefix, StringComparison.Ordinal) && actionId.Length > ActionIdPrefix.Length
                ? actionId.Substring(ActionIdPrefix.Length) : null;
        }

        /// <summary>The session of a <c>held:&lt;session&gt;</c> banner id, or null for another id.</summary>
        public static string SessionOfBannerId(string bannerId)
        {
            return bannerId != null && bannerId.StartsWith(BannerIdPrefix, StringComparison.Ordinal) && bannerId.Length > BannerIdPrefix.Length
                ? bannerId.Substring(BannerIdPrefix.Length) : null;
        }

        /// <summary>What a <c>session/continueHere</c> answer tells the user: "Continued here; taken over from ada-laptop." (or "Continued here.").</summary>
        public static ShowInfo Continued(ContinueHereResult result)
        {
            var from = result != null && !string.IsNullOrWhiteSpace(result.TakenFrom) ? result.TakenFrom : null;
            return new ShowInfo { Severity = Severity.Info, Text = from != null ? "Continued here; taken over from " + from + "." : "Continued here." };
        }

        /// <summary>What a failed <c>session/continueHere</c> tells the user: the server's message (sync not set up, the remote failing…); a server without the method (-32601) is named as such.</summary>
        public static ShowInfo ContinueFailed(Exception error)
        {
            var remote = error as JsonRpcRemoteException;
            string text;
            if (remote != null && remote.Code == -32601) text = "this Tether server does not support session/continueHere.";
            else if (remote != null) text = remote.RemoteMessage;
            else if (error is JsonRpcConnectionClosedException) text = "the Tether server is not running.";
            else text = error.Message;
            return new ShowInfo { Severity = Severity.Error, Text = "Continue Here failed: " + text, Detail = remote != null ? "Server error " + remote.Code + "." : null };
        }
    }
}
