using System;
using System.Collections.Generic;
using System.Linq;
using Newtonsoft.Json.Linq;
using NUnit.Framework;
using Tether.Client.Core.Protocol;
using Tether.Client.Core.Ui;

namespace Tether.Client.Core.Tests
{
    [TestFixture]
    public class StatusTextTests
    {
        [Test]
        public void TheIssuesTwoTextsExactly()
        {
            Assert.AreEqual("Resuming\u2026 attempt 2 of 3", StatusText.Resuming(2, 3));
            Assert.AreEqual("Rate limited, resuming in 40 s", StatusText.RateLimited(40000));
        }

        [Test]
        public void SecondsAreRoundedUpSoAWaitNeverLooksShorter()
        {
            Assert.AreEqual("Rate limited, resuming in 40 s", StatusText.RateLimited(39001));
            Assert.AreEqual("Rate limited, resuming in 1 s", StatusText.RateLimited(1));
            Assert.AreEqual("Rate limited, resuming now", StatusText.RateLimited(0));
            Assert.AreEqual("Rate limited, resuming in 300 s", StatusText.RateLimited(300000));
            Assert.AreEqual(0, StatusText.CeilSeconds(-5));
        }

        [Test]
        public void TextsWithoutNumbers()
        {
            Assert.AreEqual("Resuming\u2026", StatusText.Resuming(0, 3));
            Assert.AreEqual("Rate limited, waiting to resume", StatusText.RateLimited(null));
            Assert.AreEqual("Resuming\u2026 next attempt in 2 s", StatusText.WaitingRetry(2000));
            Assert.AreEqual("Resuming\u2026 waiting to retry", StatusText.WaitingRetry(null));
            Assert.AreEqual("Resume failed: network error", StatusText.Failed(ErrorKind.Network));
            Assert.AreEqual("Resume failed", StatusText.Failed(null));
        }

        [Test]
        public void EveryErrorKindHasAReadableName()
        {
            var names = Enum.GetValues(typeof(ErrorKind)).Cast<ErrorKind>().Select(StatusText.Describe).ToList();
            CollectionAssert.AllItemsAreUnique(names);
            Assert.IsFalse(names.Any(n => n.Any(char.IsUpper)), string.Join(", ", names));
        }

        [Test]
        public void ShortIdsFollowSeed000()
        {
            Assert.AreEqual("12345678\u2026", StatusText.ShortId("1234567890abcdef"));
            Assert.AreEqual("abc", StatusText.ShortId("abc"));
            Assert.AreEqual("(unknown)", StatusText.ShortId(null));
        }
    }

    [TestFixture]
    public class PresenterTests
    {
        private FakeClock clock;
        private SessionPresenter presenter;

        [SetUp]
        public void SetUp()
        {
            clock = new FakeClock();
            presenter = new SessionPresenter(clock);
        }

        private static SessionStatus Status(string json)
        {
            return ProtocolJson.Read<SessionStatus>(Json.Q(json));
        }

        private static ResumeResult Result(string json)
        {
            return ProtocolJson.Read<ResumeResult>(Json.Q(json));
        }

        private const string NeedsChoiceJson = @"{'outcome':'needsChoice','sessionId':'sess-12345678abc',
            'breaker':{'status':'open','attempts':3,'maxAttempts':3,'userRetries':0},
            'error':{'kind':'network','message':'ECONNREFUSED','retryable':true,'source':'process'},
            'recovery':{'message':'Cannot connect to claude','detail':'Network error after 3 attempts: ECONNREFUSED',
                        'actions':[{'id':'retry','title':'Try Again'},{'id':'new','title':'Start New Session'}]},'stale':true}";

        [Test]
        public void ResumingShowsAttemptAndADeterminateBar()
        {
            var s = (SetStatus)presenter.OnStatus(Status("{'sessionId':'s','state':'resuming','attempt':2,'maxAttempts':3}")).Single();
            Assert.AreEqual("Resuming\u2026 attempt 2 of 3", s.Text);
            Assert.AreEqual(ProgressKind.Determinate, s.Progress);
            Assert.AreEqual(2, s.Completed);
            Assert.AreEqual(3, s.Total);
            Assert.AreEqual("s", presenter.CurrentSessionId);
        }

