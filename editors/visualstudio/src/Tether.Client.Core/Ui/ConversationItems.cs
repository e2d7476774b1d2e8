// The parts of the tool window's view model (ConversationView): items of the conversation and
// the small states around it. Plain data; copies are handed to the UI thread.
using System.Collections.Generic;
using System.Linq;

namespace Tether.Client.Core.Ui
{
    /// <summary>What an item of the conversation is.</summary>
    public enum ItemKind
    {
        /// <summary>The user's prompt.</summary>
        User,
        /// <summary>The agent's answer (ACP <c>agent_message_chunk</c>s).</summary>
        Agent,
        /// <summary>The agent's reasoning (ACP <c>agent_thought_chunk</c>s).</summary>
        Thought,
        /// <summary>A tool call with its status and output (ACP <c>tool_call</c> / <c>tool_call_update</c>).</summary>
        Tool,
        /// <summary>The agent's plan (ACP <c>plan</c>; each update is the whole plan).</summary>
        Plan,
        /// <summary>A line of Tether's own (a turn cancelled or failed, context carried over).</summary>
        Status,
    }

    /// <summary>A tool call as the window shows it.</summary>
    public sealed class ToolView
    {
        /// <summary>The agent's tool call id.</summary>
        public string ToolCallId { get; set; }
        /// <summary>Title, e.g. "Run the tests"; the id when the agent gave none.</summary>
        public string Title { get; set; }
        /// <summary>ACP <c>ToolKind</c> (<c>read</c>, <c>edit</c>, <c>execute</c>, …); <c>other</c> when the agent gave none.</summary>
        public string Kind { get; set; }
        /// <summary><c>pending</c>, <c>in_progress</c>, <c>completed</c> or <c>failed</c>.</summary>
        public string Status { get; set; }
        /// <summary>Text output (content blocks; terminals by id), its last <see cref="ConversationView.MaxToolOutput"/> characters.</summary>
        public string Output { get; set; }
        /// <summary>The diffs of the call's content (ACP <c>{type: "diff", path, oldText, newText}</c>), in the agent's order.</summary>
        public List<DiffView> Diffs { get; set; } = new List<DiffView>();
        /// <summary>Tether finished it as failed itself (the agent died mid-call): the update carried <c>_meta.tether.synthetic</c>.</summary>
        public bool FinishedByTether { get; set; }

        internal ToolView Copy()
        {
            var c = (ToolView)MemberwiseClone();
            c.Diffs = Diffs.Select(d => d.Copy()).ToList();
            return c;
        }
    }

    /// <summary>A file change proposed or made by a tool call.</summary>
    public sealed class DiffView
    {
        /// <summary>The file (absolute, as the agent gave it).</summary>
        public string Path { get; set; }
        /// <summary>The text before; null for a new file.</summary>
        public string OldText { get; set; }
        /// <summary>The text after.</summary>
        public string NewText { get; set; }

        internal DiffView Copy()
        {
            return (DiffView)MemberwiseClone();
        }
    }

    /// <summary>One entry of the agent's plan.</summary>
    public sealed class PlanEntryView
    {
        /// <summary>What the step is.</summary>
        public string Content { get; set; }
        /// <summary><c>pending</c>, <c>in_progress</c> or <c>completed</c>.</summary>
        public string Status { get; set; }
        /// <summary><c>high</c>, <c>medium</c> or <c>low</c>.</summary>
        public string Priority { get; set; }
    }

    /// <summary>One entry of the conversation.</summary>
    public sealed class ConversationItem
    {
        /// <summary>Stable id (<c>t:&lt;turn id&gt;</c> for restored turns, <c>x:&lt;tool call id&gt;</c> for tool calls).</summary>
        public string Id { get; set; }
        /// <summary>What it is.</summary>
        public ItemKind Kind { get; set; }
        /// <summary>Markdown for <see cref="ItemKind.User"/>, <see cref="ItemKind.Agent"/> and <see cref="ItemKind.Thought"/>; plain text for <see cref="ItemKind.Status"/>.</summary>
        public string Text { get; set; }
        /// <summary>From the saved transcript (<c>session/restored</c> or <c>session/history</c>), not a live update.</summary>
        public bool Restored { get; set; }
        /// <summary>Still streaming.</summary>
        public bool Open { get; set; }
        /// <summary>RFC 3339 UTC, when known.</summary>
        public string TimestampUtc { get; set; }
        /// <summary>For <see cref="ItemKind.Tool"/>.</summary>
        public ToolView Tool { get; set; }
        /// <summary>For <see cref="ItemKind.Plan"/>.</summary>
        public List<PlanEntryView> Plan { get; set; }

