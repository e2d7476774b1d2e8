using System.Collections.Generic;
using System.Windows;
using System.Windows.Controls;
using Microsoft.VisualStudio.PlatformUI;

namespace Tether.VisualStudio
{
    /// <summary>
    /// A themed modal dialog with a message, a detail line and one button per choice, built in
    /// code (no XAML). Used for the recovery dialog, whose buttons must read exactly "Try Again"
    /// and "Start New Session", which <c>VsShellUtilities.ShowMessageBox</c> cannot do (its
    /// <c>OLEMSGBUTTON</c> sets have fixed labels), and for an agent's permission question.
    /// Closing it with Esc or × is "no answer".
    /// </summary>
    internal sealed class ChoiceDialog : DialogWindow
    {
        private string answer;

        private ChoiceDialog(string title, string message, string detail, IList<KeyValuePair<string, string>> buttons)
        {
            Title = title;
            SizeToContent = SizeToContent.WidthAndHeight;
            ResizeMode = ResizeMode.NoResize;
            WindowStartupLocation = WindowStartupLocation.CenterOwner;
            HasMinimizeButton = false;
            HasMaximizeButton = false;
            MaxWidth = 640;

            var root = new StackPanel { Margin = new Thickness(16) };
            root.Children.Add(new TextBlock { Text = message, FontWeight = FontWeights.Bold, TextWrapping = TextWrapping.Wrap, Margin = new Thickness(0, 0, 0, 8) });
            if (!string.IsNullOrEmpty(detail))
            {
                root.Children.Add(new TextBlock { Text = detail, TextWrapping = TextWrapping.Wrap, Margin = new Thickness(0, 0, 0, 16) });
            }
            var row = new StackPanel { Orientation = Orientation.Horizontal, HorizontalAlignment = HorizontalAlignment.Right };
            for (int i = 0; i < buttons.Count; i++)
            {
                var id = buttons[i].Key;
                var button = new Button { Content = buttons[i].Value, MinWidth = 96, Padding = new Thickness(12, 4, 12, 4), Margin = new Thickness(8, 0, 0, 0), IsDefault = i == 0 };
                button.Click += (s, e) =>
                {
                    answer = id;
                    DialogResult = true;
                };
                row.Children.Add(button);
            }
            root.Children.Add(row);
            Content = root;
        }

        /// <summary>Shows the dialog modally over the main window; returns the clicked button's id, or null when closed without one. Main thread only.</summary>
        public static string Ask(string title, string message, string detail, IList<KeyValuePair<string, string>> buttons)
        {
            var dialog = new ChoiceDialog(title, message, detail, buttons);
            var ok = dialog.ShowModal();
            return ok == true ? dialog.answer : null;
        }
    }
}