        [Test]
        public void ResumingBeforeTheFirstAttemptIsIndeterminate()
        {
            var s = (SetStatus)presenter.OnStatus(Status("{'sessionId':'s','state':'resuming','attempt':0,'maxAttempts':3}")).Single();
            Assert.AreEqual("Resuming\u2026", s.Text);
            Assert.AreEqual(ProgressKind.Indeterminate, s.Progress);
        }

        [Test]
        public void WaitingRetryKeepsTheBar()
        {
            var s = (SetStatus)presenter.OnStatus(Status("{'sessionId':'s','state':'waitingRetry','attempt':1,'maxAttempts':3,'retryInMs':2000,'errorKind':'network'}")).Single();
            Assert.AreEqual("Resuming\u2026 next attempt in 2 s", s.Text);
            Assert.AreEqual(ProgressKind.Determinate, s.Progress);
            Assert.AreEqual(1, s.Completed);
        }

        [Test]
        public void RateLimitedCountsDownWithTheClock()
        {
            var s = (SetStatus)presenter.OnStatus(Status("{'sessionId':'s','state':'rateLimited','attempt':1,'maxAttempts':5,'retryInMs':40000}")).Single();
            Assert.AreEqual("Rate limited, resuming in 40 s", s.Text);
            Assert.AreEqual(ProgressKind.Indeterminate, s.Progress);
            Assert.IsTrue(presenter.CountdownActive);
            clock.Advance(TimeSpan.FromMilliseconds(1500));
            Assert.AreEqual("Rate limited, resuming in 39 s", presenter.RefreshCountdown().Text);
            clock.Advance(TimeSpan.FromSeconds(38));
            Assert.AreEqual("Rate limited, resuming in 1 s", presenter.RefreshCountdown().Text);
            clock.Advance(TimeSpan.FromSeconds(5));
            Assert.AreEqual("Rate limited, resuming now", presenter.RefreshCountdown().Text);
        }

        [Test]
        public void TheNextStatusStopsTheCountdown()
        {
            presenter.OnStatus(Status("{'sessionId':'s','state':'rateLimited','attempt':1,'maxAttempts':5,'retryInMs':40000}"));
            var s = (SetStatus)presenter.OnStatus(Status("{'sessionId':'s','state':'ready','attempt':1,'maxAttempts':5}")).Single();
            Assert.AreEqual("Session ready", s.Text);
            Assert.AreEqual(ProgressKind.None, s.Progress);
            Assert.IsFalse(presenter.CountdownActive);
            Assert.IsNull(presenter.RefreshCountdown());
        }

        [Test]
        public void RateLimitedWithoutADelayHasNoCountdown()
        {
            var s = (SetStatus)presenter.OnStatus(Status("{'sessionId':'s','state':'rateLimited','attempt':1,'maxAttempts':5}")).Single();
            Assert.AreEqual("Rate limited, waiting to resume", s.Text);
            Assert.IsNull(presenter.RefreshCountdown());
        }

        [Test]
        public void FailedNamesTheErrorKind()
        {
            var s = (SetStatus)presenter.OnStatus(Status("{'sessionId':'s','state':'failed','attempt':3,'maxAttempts':3,'errorKind':'authentication'}")).Single();
            Assert.AreEqual("Resume failed: authentication required", s.Text);
            Assert.AreEqual(ProgressKind.None, s.Progress);
        }

        [Test]
        public void TheServersReadyMadeTextWinsAndTheProgressStillFollowsTheState()
        {
            var s = (SetStatus)presenter.OnStatus(Status("{'sessionId':'s','state':'waitingRetry','attempt':1,'maxAttempts':3,'retryInMs':2000,'message':'network error; retrying in 2 s (attempt 2 of 3)'}")).Single();
            Assert.AreEqual("network error; retrying in 2 s (attempt 2 of 3)", s.Text);
            Assert.AreEqual(ProgressKind.Determinate, s.Progress);
            Assert.AreEqual(1, s.Completed);
            var r = (SetStatus)presenter.OnStatus(Status("{'sessionId':'s','state':'rateLimited','attempt':1,'maxAttempts':5,'retryInMs':40000,'message':'Rate limited, resuming in 40 s'}")).Single();
            Assert.AreEqual("Rate limited, resuming in 40 s", r.Text);
            clock.Advance(TimeSpan.FromSeconds(10));
            Assert.AreEqual("Rate limited, resuming in 30 s", presenter.RefreshCountdown().Text, "the countdown keeps the protocol's wording");
            var e = (SetStatus)presenter.OnStatus(Status("{'sessionId':'s','state':'resuming','attempt':2,'maxAttempts':3,'message':''}")).Single();
            Assert.AreEqual("Resuming\u2026 attempt 2 of 3", e.Text, "an empty message is no message");
        }

