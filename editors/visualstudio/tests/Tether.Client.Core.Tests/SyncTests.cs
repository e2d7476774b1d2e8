using System;
using System.Linq;
using System.Threading;
using System.Threading.Tasks;
using Newtonsoft.Json.Linq;
using NUnit.Framework;
using Tether.Client.Core.Protocol;
using Tether.Client.Core.Rpc;
using Tether.Client.Core.Ui;

namespace Tether.Client.Core.Tests
{
    /// <summary>
    /// Sessions on every machine (R-SYNC-1, R-SYNC-7) in the view models: "from &lt;machine&gt;,
    /// &lt;age&gt;" in Show Sessions, and "Continue Here" for a session another machine holds (its
    /// banner, a refused prompt), which sends <c>session/continueHere</c>; over a scripted peer.
    /// </summary>
    [TestFixture]
    public class SyncTests : ScriptedPeer
    {
        private const string HeldMessage = "machine-a is continuing this session: it is read-only here. Choose Continue here (session/continueHere) to take it over; machine-a then shows it read-only.";

        [Test]
        public void ASessionAnotherMachinePushedIsListedFromThatMachineWithItsAge()
        {
            var list = ProtocolJson.Read<ListResult>(Json.Q("{'sessions':["
                + "{'sessionId':'77b0','agent':'claude','firstPrompt':'why does the build fail?','updatedUtc':'2026-11-22T00:55:00Z','turnCount':2,'live':false,'turnRunning':false,'clients':0,'fromMachine':'ada-laptop','fromMachineAt':'2026-11-22T00:55:00Z'},"
                + "{'sessionId':'4c1e','agent':'claude','title':'rename the crate','updatedUtc':'2026-11-21T17:40:02Z','turnCount':8,'live':false,'turnRunning':false,'clients':0,'fromMachine':'ada-desktop'},"
                + "{'sessionId':'9a9a','agent':'claude','title':'made here','updatedUtc':'2026-11-22T00:59:30Z','turnCount':1,'live':true,'turnRunning':false,'clients':1}]}"));
            Assert.AreEqual("ada-laptop", list.Sessions[0].FromMachine);
            Assert.AreEqual("2026-11-22T00:55:00Z", list.Sessions[0].FromMachineAt);
            var rows = SessionRows.From(list, clock.UtcNow);
            Assert.AreEqual("claude \u00b7 Tether's cache \u00b7 from ada-laptop, 5 min ago", rows[0].Description);
            Assert.AreEqual("ada-laptop", rows[0].FromMachine);
            Assert.AreEqual("claude \u00b7 Tether's cache \u00b7 from ada-desktop", rows[1].Description, "no age when fromMachineAt is absent");
            Assert.AreEqual("claude \u00b7 Tether's cache", rows[2].Description, "this machine's session says nothing of machines");
            Assert.IsNull(rows[2].FromMachine);
        }

        [Test]
        public void AHeldElsewhereBannerOffersContinueHereInTheWindowAndAsAnInfoBar()
        {
            pair.Start();
            controller.Conversation.StartedSession("s1", null);
            controller.HandleNotification(Methods.Banner, Json.Q("{'id':'held:s1','sessionId':'s1','kind':'heldElsewhere','message':'" + HeldMessage + "','dismissible':false}"));
            var bar = ui.Of<ShowInfoBar>().Single();
            Assert.AreEqual("held:s1", bar.Id);
            Assert.AreEqual("heldElsewhere", bar.Kind);
            Assert.AreEqual(Severity.Warning, bar.Severity);
            Assert.AreEqual(HeldMessage, bar.Text);
            Assert.IsFalse(bar.Dismissible);
            Assert.AreEqual(new[] { "tether.continueHere:s1" }, bar.Actions.Select(a => a.Id).ToArray());
            Assert.AreEqual(new[] { "Continue Here" }, bar.Actions.Select(a => a.Title).ToArray());
            StringAssert.Contains("\n? " + HeldMessage + " [Continue Here]\nStatus: ", ConversationText.Render(controller.Conversation));

            // The banner of a session the window does not show is not drawn in it (the info bar still says it).
            controller.HandleNotification(Methods.Banner, Json.Q("{'id':'held:other','kind':'heldElsewhere','message':'m','dismissible':false}"));
            Assert.AreEqual("tether.continueHere:other", ui.Of<ShowInfoBar>().Last().Actions.Single().Id, "the session from the id when sessionId is absent");
            Assert.AreEqual("s1", controller.Conversation.HeldElsewhere.SessionId, "the window keeps the offer of the session it shows");
        }

