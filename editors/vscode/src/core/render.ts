/**
 * One conversation item → its HTML, for the session view's webview. Pure functions: the
 * webview bundle (`src/webview/main.ts`) calls them per changed item, and the unit tests call
 * them under node.
 *
 * Safety: Markdown is rendered by markdown-it with `html: false`, so any HTML in a message is
 * shown as text, never parsed; markdown-it's `validateLink` refuses `javascript:`, `vbscript:`,
 * `file:` and non-image `data:` links; images are not rendered (`![alt](url)` stays a link, so
 * nothing remote is ever loaded); every other string is escaped here. The webview's
 * Content-Security-Policy (no inline script, no remote content) is the second wall.
 */
import MarkdownIt from 'markdown-it';
import type { RestoredSource } from './protocol';
import { sourceAgentName } from './status';
import type { OlderState, PlanEntryView, PromptState, StatusLine, ViewItem } from './transcript';

const md = new MarkdownIt({ html: false, linkify: true, typographer: false, breaks: false });
md.disable('image');
// Links open outside the webview (VS Code hands http(s) links to the browser).
const defaultLinkOpen = md.renderer.rules.link_open ?? ((tokens, idx, options, _env, self) => self.renderToken(tokens, idx, options));
md.renderer.rules.link_open = (tokens, idx, options, env, self) => {
  tokens[idx]?.attrSet('rel', 'noreferrer noopener');
  return defaultLinkOpen(tokens, idx, options, env, self);
};

const ESC: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ESC[c] ?? c);
}

/** Markdown → HTML (no raw HTML, no images). */
export function renderMarkdown(text: string): string {
  return md.render(text);
}

const WHO: Record<ViewItem['kind'], string> = {
  user: 'You',
  agent: 'Agent',
  thought: 'Thought',
  tool: 'Tool call',
  plan: 'Plan',
  status: 'Tether',
};

const TOOL_STATUS: Record<string, string> = {
  pending: 'pending',
  in_progress: 'running',
  completed: 'done',
  failed: 'failed',
};

/** A status value as a CSS class suffix (letters, digits, dashes only). */
function cls(s: string): string {
  return s.replace(/[^A-Za-z0-9-]/g, '-').toLowerCase();
}

function toolStatusText(status: string): string {
  return TOOL_STATUS[status] ?? status;
}

function planHtml(entries: PlanEntryView[]): string {
  if (entries.length === 0) return '<p class="empty">(empty plan)</p>';
  const rows = entries
    .map(
      (e) =>
        `<li class="plan-${cls(e.status)}"><span class="badge">${escapeHtml(toolStatusText(e.status))}</span> ` +
        `${escapeHtml(e.content)}${e.priority === 'high' ? ' <span class="badge prio">high</span>' : ''}</li>`,
    )
    .join('');
  return `<ol class="plan">${rows}</ol>`;
}

/** The item's accessible name: who, and for tool calls what and how it stands. */
export function itemLabel(item: ViewItem): string {
  if (item.kind === 'tool' && item.tool) {
    return `Tool call ${item.tool.kind}: ${item.tool.title}, ${toolStatusText(item.tool.status)}`;
  }
  return WHO[item.kind];
}

/** The whole `<article>` of one item. */
export function renderItem(item: ViewItem): string {
  const classes = ['turn', item.kind];
  if (item.restored) classes.push('restored');
  if (item.open) classes.push('streaming');
  const attrs =
    `class="${classes.join(' ')}" data-id="${escapeHtml(item.id)}" tabindex="-1" aria-label="${escapeHtml(itemLabel(item))}"` +
    `${item.open ? ' aria-busy="true"' : ''}`;
  const time = item.timestampUtc ? ` title="${escapeHtml(item.timestampUtc)}"` : '';
  switch (item.kind) {
    case 'user':
    case 'agent':
      return `<article ${attrs}><div class="who"${time}>${WHO[item.kind]}</div><div class="md">${renderMarkdown(item.text)}</div></article>`;
    case 'thought':
      return (
        `<article ${attrs}><details><summary class="who">Thought${item.open ? ' (thinking…)' : ''}</summary>` +
        `<div class="md">${renderMarkdown(item.text)}</div></details></article>`
      );
    case 'status':
      return `<article ${attrs}><div class="who">Tether</div><p class="note">${escapeHtml(item.text)}</p></article>`;
    case 'plan':
      return `<article ${attrs}><div class="who">Plan</div>${planHtml(item.plan ?? [])}</article>`;
    case 'tool': {
      const t = item.tool ?? { toolCallId: '', title: '', kind: 'other', status: 'pending', output: '', finishedByTether: false };
      const status = toolStatusText(t.status);
      const note = t.finishedByTether
        ? '<p class="tether-note">Tether finished this tool call as failed: the agent could not report its result.</p>'
        : '';
      const output = t.output
        ? `<details${t.status === 'failed' ? ' open' : ''}><summary>Output</summary><pre class="output">${escapeHtml(t.output)}</pre></details>`
        : '';
      return (
        `<article ${attrs.replace('class="turn tool', `class="turn tool tool-${cls(t.status)}`)}>` +
        `<div class="who"><span class="badge kind">${escapeHtml(t.kind)}</span> <span class="tool-title">${escapeHtml(t.title)}</span> ` +
        `<span class="badge status status-${cls(t.status)}">${escapeHtml(status)}</span></div>${note}${output}</article>`
      );
    }
  }
}

/** The line above the conversation about older turns; empty when the conversation starts here. */
export function olderText(o: OlderState): string {
  switch (o.state) {
    case 'none':
      return '';
    case 'available':
      return `${o.count} older turn${o.count === 1 ? '' : 's'}: scroll up to load them`;
    case 'loading':
      return 'Loading older turns…';
    case 'unavailable':
      return o.message;
  }
}

/** The status line's text and the CSS state class. */
export function statusText(s: StatusLine): { text: string; className: string } {
  return { text: s.text, className: `state-${cls(s.state)}` };
}

/** The prompt box's description: the reason Send is disabled, or a hint. */
export function promptHint(p: PromptState): string {
  return p.reason || 'Enter sends; Shift+Enter adds a line.';
}

/**
 * The stale banner's text (plain text, set as `textContent`): Tether's cache, or, with a
 * `source`, the agent's own store and file the transcript was read from.
 */
export function staleText(source?: RestoredSource): string {
  if (!source) return 'Saved transcript: the agent has not confirmed it yet.';
  const partial = source.complete ? '' : ' (its latest turns; older ones may exist)';
  return `Transcript read from ${sourceAgentName(source.agent)}'s own session store, ${source.path}${partial}: the agent has not confirmed it yet.`;
}
