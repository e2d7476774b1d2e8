// UI intents: what the editor should show, decided here (no Visual Studio types), rendered by the
// host (Visual Studio: VsShellUtilities/IVsInfoBarUIFactory/IVsStatusbar; tests: a recorder).
using System.Collections.Generic;
using System.Linq;

namespace Tether.Client.Core.Ui
{
    /// <summary>Something the editor should show or remove.</summary>
    public abstract class UiIntent
    {
    }

    /// <summary>A button of a modal dialog.</summary>
    public sealed class ModalButton
    {
        /// <summary>Creates a button.</summary>
        public ModalButton(string id, string title)
        {
            Id = id;
            Title = title;
        }

        /// <summary>Answer id (<c>retry</c>/<c>new</c> for the recovery dialog).</summary>
        public string Id { get; private set; }
        /// <summary>Button text.</summary>
        public string Title { get; private set; }
    }

    /// <summary>
    /// A modal dialog with a message, a detail line and buttons; closing it without a button is
    /// "no answer" (for the recovery dialog: no choice, the breaker stays open).
    /// </summary>
    public sealed class ShowModal : UiIntent
    {
        /// <summary>The session the question is about.</summary>
        public string SessionId { get; set; }
        /// <summary>Main text, e.g. "Previous session not found".</summary>
        public string Message { get; set; }
        /// <summary>Secondary text: error and attempt count.</summary>
        public string Detail { get; set; }
        /// <summary>Buttons in display order.</summary>
        public IList<ModalButton> Buttons { get; set; }

        /// <summary>Titles of <see cref="Buttons"/>, in order.</summary>
        public IEnumerable<string> ButtonTitles
        {
            get { return Buttons.Select(b => b.Title); }
        }
    }

    /// <summary>How a status-bar progress indicator is drawn.</summary>
    public enum ProgressKind
    {
        /// <summary>No progress indicator.</summary>
        None,
        /// <summary>A bar at <c>Completed / Total</c>.</summary>
        Determinate,
        /// <summary>An animation (waiting for something with no count).</summary>
        Indeterminate,
    }

    /// <summary>Status-bar text and progress.</summary>
    public sealed class SetStatus : UiIntent
    {
        /// <summary>Text, e.g. "Resuming… attempt 2 of 3".</summary>
        public string Text { get; set; }
        /// <summary>Indicator kind.</summary>
        public ProgressKind Progress { get; set; }
        /// <summary>Steps done (for <see cref="ProgressKind.Determinate"/>).</summary>
        public int Completed { get; set; }
        /// <summary>Total steps (for <see cref="ProgressKind.Determinate"/>).</summary>
        public int Total { get; set; }

        /// <inheritdoc />
        public override string ToString()
        {
            return "SetStatus(" + Text + ", " + Progress + " " + Completed + "/" + Total + ")";
        }
    }

    /// <summary>Severity of a message or info bar (its icon).</summary>
    public enum Severity
    {
        /// <summary>Information.</summary>
        Info,
        /// <summary>Warning.</summary>
        Warning,
        /// <summary>Error.</summary>
        Error,
    }

    /// <summary>A clickable action in an info bar.</summary>
    public sealed class InfoBarAction
    {
        /// <summary>Creates an action.</summary>
        public InfoBarAction(string id, string title)
        {
            Id = id;
            Title = title;
        }

        /// <summary>Action id passed back when clicked.</summary>
        public string Id { get; private set; }
        /// <summary>Link/button text.</summary>
        public string Title { get; private set; }
    }

    /// <summary>An info bar (banner) at the top of the main window; a later one with the same id replaces it.</summary>
    public sealed class ShowInfoBar : UiIntent
    {
        /// <summary>Banner id.</summary>
        public string Id { get; set; }
        /// <summary>Server banner kind, or <c>recoveryPending</c> for the client's own "offer the dialog again" bar.</summary>
        public string Kind { get; set; }
        /// <summary>Icon.</summary>
        public Severity Severity { get; set; }
        /// <summary>Text.</summary>
        public string Text { get; set; }
        /// <summary>Whether it has a close button.</summary>
        public bool Dismissible { get; set; }
        /// <summary>Actions (may be empty).</summary>
        public IList<InfoBarAction> Actions { get; set; } = new List<InfoBarAction>();
    }

    /// <summary>Remove the info bar with <see cref="Id"/> (no-op when absent).</summary>
    public sealed class ClearInfoBar : UiIntent
    {
        /// <summary>Banner id.</summary>
        public string Id { get; set; }
    }

    /// <summary>A non-blocking message (Visual Studio: a message box with OK; VS Code: a notification).</summary>
    public sealed class ShowInfo : UiIntent
    {
        /// <summary>Icon.</summary>
        public Severity Severity { get; set; }
        /// <summary>Main text.</summary>
        public string Text { get; set; }
        /// <summary>Detail, may be null.</summary>
        public string Detail { get; set; }
    }

    /// <summary>An option of <see cref="AskChoice"/>.</summary>
    public sealed class ChoiceOption
    {
        /// <summary>Creates an option.</summary>
        public ChoiceOption(string id, string label)
        {
            Id = id;
            Label = label;
        }

        /// <summary>Answer id.</summary>
        public string Id { get; private set; }
        /// <summary>Label.</summary>
        public string Label { get; private set; }
    }

    /// <summary>A question with a list of options (an agent's permission question); no answer is allowed.</summary>
    public sealed class AskChoice : UiIntent
    {
        /// <summary>Question.</summary>
        public string Title { get; set; }
        /// <summary>Detail, may be null.</summary>
        public string Detail { get; set; }
        /// <summary>Options in the agent's order.</summary>
        public IList<ChoiceOption> Options { get; set; }
    }
}
