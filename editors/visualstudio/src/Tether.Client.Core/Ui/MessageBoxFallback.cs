using System.Collections.Generic;
using System.Text;

namespace Tether.Client.Core.Ui
{
    /// <summary>Which standard message box buttons a <see cref="MessageBoxFallback"/> layout uses.</summary>
    public enum MessageBoxButtons
    {
        /// <summary>OK / Cancel: one choice (OK) or none.</summary>
        OkCancel,
        /// <summary>Yes / No / Cancel: two choices or none.</summary>
        YesNoCancel,
    }

    /// <summary>
    /// A modal laid out for a standard message box, whose buttons cannot be renamed (Visual
    /// Studio's <c>VsShellUtilities.ShowMessageBox</c> takes an <c>OLEMSGBUTTON</c>: OK, OK/Cancel,
    /// Yes/No, Yes/No/Cancel, Retry/Cancel, Abort/Retry/Ignore). Used only when the themed dialog
    /// with the real button titles cannot be shown. Two choices become Yes/No/Cancel, one becomes
    /// OK/Cancel, with a legend naming what each standard button does; Cancel or closing the box is
    /// no choice. Results are Win32 dialog result codes (winuser.h <c>IDOK</c> = 1,
    /// <c>IDCANCEL</c> = 2, <c>IDYES</c> = 6, <c>IDNO</c> = 7), the values ShowMessageBox returns.
    /// </summary>
    public static class MessageBoxFallback
    {
        /// <summary>winuser.h IDOK.</summary>
        public const int IdOk = 1;
        /// <summary>winuser.h IDCANCEL.</summary>
        public const int IdCancel = 2;
        /// <summary>winuser.h IDYES.</summary>
        public const int IdYes = 6;
        /// <summary>winuser.h IDNO.</summary>
        public const int IdNo = 7;

        /// <summary>The standard buttons for <paramref name="modal"/>: Yes/No/Cancel for two or more buttons (the first two are used), else OK/Cancel.</summary>
        public static MessageBoxButtons ButtonsFor(ShowModal modal)
        {
            return modal.Buttons.Count >= 2 ? MessageBoxButtons.YesNoCancel : MessageBoxButtons.OkCancel;
        }

        /// <summary>The body: message, detail, then the legend, e.g. "Yes: Try Again", "No: Start New Session", "Cancel: decide later".</summary>
        public static string Text(ShowModal modal)
        {
            var sb = new StringBuilder();
            sb.Append(modal.Message);
            if (!string.IsNullOrEmpty(modal.Detail))
            {
                sb.Append("\n\n").Append(modal.Detail);
            }
            sb.Append("\n\n");
            var names = ButtonsFor(modal) == MessageBoxButtons.YesNoCancel ? new[] { "Yes", "No" } : new[] { "OK" };
            for (int i = 0; i < names.Length && i < modal.Buttons.Count; i++)
            {
                sb.Append(names[i]).Append(": ").Append(modal.Buttons[i].Title).Append('\n');
            }
            sb.Append("Cancel: decide later");
            return sb.ToString();
        }

        /// <summary>The button id for a message box result, or null (no choice) for Cancel, a closed box or any other code.</summary>
        public static string AnswerFor(ShowModal modal, int dialogResult)
        {
            IList<ModalButton> b = modal.Buttons;
            if (ButtonsFor(modal) == MessageBoxButtons.YesNoCancel)
            {
                if (dialogResult == IdYes) return b[0].Id;
                if (dialogResult == IdNo) return b[1].Id;
                return null;
            }
            return dialogResult == IdOk && b.Count == 1 ? b[0].Id : null;
        }
    }
}
