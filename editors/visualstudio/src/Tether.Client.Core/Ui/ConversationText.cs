using System.Collections.Generic;
using System.Linq;
using System.Text;

namespace Tether.Client.Core.Ui
{
    /// <summary>
    /// The tool window as plain text: what a person would see, line by line, in the order the
    /// WPF window lays it out (stale banner, older turns, the conversation, the permission
    /// question, the handoff offer, the "Continue Here" offer, the status line, the prompt box with its buttons). The tests
    /// assert on it; the window's XAML shows the same fields with the same words (the labels
    /// below are its labels). Pure functions.
    /// </summary>
    public static class ConversationText
    {
        /// <summary>Who an item is from, as its header shows it.</summary>
        public static string Who(ItemKind kind)
        {
            switch (kind)
            {
                case ItemKind.User: return "You";
                case ItemKind.Agent: return "Agent";
                case ItemKind.Thought: return "Thought";
                case ItemKind.Tool: return "Tool call";
                case ItemKind.Plan: return "Plan";
                default: return "Tether";
            }
        }

        /// <summary>A tool call's or plan step's status as a badge: pending, running, done, failed.</summary>
        public static string StatusBadge(string status)
        {
            switch (status)
            {
                case "in_progress": return "running";
                case "completed": return "done";
                default: return status ?? "pending";
            }
        }

        /// <summary>The stale banner's text: Tether's cache, or the agent's own store and file.</summary>
        public static string StaleText(Protocol.RestoredSource source)
        {
            if (source == null) return "Saved transcript: the agent has not confirmed it yet.";
            return "Transcript read from " + SessionRows.AgentName(source.Agent) + "'s own session store, " + source.Path
                + (source.Complete ? "" : " (its latest turns; older ones may exist)") + ": the agent has not confirmed it yet.";
        }

        /// <summary>The line about older turns with its button ("70 older turns [Load older turns]"); empty when the conversation starts here.</summary>
        public static string OlderText(OlderTurns o)
        {
            var caption = OlderCaption(o);
            return o.State == OlderState.Available ? caption + " [Load older turns]" : caption;
        }

        /// <summary>The line about older turns without its button (the window draws the button itself).</summary>
        public static string OlderCaption(OlderTurns o)
        {
            switch (o.State)
            {
                case OlderState.Available: return o.Count + " older turn" + (o.Count == 1 ? "" : "s");
                case OlderState.Loading: return "Loading older turns\u2026";
                case OlderState.Unavailable: return o.Message;
                default: return "";
            }
        }

        /// <summary>One item as lines: a header (<c>You:</c>, <c>Agent:</c>, <c>Tool call [kind] title (status)</c>…) and its body indented.</summary>
        public static IEnumerable<string> Item(ConversationItem item)
        {
            var mark = (item.Restored ? " (saved)" : "") + (item.Open ? " \u2026" : "");
            switch (item.Kind)
            {
                case ItemKind.Tool:
                    var t = item.Tool;
                    yield return "Tool call [" + t.Kind + "] " + t.Title + " (" + StatusBadge(t.Status) + ")" + mark;
                    if (t.FinishedByTether) yield return "  Tether finished this tool call as failed: the agent could not report its result.";
                    foreach (var d in t.Diffs)
                    {
                        yield return "  Diff " + d.Path + (d.OldText == null ? " (new file)" : "");
                        foreach (var l in Lines(d.OldText)) yield return "  - " + l;
                        foreach (var l in Lines(d.NewText)) yield return "  + " + l;
                    }
                    foreach (var l in Lines(t.Output)) yield return "  | " + l;
                    break;
                case ItemKind.Plan:
                    yield return "Plan" + mark + ":";
                    if (item.Plan == null || item.Plan.Count == 0) yield return "  (empty plan)";
                    else foreach (var e in item.Plan) yield return "  [" + StatusBadge(e.Status) + "] " + e.Content + (e.Priority == "high" ? " (high)" : "");
                    break;
                default:
                    var lines = Lines(item.Text).ToList();
                    yield return Who(item.Kind) + mark + ":" + (lines.Count > 0 ? " " + lines[0] : "");
                    foreach (var l in lines.Skip(1)) yield return "  " + l;
                    break;
            }
        }

        /// <summary>An item's header line (what the window shows in bold): the first line of <see cref="Item"/>.</summary>
        public static string Header(ConversationItem item)
        {
            return Item(item).First();
        }

        /// <summary>An item's body (what the window shows under its header, selectable): the other lines of <see cref="Item"/>, unindented by two.</summary>
        public static string Body(ConversationItem item)
        {
            return string.Join("\n", Item(item).Skip(1).Select(l => l.StartsWith("  ", System.StringComparison.Ordinal) ? l.Substring(2) : l));
        }

        /// <summary>The whole window.</summary>
        public static string Render(ConversationView view)
        {
            var sb = new StringBuilder();
            sb.Append("== Tether: ").Append(view.SessionId == null ? "no session" : "session " + view.SessionId).Append(" ==\n");
            if (view.Stale) sb.Append("[!] ").Append(StaleText(view.Source)).Append('\n');
            var older = OlderText(view.Older);
            if (older != "") sb.Append("^ ").Append(older).Append('\n');
            foreach (var item in view.Items)
            {
                foreach (var line in Item(item)) sb.Append(line).Append('\n');
            }
            var p = view.Permission;
            if (p != null)
            {
                sb.Append("? The agent asks for permission: ").Append(p.Title).Append(" [").Append(p.ToolKind).Append("] ")
                  .Append(string.Join(" ", p.Options.Select(o => "[" + o.Label + "]"))).Append('\n');
            }
            var h = view.Handoff;
            if (h != null)
            {
                sb.Append("? ").Append(h.Question).Append(" [").Append(h.AcceptTitle).Append("] [").Append(h.DeclineTitle).Append("]\n");
            }
            var held = view.HeldElsewhere;
            if (held != null) sb.Append("? ").Append(held.Message).Append(" [").Append(held.ActionTitle).Append("]\n");
            var s = view.Status;
            sb.Append("Status: ").Append(s.Text).Append('\n');
            var prompt = view.Prompt;
            sb.Append("Prompt: [Send").Append(prompt.CanSend ? "" : " (disabled)").Append("] [Cancel").Append(prompt.CanCancel ? "" : " (disabled)").Append(']');
            if (!string.IsNullOrEmpty(prompt.Reason)) sb.Append(' ').Append(prompt.Reason);
            sb.Append('\n');
            return sb.ToString();
        }

        private static IEnumerable<string> Lines(string text)
        {
            if (string.IsNullOrEmpty(text)) return Enumerable.Empty<string>();
            return text.TrimEnd('\n').Replace("\r\n", "\n").Split('\n');
        }
    }
}
