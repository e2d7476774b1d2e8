using System;
using System.Collections.Generic;
using System.Linq;
using System.Threading.Tasks;
using Microsoft.VisualStudio;
using Microsoft.VisualStudio.Imaging;
using Microsoft.VisualStudio.Imaging.Interop;
using Microsoft.VisualStudio.Shell;
using Microsoft.VisualStudio.Shell.Interop;
using Microsoft.VisualStudio.Threading;
using Tether.Client.Core;
using Tether.Client.Core.Ui;
using Task = System.Threading.Tasks.Task;

namespace Tether.VisualStudio
{
    /// <summary>
    /// Renders Core's <see cref="UiIntent"/>s with Visual Studio's shell services. Every decision
    /// was made in Core (<see cref="SessionPresenter"/>); this class only draws.
    /// <list type="bullet">
    /// <item><see cref="SetStatus"/> → <see cref="IVsStatusbar"/>: text, a progress bar (<c>Progress</c>)
    /// or the general animation (<c>Animation</c>, SBAI_General).</item>
    /// <item><see cref="ShowInfoBar"/>/<see cref="ClearInfoBar"/> → an info bar in the main window
    /// (<see cref="IVsInfoBarUIFactory"/> + <see cref="InfoBarModel"/>), by id.</item>
    /// <item><see cref="ShowInfo"/> → information: a dismissible info bar; warning/error:
    /// <c>VsShellUtilities.ShowMessageBox</c> with OK.</item>
    /// <item><see cref="ShowModalAsync"/> → <see cref="ChoiceDialog"/> with the server's button titles;
    /// if it cannot be shown, <c>VsShellUtilities.ShowMessageBox</c> Yes/No/Cancel with
    /// <see cref="MessageBoxFallback"/>'s legend.</item>
    /// <item><see cref="AskChoiceAsync"/> → <see cref="ChoiceDialog"/> with one button per option.</item>
    /// </list>
    /// </summary>
    internal sealed class VsTetherUi : ITetherUi, IVsInfoBarUIEvents
    {
        private const string InfoBarInfoId = "tether.info";
        private readonly AsyncPackage package;
        private readonly JoinableTaskFactory jtf;
        private readonly ILog log;
        private readonly Dictionary<string, IVsInfoBarUIElement> bars = new Dictionary<string, IVsInfoBarUIElement>();
        private readonly Dictionary<IVsInfoBarUIElement, uint> cookies = new Dictionary<IVsInfoBarUIElement, uint>();
        private uint progressCookie;
        private bool animating;

        public VsTetherUi(AsyncPackage package, ILog log)
        {
            this.package = package;
            jtf = package.JoinableTaskFactory;
            this.log = log;
        }

        /// <summary>Raised (on the main thread) when the user clicks an info bar action; the argument is the action id.</summary>
        public event Action<string> InfoBarAction;

        /// <inheritdoc />
        public void Apply(UiIntent intent)
        {
            // Fire and forget onto the main thread; failures are logged, never thrown into the RPC layer.
            jtf.RunAsync(async () =>
            {
                await jtf.SwitchToMainThreadAsync();
                try
                {
                    ApplyOnMainThread(intent);
                }
                catch (Exception e)
                {
                    log.Write("could not show " + intent.GetType().Name + ": " + e.Message);
                }
            }).FileAndForget("tether/ui/apply");
        }

        private void ApplyOnMainThread(UiIntent intent)
        {
            ThreadHelper.ThrowIfNotOnUIThread();
            var status = intent as SetStatus;
            if (status != null)
            {
                SetStatus(status);
                return;
            }
            var bar = intent as ShowInfoBar;
            if (bar != null)
            {
                ShowBar(bar.Id, bar.Text, bar.Severity, bar.Dismissible, bar.Actions);
                return;
            }
            var clear = intent as ClearInfoBar;
            if (clear != null)
            {
                CloseBar(clear.Id);
                return;
            }
            var info = intent as ShowInfo;
            if (info != null)
            {
                if (info.Severity == Severity.Info)
                {
                    var text = string.IsNullOrEmpty(info.Detail) ? info.Text : info.Text + " " + info.Detail;
                    ShowBar(InfoBarInfoId, text, Severity.Info, true, new List<InfoBarAction>());
                }
                else
                {
                    VsShellUtilities.ShowMessageBox(package, info.Detail ?? "", info.Text,
                        info.Severity == Severity.Error ? OLEMSGICON.OLEMSGICON_CRITICAL : OLEMSGICON.OLEMSGICON_WARNING,
                        OLEMSGBUTTON.OLEMSGBUTTON_OK, OLEMSGDEFBUTTON.OLEMSGDEFBUTTON_FIRST);
                }
            }
        }