        internal ConversationItem Copy()
        {
            var c = (ConversationItem)MemberwiseClone();
            c.Tool = Tool != null ? Tool.Copy() : null;
            c.Plan = Plan != null ? Plan.Select(p => new PlanEntryView { Content = p.Content, Status = p.Status, Priority = p.Priority }).ToList() : null;
            return c;
        }
    }

    /// <summary>Whether older turns than those shown exist.</summary>
    public enum OlderState
    {
        /// <summary>The conversation starts here.</summary>
        None,
        /// <summary>The server has <see cref="OlderTurns.Count"/> older turns (<c>chatTurnsBase</c>).</summary>
        Available,
        /// <summary>A <c>session/history</c> page is on its way.</summary>
        Loading,
        /// <summary>They cannot be loaded; <see cref="OlderTurns.Message"/> says why.</summary>
        Unavailable,
    }

    /// <summary>The line above the conversation about older turns.</summary>
    public sealed class OlderTurns
    {
        /// <summary>The state.</summary>
        public OlderState State { get; set; }
        /// <summary>How many older turns the server has.</summary>
        public long Count { get; set; }
        /// <summary>Why they are unavailable.</summary>
        public string Message { get; set; }
    }

    /// <summary>The window's status line.</summary>
    public sealed class StatusLine
    {
        /// <summary><c>idle</c>, <c>live</c>, <c>needsChoice</c>, <c>failed</c>, <c>stopped</c>, or a <c>session/status</c> state (<c>resuming</c>, <c>waitingRetry</c>, <c>rateLimited</c>, <c>agentSilent</c>, <c>ready</c>).</summary>
        public string State { get; set; }
        /// <summary>The text shown.</summary>
        public string Text { get; set; }
    }

    /// <summary>The prompt box: whether Send and Cancel work, and why not.</summary>
    public sealed class PromptState
    {
        /// <summary>Send is enabled.</summary>
        public bool CanSend { get; set; }
        /// <summary>Cancel is enabled (a turn runs).</summary>
        public bool CanCancel { get; set; }
        /// <summary>Why Send is disabled (shown under the box); empty when it is enabled.</summary>
        public string Reason { get; set; }
    }

    /// <summary>An agent's permission question, shown inline with exactly the agent's options.</summary>
    public sealed class PermissionView
    {
        /// <summary>The question's key, given back with the answer (<see cref="TetherSessionController.AnswerPermission"/>).</summary>
        public int Key { get; set; }
        /// <summary>The tool call's title.</summary>
        public string Title { get; set; }
        /// <summary>The tool call's ACP kind.</summary>
        public string ToolKind { get; set; }
        /// <summary>The tool call's id, when given.</summary>
        public string ToolCallId { get; set; }
        /// <summary>The agent's options in its order.</summary>
        public IList<ChoiceOption> Options { get; set; }
    }

    /// <summary>The handoff offer of a long rate-limit or quota wait, shown above the prompt box.</summary>
    public sealed class HandoffView
    {
        /// <summary>The agent offered.</summary>
        public string Agent { get; set; }
        /// <summary>The question, e.g. "Claude's quota resets at 13:00; continue with Codex now?".</summary>
        public string Question { get; set; }
        /// <summary>The accept button, e.g. "Continue with Codex".</summary>
        public string AcceptTitle { get; set; }
        /// <summary>The decline button: "Keep Waiting" (docs/protocol.md, the fallback's wording).</summary>
        public string DeclineTitle { get; set; }
    }
}
