using System;
using System.Linq;
using System.Threading;
using System.Threading.Tasks;
using System.Windows;
using System.Windows.Controls;
using System.Windows.Input;
using System.Windows.Media;
using Microsoft.VisualStudio.Shell;
using Tether.Client.Core;
using Tether.Client.Core.Ui;

namespace Tether.VisualStudio
{
    /// <summary>
    /// The tool window's WPF control: copies Core's <see cref="ConversationView"/> into the XAML
    /// on each <see cref="ConversationView.Changed"/> (on the UI thread) and turns clicks into
    /// calls of <see cref="TetherSessionController"/>. No decision is made here: every text comes
    /// from <see cref="ConversationText"/> and <see cref="SessionRows"/>, every enabled state
    /// from <see cref="PromptState"/>; what Core's tests render as text is what this shows.
    /// </summary>
    public partial class SessionToolWindowControl : UserControl
    {
        private TetherSessionController controller;
        private int shownCount;

        /// <summary>Creates the control; it shows "not running" until <see cref="Bind"/>.</summary>
        public SessionToolWindowControl()
        {
            InitializeComponent();
            // Permission questions are asked inline while the window is shown, else as a dialog.
            IsVisibleChanged += (s, e) => { if (controller != null) controller.AskPermissionsInline = IsVisible; };
            StatusLine.Text = "The Tether server is not running yet; it starts with the first code file you open.";
            SendButton.IsEnabled = false;
            CancelButton.IsEnabled = false;
        }

        /// <summary>Shows <paramref name="c"/>'s conversation (a new one after the server started or restarted).</summary>
        public void Bind(TetherSessionController c)
        {
            ThreadHelper.ThrowIfNotOnUIThread();
            if (controller != null) controller.Conversation.Changed -= OnChanged;
            controller = c;
            if (c == null) return;
            c.AskPermissionsInline = IsVisible;
            c.Conversation.Changed += OnChanged;
            Refresh();
        }

        private void OnChanged(object sender, EventArgs e)
        {
            Dispatcher.BeginInvoke(new Action(Refresh));
        }

        private void Refresh()
        {
            var c = controller;
            if (c == null) return;
            var v = c.Conversation;
            SessionTitle.Text = v.SessionId == null ? "No session" : "Session " + StatusText.ShortId(v.SessionId);
            StaleBanner.Visibility = v.Stale ? Visibility.Visible : Visibility.Collapsed;
            StaleText.Text = ConversationText.StaleText(v.Source);

            var older = v.Older;
            OlderText.Text = ConversationText.OlderCaption(older);
            LoadOlderButton.Visibility = older.State == OlderState.Available ? Visibility.Visible : Visibility.Collapsed;

            var items = v.Items;
            Conversation.ItemsSource = items.Select(i => new ItemRow(i)).ToList();
            if (items.Count != shownCount)
            {
                shownCount = items.Count;
                Scroller.ScrollToEnd();
            }

            var p = v.Permission;
            PermissionPanel.Visibility = p != null ? Visibility.Visible : Visibility.Collapsed;
            if (p != null)
            {
                PermissionQuestion.Text = "The agent asks for permission: " + p.Title + " [" + p.ToolKind + "]";
                PermissionPanel.Tag = p.Key;
                PermissionOptions.ItemsSource = p.Options;
            }

            var h = v.Handoff;
            HandoffPanel.Visibility = h != null ? Visibility.Visible : Visibility.Collapsed;
            if (h != null)
            {
                HandoffQuestion.Text = h.Question;
                HandoffAccept.Content = h.AcceptTitle;
                HandoffDecline.Content = h.DeclineTitle;
            }

            StatusLine.Text = v.Status.Text;
            var prompt = v.Prompt;
            SendButton.IsEnabled = prompt.CanSend;
            CancelButton.IsEnabled = prompt.CanCancel;
            PromptReason.Text = prompt.Reason;
        }