        private void SetStatus(SetStatus s)
        {
            ThreadHelper.ThrowIfNotOnUIThread();
            var bar = (IVsStatusbar)ServiceProvider.GlobalProvider.GetService(typeof(SVsStatusbar));
            if (bar == null)
            {
                return;
            }
            int frozen;
            bar.IsFrozen(out frozen);
            if (frozen != 0)
            {
                bar.FreezeOutput(0);
            }
            object icon = (short)Constants.SBAI_General;
            if (s.Progress == ProgressKind.Determinate)
            {
                StopAnimation(bar, ref icon);
                bar.Progress(ref progressCookie, 1, "Tether: " + s.Text, (uint)s.Completed, (uint)s.Total);
            }
            else
            {
                bar.Progress(ref progressCookie, 0, "", 0, 0);
                if (s.Progress == ProgressKind.Indeterminate)
                {
                    if (!animating)
                    {
                        bar.Animation(1, ref icon);
                        animating = true;
                    }
                }
                else
                {
                    StopAnimation(bar, ref icon);
                }
            }
            bar.SetText("Tether: " + s.Text);
        }

        private void StopAnimation(IVsStatusbar bar, ref object icon)
        {
            ThreadHelper.ThrowIfNotOnUIThread();
            if (animating)
            {
                bar.Animation(0, ref icon);
                animating = false;
            }
        }

        private void ShowBar(string id, string text, Severity severity, bool dismissible, IList<InfoBarAction> actions)
        {
            ThreadHelper.ThrowIfNotOnUIThread();
            CloseBar(id);
            var shell = (IVsShell)ServiceProvider.GlobalProvider.GetService(typeof(SVsShell));
            var factory = (IVsInfoBarUIFactory)ServiceProvider.GlobalProvider.GetService(typeof(SVsInfoBarUIFactory));
            object hostObj = null;
            if (shell == null || factory == null
                || ErrorHandler.Failed(shell.GetProperty((int)__VSSPROPID7.VSSPROPID_MainWindowInfoBarHost, out hostObj)))
            {
                log.Write("no info bar host; banner: " + text);
                return;
            }
            var host = hostObj as IVsInfoBarHost;
            if (host == null)
            {
                return;
            }
            var links = actions.Select(a => (IVsInfoBarActionItem)new InfoBarHyperlink(a.Title, a.Id)).ToList();
            ImageMoniker image = severity == Severity.Error ? KnownMonikers.StatusError
                : severity == Severity.Warning ? KnownMonikers.StatusWarning
                : KnownMonikers.StatusInformation;
            var model = new InfoBarModel("Tether: " + text, links, image, dismissible);
            var element = factory.CreateInfoBar(model);
            uint cookie;
            element.Advise(this, out cookie);
            cookies[element] = cookie;
            bars[id] = element;
            host.AddInfoBar(element);
        }

        private void CloseBar(string id)
        {
            ThreadHelper.ThrowIfNotOnUIThread();
            IVsInfoBarUIElement element;
            if (bars.TryGetValue(id, out element))
            {
                bars.Remove(id);
                element.Close(); // raises OnClosed, which unadvises
            }
        }

        /// <inheritdoc />
        public void OnClosed(IVsInfoBarUIElement infoBarUIElement)
        {
            ThreadHelper.ThrowIfNotOnUIThread();
            uint cookie;
            if (cookies.TryGetValue(infoBarUIElement, out cookie))
            {
                infoBarUIElement.Unadvise(cookie);
                cookies.Remove(infoBarUIElement);
            }
            foreach (var kv in bars.Where(kv => kv.Value == infoBarUIElement).ToList())
            {
                bars.Remove(kv.Key);
            }
        }

        /// <inheritdoc />
        public void OnActionItemClicked(IVsInfoBarUIElement infoBarUIElement, IVsInfoBarActionItem actionItem)
        {
            ThreadHelper.ThrowIfNotOnUIThread();
            var id = actionItem.ActionContext as string;
            if (id != null)
            {
                infoBarUIElement.Close();
                InfoBarAction?.Invoke(id);
            }
        }

        /// <inheritdoc />
        public async Task<string> ShowModalAsync(ShowModal modal)
        {
            await jtf.SwitchToMainThreadAsync();
            var buttons = modal.Buttons.Select(b => new KeyValuePair<string, string>(b.Id, b.Title)).ToList();
            try
            {
                return ChoiceDialog.Ask("Tether", modal.Message, modal.Detail, buttons);
            }
            catch (Exception e) when (!(e is OperationCanceledException))
            {
                log.Write("themed dialog failed (" + e.Message + "); asking with a message box");
                var buttonSet = MessageBoxFallback.ButtonsFor(modal) == MessageBoxButtons.YesNoCancel
                    ? OLEMSGBUTTON.OLEMSGBUTTON_YESNOCANCEL
                    : OLEMSGBUTTON.OLEMSGBUTTON_OKCANCEL;
                var result = VsShellUtilities.ShowMessageBox(package, MessageBoxFallback.Text(modal), "Tether",
                    OLEMSGICON.OLEMSGICON_WARNING, buttonSet, OLEMSGDEFBUTTON.OLEMSGDEFBUTTON_FIRST);
                return MessageBoxFallback.AnswerFor(modal, result);
            }
        }

        /// <inheritdoc />
        public async Task<string> AskChoiceAsync(AskChoice choice)
        {
            await jtf.SwitchToMainThreadAsync();
            var buttons = choice.Options.Select(o => new KeyValuePair<string, string>(o.Id, o.Label)).ToList();
            return ChoiceDialog.Ask("Tether", choice.Title, choice.Detail, buttons);
        }
    }
}