        [Test]
        public void AnUnknownStateShowsTheServersTextOrNothing()
        {
            var s = (SetStatus)presenter.OnStatus(Status("{'sessionId':'s','state':'warmingUp','attempt':0,'maxAttempts':3,'message':'Warming up'}")).Single();
            Assert.AreEqual("Warming up", s.Text);
            CollectionAssert.IsEmpty(presenter.OnStatus(Status("{'sessionId':'s','state':'warmingUp','attempt':0,'maxAttempts':3}")));
        }

        [Test]
        public void EveryBannerKindBecomesAnInfoBarWithTheServersIdTextAndDismissibility()
        {
            var expected = new Dictionary<string, Severity>
            {
                { "restoreFailed", Severity.Warning }, { "staleSnapshot", Severity.Warning }, { "streamError", Severity.Warning },
                { "persistenceDisabled", Severity.Error }, { "recoveredLive", Severity.Info },
            };
            foreach (var kv in expected)
            {
                foreach (var dismissible in new[] { true, false })
                {
                    var b = ProtocolJson.Read<Banner>(Json.Q("{'id':'id-" + kv.Key + "','sessionId':'s','kind':'" + kv.Key + "','message':'text " + kv.Key + "','dismissible':" + (dismissible ? "true" : "false") + "}"));
                    var bar = (ShowInfoBar)presenter.OnBanner(b).Single();
                    Assert.AreEqual("id-" + kv.Key, bar.Id);
                    Assert.AreEqual(kv.Key, bar.Kind);
                    Assert.AreEqual("text " + kv.Key, bar.Text);
                    Assert.AreEqual(dismissible, bar.Dismissible);
                    Assert.AreEqual(kv.Value, bar.Severity, kv.Key);
                    CollectionAssert.IsEmpty(bar.Actions);
                }
            }
        }

        [Test]
        public void BannerClearedRemovesThatInfoBar()
        {
            var c = (ClearInfoBar)presenter.OnBannerCleared(new BannerCleared { Id = "tether.stale" }).Single();
            Assert.AreEqual("tether.stale", c.Id);
        }

        [Test]
        public void ExpiredIsAnInformationMessageNamingBothSessions()
        {
            var i = (ShowInfo)presenter.OnExpired(new Expired { PreviousSessionId = "old-session-id", SessionId = "new-session-id" }).Single();
            Assert.AreEqual(Severity.Info, i.Severity);
            StringAssert.Contains("new-sess\u2026", i.Text);
            StringAssert.Contains("old-sess\u2026", i.Detail);
            StringAssert.Contains("archived", i.Detail);
            Assert.AreEqual("new-session-id", presenter.CurrentSessionId);
        }

        [Test]
        public void NeedsChoiceIsAModalWithTheServersTextsAndTheTwoButtons()
        {
            var intents = presenter.OnResumeResult(Result(NeedsChoiceJson));
            Assert.AreEqual(SessionPresenter.RecoveryInfoBarId, ((ClearInfoBar)intents[0]).Id, "an old 'offer again' bar goes away when the dialog shows");
            var modal = (ShowModal)intents[1];
            Assert.AreEqual("Cannot connect to claude", modal.Message);
            Assert.AreEqual("Network error after 3 attempts: ECONNREFUSED", modal.Detail);
            CollectionAssert.AreEqual(new[] { "Try Again", "Start New Session" }, modal.ButtonTitles.ToArray());
            CollectionAssert.AreEqual(new[] { "retry", "new" }, modal.Buttons.Select(b => b.Id).ToArray());
            Assert.AreEqual("sess-12345678abc", modal.SessionId);
            Assert.AreSame(modal, presenter.PendingRecovery);
        }

