using System;
using System.Threading;
using System.Threading.Tasks;
using Tether.Client.Core.Persist; // mcs resolves the class's XML doc (its PersistScheduler cref) in this file too
using Tether.Client.Core.Protocol;
using Tether.Client.Core.Rpc;
using Tether.Client.Core.Ui;

namespace Tether.Client.Core
{
    // Sessions on every machine (R-SYNC-7): a session another of the user's machines holds is
    // read-only here; its heldElsewhere banner and a prompt refused as heldElsewhere
    // offer "Continue Here", which sends session/continueHere. As in the VS Code extension
    // (editors/vscode/src/core/controller.ts), the server takes the lease and clears the banner
    // (session/bannerCleared of held:<session>), which removes the offer here;
    // nothing is decided here.
    public sealed partial class TetherSessionController
    {
        /// <summary>
        /// "Continue Here": <c>session/continueHere</c> for <paramref name="sessionId"/> (null: the
        /// session of the window's offer, else the session shown, else the live one) and this
        /// controller's workspace; then says what the server answered ("Continued here; taken over
        /// from ada-laptop.", or its error) as a message. Never throws for the server's answer:
        /// returns the result, or null when it failed or there was no session to continue.
        /// </summary>
        public async Task<ContinueHereResult> ContinueHereAsync(string sessionId, CancellationToken cancellationToken)
        {
            var offer = Conversation.HeldElsewhere;
            var sid = sessionId ?? (offer != null ? offer.SessionId : null) ?? Conversation.SessionId ?? activeSessionId;
            if (sid == null)
            {
                log.Write("Continue Here: no session is shown");
                Apply(new ShowInfo { Severity = Severity.Info, Text = "No session is shown to continue here; open one with \"Show Sessions\"." });
                return null;
            }
            log.Write("session/continueHere " + workspace.Root + " " + sid);
            ContinueHereResult result;
            try
            {
                var p = new ContinueHereParams { Workspace = workspace, SessionId = sid };
                result = ProtocolJson.Read<ContinueHereResult>(await connection.RequestAsync(Methods.ContinueHere, ProtocolJson.Write(p), cancellationToken).ConfigureAwait(false));
            }
            catch (Exception e) when (e is JsonRpcRemoteException || e is JsonRpcConnectionClosedException || e is ProtocolException)
            {
                log.Write("session/continueHere " + sid + " failed: " + e.Message);
                Apply(HeldElsewhere.ContinueFailed(e));
                return null;
            }
            var said = HeldElsewhere.Continued(result);
            log.Write("session/continueHere " + sid + ": " + said.Text + " (epoch " + result.Epoch + ")");
            Apply(said);
            return result;
        }

        /// <summary>A <c>session/banner</c>: a <c>heldElsewhere</c> one puts its offer in the window.</summary>
        private void OnBannerSync(Banner banner)
        {
            var offer = HeldElsewhere.FromBanner(banner);
            if (offer != null) Conversation.ShowHeldElsewhere(offer);
        }

        /// <summary>A <c>session/bannerCleared</c>: the server cleared a <c>held:&lt;session&gt;</c> banner (taken over here), so its offer goes.</summary>
        private void OnBannerClearedSync(BannerCleared cleared)
        {
            var sid = HeldElsewhere.SessionOfBannerId(cleared.Id);
            if (sid != null) Conversation.ClearHeldElsewhere(sid);
        }

        /// <summary>
        /// A failed prompt of <paramref name="sessionId"/>: when the server refused it because
        /// another machine holds the session, its message with "Continue Here" in the window and
        /// as the session's <c>held:</c> info bar (the same bar as the banner). Returns whether it was so.
        /// </summary>
        private bool OfferContinueHere(Exception error, string sessionId)
        {
            var offer = HeldElsewhere.FromRefusal(error, sessionId);
            if (offer == null) return false;
            log.Write("session/prompt " + sessionId + ": refused, " + (offer.Machine ?? "another machine") + " holds the session");
            Conversation.ShowHeldElsewhere(offer);
            Apply(HeldElsewhere.InfoBar(offer));
            return true;
        }
    }
}