        private void OnSend(object sender, RoutedEventArgs e)
        {
            var text = PromptBox.Text;
            if (controller == null || string.IsNullOrWhiteSpace(text) || !controller.Conversation.Prompt.CanSend) return;
            PromptBox.Clear();
            Run("Send", ct => controller.SendAsync(text, ct));
        }

        private void OnPromptKey(object sender, KeyEventArgs e)
        {
            // Enter sends; Shift+Enter adds a line (as in the VS Code extension).
            if (e.Key == Key.Enter && (Keyboard.Modifiers & ModifierKeys.Shift) == 0)
            {
                e.Handled = true;
                OnSend(sender, e);
            }
        }

        private void OnCancel(object sender, RoutedEventArgs e)
        {
            Run("Cancel", ct => controller.CancelTurnAsync());
        }

        private void OnLoadOlder(object sender, RoutedEventArgs e)
        {
            Run("Load older turns", ct => controller.LoadOlderAsync(ct));
        }

        private void OnPermissionOption(object sender, RoutedEventArgs e)
        {
            var key = PermissionPanel.Tag as int?;
            var optionId = (sender as FrameworkElement)?.Tag as string;
            if (controller != null && key.HasValue) controller.AnswerPermission(key.Value, optionId);
        }

        private void OnHandoffAccept(object sender, RoutedEventArgs e)
        {
            Run("Continue with another agent", ct => controller.AcceptHandoffAsync(ct));
        }

        private void OnHandoffDecline(object sender, RoutedEventArgs e)
        {
            controller?.DeclineHandoff();
        }

        private void OnShowSessions(object sender, RoutedEventArgs e)
        {
            var c = controller;
            if (c == null) return;
            ThreadHelper.JoinableTaskFactory.RunAsync(async () =>
            {
                try
                {
                    var rows = await c.ListSessionsAsync(CancellationToken.None);
                    await ThreadHelper.JoinableTaskFactory.SwitchToMainThreadAsync();
                    SessionsList.ItemsSource = rows;
                    SessionsPanel.Visibility = Visibility.Visible;
                }
                catch (Exception ex)
                {
                    Report("Show Sessions", ex);
                }
            }).FileAndForget("tether/show-sessions");
        }

        private void OnOpenSession(object sender, RoutedEventArgs e)
        {
            var row = SessionsList.SelectedItem as SessionRow;
            if (row == null || controller == null) return;
            SessionsPanel.Visibility = Visibility.Collapsed;
            Run("Open session", ct => controller.OpenSessionAsync(row.SessionId, ct));
        }

        private void OnCloseSessions(object sender, RoutedEventArgs e)
        {
            SessionsPanel.Visibility = Visibility.Collapsed;
        }

        private void Run(string name, Func<CancellationToken, Task> action)
        {
            if (controller == null) return;
            ThreadHelper.JoinableTaskFactory.RunAsync(async () =>
            {
                try
                {
                    await action(CancellationToken.None);
                }
                catch (Exception ex)
                {
                    Report(name, ex);
                }
            }).FileAndForget("tether/tool-window");
        }

        private static void Report(string name, Exception e)
        {
            var package = TetherPackage.Instance;
            package?.Log.Write(name + " failed: " + e);
            package?.Ui.Apply(TetherSessionController.DescribeFailure(name, e));
        }

        /// <summary>One conversation item as the template binds it: Core's header and body (public: WPF binds public types only).</summary>
        public sealed class ItemRow
        {
            public ItemRow(ConversationItem item)
            {
                Header = ConversationText.Header(item);
                Body = ConversationText.Body(item);
                // Tool output, diffs and plans keep their columns.
                Font = item.Kind == ItemKind.Tool || item.Kind == ItemKind.Plan ? new FontFamily("Consolas") : SystemFonts.MessageFontFamily;
            }

            public string Header { get; private set; }
            public string Body { get; private set; }
            public FontFamily Font { get; private set; }
            public Visibility BodyVisibility { get { return string.IsNullOrEmpty(Body) ? Visibility.Collapsed : Visibility.Visible; } }
        }
    }
}