        [Test]
        public void NeedsChoiceWithoutServerTextsUsesSeed000sTexts()
        {
            var expired = SessionPresenter.RecoveryModal("abcdefgh1234", Result(@"{'outcome':'needsChoice','breaker':{'attempts':1,'maxAttempts':3},
                'error':{'kind':'sessionExpired','message':'Session not found','retryable':false,'source':'acp'},'stale':true}"));
            Assert.AreEqual("Previous session not found", expired.Message);
            Assert.AreEqual("Session abcdefgh\u2026 appears to have been deleted or expired.", expired.Detail);
            CollectionAssert.AreEqual(new[] { "Try Again", "Start New Session" }, expired.ButtonTitles.ToArray());

            var network = SessionPresenter.RecoveryModal("s", Result(@"{'outcome':'needsChoice','breaker':{'attempts':3,'maxAttempts':3},
                'error':{'kind':'network','message':'timed out','retryable':true,'source':'process'},'stale':true}"));
            Assert.AreEqual("Cannot connect to the agent", network.Message);
            Assert.AreEqual("Network error after 3 attempts: timed out", network.Detail);

            var other = SessionPresenter.RecoveryModal("s", Result("{'outcome':'needsChoice','breaker':{'attempts':1},'stale':true}"));
            Assert.AreEqual("Failed to resume session", other.Message);
            Assert.AreEqual("Unknown error after 1 attempt", other.Detail);
        }

        [Test]
        public void TheServersActionsAreTheButtonsInItsOrder()
        {
            var onlyNew = SessionPresenter.RecoveryModal("s", Result(@"{'outcome':'needsChoice','recovery':{'message':'m','detail':'d',
                'actions':[{'id':'new','title':'Start Over'},{'id':'login','title':'Log In'}]},'stale':false}"));
            CollectionAssert.AreEqual(new[] { "new" }, onlyNew.Buttons.Select(b => b.Id).ToArray(), "a retry the server left out is not offered; login is not a choice here");
            CollectionAssert.AreEqual(new[] { "Start Over" }, onlyNew.ButtonTitles.ToArray(), "server titles win");

            var reversed = SessionPresenter.RecoveryModal("s", Result(@"{'outcome':'needsChoice','recovery':{'message':'m','detail':'d',
                'actions':[{'id':'new','title':''},{'id':'retry','title':'Retry'}]},'stale':false}"));
            CollectionAssert.AreEqual(new[] { "Start New Session", "Retry" }, reversed.ButtonTitles.ToArray(), "an empty title gets the standard title (R-UI-1)");

            var none = SessionPresenter.RecoveryModal("s", Result(@"{'outcome':'needsChoice','recovery':{'message':'m','detail':'d','actions':[{'id':'login','title':'Log In'}]},'stale':false}"));
            CollectionAssert.AreEqual(new[] { "Try Again", "Start New Session" }, none.ButtonTitles.ToArray());
        }

        [Test]
        public void NeedsChoiceWithoutASessionIdUsesTheOneFromStatus()
        {
            presenter.OnStatus(Status("{'sessionId':'cached-1','state':'resuming','attempt':1,'maxAttempts':3}"));
            var modal = presenter.OnResumeResult(Result("{'outcome':'needsChoice','sessionId':null,'stale':true}")).OfType<ShowModal>().Single();
            Assert.AreEqual("cached-1", modal.SessionId);
            Assert.AreEqual("cached-1", presenter.OnRecoveryAnswer("new").Choice.SessionId);
        }

        [Test]
        public void NeedsChoiceNamingNoSessionAtAllIsAnErrorNotADialog()
        {
            var i = presenter.OnResumeResult(Result("{'outcome':'needsChoice','stale':true}"));
            Assert.AreEqual(Severity.Error, ((ShowInfo)i.Single()).Severity);
            Assert.IsNull(presenter.PendingRecovery);
        }

        [Test]
        public void EachButtonBecomesTheMatchingRecoveryChoice()
        {
            foreach (var button in new[] { "retry", "new" })
            {
                presenter.OnResumeResult(Result(NeedsChoiceJson));
                var d = presenter.OnRecoveryAnswer(button);
                Assert.AreEqual("sess-12345678abc", d.Choice.SessionId);
                Assert.AreEqual(button, d.Choice.Choice);
                Assert.IsTrue(JToken.DeepEquals(Json.Q("{'sessionId':'sess-12345678abc','choice':'" + button + "'}"), ProtocolJson.Write(d.Choice)));
                Assert.AreEqual(SessionPresenter.RecoveryInfoBarId, ((ClearInfoBar)d.Intents.Single()).Id);
                Assert.IsNull(presenter.PendingRecovery);
            }
        }

        [Test]
        public void DismissalIsNoChoiceAndLeavesAnInfoBarThatOffersTheDialogAgain()
        {
            presenter.OnResumeResult(Result(NeedsChoiceJson));
            var d = presenter.OnRecoveryAnswer(null);
            Assert.IsNull(d.Choice, "closing the dialog must not send session/recoveryChoice");
            var bar = (ShowInfoBar)d.Intents.Single();
            Assert.AreEqual(SessionPresenter.RecoveryInfoBarId, bar.Id);
            Assert.AreEqual(Severity.Warning, bar.Severity);
            StringAssert.StartsWith("Cannot connect to claude", bar.Text);
            Assert.AreEqual(SessionPresenter.ReofferActionId, bar.Actions.Single().Id);
            Assert.IsTrue(bar.Dismissible);
            Assert.IsNotNull(presenter.PendingRecovery, "the question stays pending");
            var again = presenter.ReofferRecovery();
            Assert.AreEqual("Cannot connect to claude", again.Message);
            Assert.AreEqual("retry", presenter.OnRecoveryAnswer("retry").Choice.Choice);
        }

        [Test]
        public void AnUnknownButtonIdIsTreatedAsNoChoice()
        {
            presenter.OnResumeResult(Result(NeedsChoiceJson));
            Assert.IsNull(presenter.OnRecoveryAnswer("login").Choice);
        }

        [Test]
        public void AnsweringWithNothingPendingIsAnError()
        {
            Assert.Throws<InvalidOperationException>(() => presenter.OnRecoveryAnswer("retry"));
        }

        [Test]
        public void ResumedAndStartedClearThePendingQuestionAndShowReady()
        {
            foreach (var outcome in new[] { "resumed", "started" })
            {
                presenter.OnResumeResult(Result(NeedsChoiceJson));
                presenter.OnRecoveryAnswer(null);
                var intents = presenter.OnResumeResult(Result("{'outcome':'" + outcome + "','sessionId':'live','breaker':{'status':'closed'},'stale':false}"));
                Assert.AreEqual(SessionPresenter.RecoveryInfoBarId, ((ClearInfoBar)intents[0]).Id);
                Assert.AreEqual("Session ready", ((SetStatus)intents[1]).Text);
                Assert.AreEqual(2, intents.Count);
                Assert.IsNull(presenter.PendingRecovery);
                Assert.AreEqual("live", presenter.CurrentSessionId);
            }
        }

        [Test]
        public void FailedShowsAnErrorWithTheServersTexts()
        {
            var intents = presenter.OnResumeResult(Result(@"{'outcome':'failed','sessionId':null,'breaker':{'status':'open'},
                'error':{'kind':'authentication','message':'401 Unauthorized','retryable':false,'source':'http','code':401},
                'recovery':{'message':'Log in to claude','detail':'Authentication required','actions':[{'id':'login','title':'Log In'}]},'stale':true}"));
            Assert.AreEqual("Resume failed: authentication required", intents.OfType<SetStatus>().Single().Text);
            var info = intents.OfType<ShowInfo>().Single();
            Assert.AreEqual(Severity.Error, info.Severity);
            Assert.AreEqual("Log in to claude", info.Text);
            Assert.AreEqual("Authentication required", info.Detail);
            CollectionAssert.IsEmpty(intents.OfType<ShowModal>().ToList(), "failed is never the retry/new dialog");
        }

        [Test]
        public void FailedWithoutRecoveryTextsUsesTheErrorMessage()
        {
            var info = presenter.OnResumeResult(Result(@"{'outcome':'failed','error':{'kind':'invalidRequest','message':'context too long','retryable':false,'source':'acp'},'stale':false}"))
                .OfType<ShowInfo>().Single();
            Assert.AreEqual("Failed to resume session", info.Text);
            Assert.AreEqual("context too long", info.Detail);
        }

        [Test]
        public void AnUnknownOutcomeIsAWarning()
        {
            var info = presenter.OnResumeResult(Result("{'outcome':'teleported','stale':false}")).OfType<ShowInfo>().Single();
            Assert.AreEqual(Severity.Warning, info.Severity);
        }

        [Test]
        public void PermissionRequestIsAChoiceAmongTheAgentsOptions()
        {
            var req = ProtocolJson.Read<PermissionRequest>(Json.Q(@"{'sessionId':'s','toolCall':{'toolCallId':'t1','title':'Run rm -rf build'},
                'options':[{'optionId':'allow','name':'Allow once','kind':'allow_once'},{'optionId':'always','name':'Always allow','kind':'allow_always'},
                           {'optionId':'reject','name':'Reject','kind':'reject_once'}]}"));
            var ask = presenter.OnPermissionRequest(req);
            Assert.AreEqual("The agent asks for permission: Run rm -rf build", ask.Title);
            CollectionAssert.AreEqual(new[] { "allow", "always", "reject" }, ask.Options.Select(o => o.Id).ToArray());
            CollectionAssert.AreEqual(new[] { "Allow once", "Always allow", "Reject" }, ask.Options.Select(o => o.Label).ToArray());

            Assert.IsTrue(JToken.DeepEquals(Json.Q("{'outcome':{'outcome':'selected','optionId':'always'}}"), SessionPresenter.PermissionAnswer(req, "always")));
            Assert.IsTrue(JToken.DeepEquals(Json.Q("{'outcome':{'outcome':'cancelled'}}"), SessionPresenter.PermissionAnswer(req, null)));
            Assert.IsTrue(JToken.DeepEquals(Json.Q("{'outcome':{'outcome':'cancelled'}}"), SessionPresenter.PermissionAnswer(req, "not-an-option")),
                "an id the agent did not offer is never forwarded");
        }

        [Test]
        public void PermissionRequestWithoutTitleOrNames()
        {
            var req = ProtocolJson.Read<PermissionRequest>(Json.Q("{'sessionId':'s','options':[{'optionId':'x'},{'name':'no id'}]}"));
            var ask = presenter.OnPermissionRequest(req);
            Assert.AreEqual("The agent asks for permission.", ask.Title);
            Assert.AreEqual("x", ask.Options.Single().Label);
        }

        [Test]
        public void ShowMessageRequestFallbackMapsActionsByTitle()
        {
            var ask = SessionPresenter.OnShowMessageRequest(Json.Q("{'type':2,'message':'Previous session not found','actions':[{'title':'Try Again'},{'title':'Start New Session'}]}"));
            Assert.AreEqual("Previous session not found", ask.Title);
            CollectionAssert.AreEqual(new[] { "Try Again", "Start New Session" }, ask.Options.Select(o => o.Id).ToArray());
            Assert.IsTrue(JToken.DeepEquals(Json.Q("{'title':'Start New Session'}"), SessionPresenter.ShowMessageAnswer("Start New Session")));
            Assert.AreEqual(JTokenType.Null, SessionPresenter.ShowMessageAnswer(null).Type);
        }

        [Test]
        public void MessageBoxFallbackLegendAndResults()
        {
            presenter.OnResumeResult(Result(NeedsChoiceJson));
            var modal = presenter.PendingRecovery;
            Assert.AreEqual(MessageBoxButtons.YesNoCancel, MessageBoxFallback.ButtonsFor(modal));
            Assert.AreEqual("Cannot connect to claude\n\nNetwork error after 3 attempts: ECONNREFUSED\n\nYes: Try Again\nNo: Start New Session\nCancel: decide later",
                MessageBoxFallback.Text(modal));
            Assert.AreEqual("retry", MessageBoxFallback.AnswerFor(modal, 6));
            Assert.AreEqual("new", MessageBoxFallback.AnswerFor(modal, 7));
            Assert.IsNull(MessageBoxFallback.AnswerFor(modal, 2));
            Assert.IsNull(MessageBoxFallback.AnswerFor(modal, 0), "a box closed by other means is no choice");
            Assert.IsNull(MessageBoxFallback.AnswerFor(modal, 1), "OK is not a button of a Yes/No/Cancel box");
        }

        [Test]
        public void MessageBoxFallbackWithOneChoiceIsOkCancel()
        {
            var modal = SessionPresenter.RecoveryModal("s", Result(@"{'outcome':'needsChoice','recovery':{'message':'Still failing','detail':'d',
                'actions':[{'id':'new','title':'Start New Session'}]},'stale':false}"));
            Assert.AreEqual(MessageBoxButtons.OkCancel, MessageBoxFallback.ButtonsFor(modal));
            Assert.AreEqual("Still failing\n\nd\n\nOK: Start New Session\nCancel: decide later", MessageBoxFallback.Text(modal));
            Assert.AreEqual("new", MessageBoxFallback.AnswerFor(modal, 1));
            Assert.IsNull(MessageBoxFallback.AnswerFor(modal, 2));
            Assert.IsNull(MessageBoxFallback.AnswerFor(modal, 6));
        }
    }
}