        [Test]
        public void APromptRefusedAsHeldElsewhereOffersContinueHereWhichTakesTheSessionOverAndTheServersBannerClearedRemovesTheOffer()
        {
            Serve("session/resume", Answer(Started));
            Serve("session/prompt", Error("session/prompt", -32803, HeldMessage, "{'kind':'heldElsewhere','machine':'machine-a','untilMs':1795000000000,'retryable':false}"));
            Serve("session/continueHere", p =>
            {
                // As the server does: the banner is cleared before the answer.
                pair.Server.NotifyAsync("session/bannerCleared", Json.Q("{'id':'held:s1'}")).Wait();
                return Task.FromResult(Json.Q("{'epoch':2,'takenFrom':'machine-a'}"));
            });
            pair.Start();
            controller.ResumeAsync(null, CancellationToken.None).Wait(Timeout);

            var refused = Assert.Throws<AggregateException>(() => controller.SendAsync("on b, too early", CancellationToken.None).Wait(Timeout));
            Assert.AreEqual(-32803, ((JsonRpcRemoteException)refused.InnerException).Code);
            var offer = controller.Conversation.HeldElsewhere;
            Assert.AreEqual("s1", offer.SessionId);
            Assert.AreEqual("machine-a", offer.Machine);
            var bar = ui.Of<ShowInfoBar>().Single(b => b.Id == "held:s1");
            Assert.AreEqual("tether.continueHere:s1", bar.Actions.Single().Id);
            Assert.AreEqual("Continue Here", bar.Actions.Single().Title);
            StringAssert.Contains("\n? " + HeldMessage + " [Continue Here]\nStatus: Session is live\n", ConversationText.Render(controller.Conversation));

            // The info bar's action (the window's button calls ContinueHereAsync the same way).
            controller.OnInfoBarActionAsync(bar.Actions.Single().Id, CancellationToken.None).Wait(Timeout);
            AssertJson("{'workspace':{'root':'/work/ws'},'sessionId':'s1'}", Sent("session/continueHere").Single());
            var said = ui.Of<ShowInfo>().Single();
            Assert.AreEqual(Severity.Info, said.Severity);
            Assert.AreEqual("Continued here; taken over from machine-a.", said.Text);
            WaitForView(v => v.HeldElsewhere == null, "the server's bannerCleared to remove the offer");
            Assert.IsTrue(ui.Of<ClearInfoBar>().Any(c => c.Id == "held:s1"), "the info bar goes with the server's bannerCleared");
            StringAssert.DoesNotContain("[Continue Here]", ConversationText.Render(controller.Conversation));
        }

        [Test]
        public void AnotherRefusalOfAPromptOffersNothing()
        {
            Serve("session/resume", Answer(Started));
            Serve("session/prompt", Error("session/prompt", -32803, "session s1 is already running a prompt turn", "{'kind':'turnRunning','sessionId':'s1','turnStartSeq':41,'prompt':'x'}"));
            pair.Start();
            controller.ResumeAsync(null, CancellationToken.None).Wait(Timeout);
            Assert.Throws<AggregateException>(() => controller.SendAsync("hi", CancellationToken.None).Wait(Timeout));
            Assert.IsNull(controller.Conversation.HeldElsewhere);
            Assert.IsFalse(ui.Of<ShowInfoBar>().Any(b => b.Id.StartsWith("held:", StringComparison.Ordinal)));
        }

        [Test]
        public void ContinueHereSaysWhyItFailedAndNeverThrows()
        {
            Serve("session/continueHere",
                Error("session/continueHere", -32803, "sync is not set up here: set sync.remote and run `tether sync join`", "{'kind':'syncOff'}"),
                Error("session/continueHere", -32601, "method not found"));
            pair.Start();
            controller.Conversation.StartedSession("s1", null);
            Assert.IsNull(controller.ContinueHereAsync(null, CancellationToken.None).Result, "the session shown, when no offer names one");
            AssertJson("{'workspace':{'root':'/work/ws'},'sessionId':'s1'}", Sent("session/continueHere").Single());
            Assert.IsNull(controller.ContinueHereAsync("s1", CancellationToken.None).Result);
            var said = ui.Of<ShowInfo>();
            Assert.AreEqual(Severity.Error, said[0].Severity);
            Assert.AreEqual("Continue Here failed: sync is not set up here: set sync.remote and run `tether sync join`", said[0].Text);
            Assert.AreEqual("Continue Here failed: this Tether server does not support session/continueHere.", said[1].Text);
        }

        [Test]
        public void ContinueHereWithNoSessionShownSendsNothing()
        {
            pair.Start();
            Assert.IsNull(controller.ContinueHereAsync(null, CancellationToken.None).Result);
            Assert.AreEqual(0, Sent("session/continueHere").Count);
            StringAssert.StartsWith("No session is shown to continue here", ui.Of<ShowInfo>().Single().Text);
        }
    }
}
