/**
 * The session view's model: what the conversation panel shows, kept as a list of items, and
 * the small diff operations (`ViewOp`) that bring the webview from one state to the next.
 *
 * The webview never recomputes the conversation: a streamed chunk changes one item and sends
 * one `replace` op; a new turn sends one `append`; older turns come as one `prepend`. Only
 * `session/restored` (a different transcript) and a newly opened panel send a `reset`.
 *
 * No `vscode` import, no DOM: the controller feeds it the server's messages, `src/sessionPanel.ts`
 * posts its ops to the webview, and `src/webview/main.ts` applies them to the DOM (with
 * `render.ts`). It decides nothing about the session: the texts of the status line come from
 * the server's `session/status`, and whether a prompt can be sent follows what the server said.
 */
import { withOfferQuestion } from './handoff';
import { progressMessage } from './status';
import type {
  AcpSessionUpdate,
  ChatTurn,
  ExecTurn,
  RestoredSource,
  SessionSnapshot,
  SessionState,
  StatusParams,
  UpdateParams,
} from './protocol';

export type ItemKind = 'user' | 'agent' | 'thought' | 'tool' | 'plan' | 'status';

export interface ToolView {
  toolCallId: string;
  title: string;
  /** ACP `ToolKind` (`read`, `edit`, `execute`, …); `other` when the agent gave none. */
  kind: string;
  /** `pending`, `in_progress`, `completed` or `failed`. */
  status: string;
  /** Text output (content blocks and diffs as text), bounded by `MAX_TOOL_OUTPUT`. */
  output: string;
  /** Tether finished it as failed itself (the agent died or the session was reloaded). */
  finishedByTether: boolean;
}

export interface PlanEntryView {
  content: string;
  status: string;
  priority: string;
}

/** One entry of the conversation. */
export interface ViewItem {
  id: string;
  kind: ItemKind;
  /** Markdown for `user` and `agent`; plain text for `thought` (rendered as Markdown too) and `status`. */
  text: string;
  /** From the saved transcript (`session/restored` or `session/history`), not a live update. */
  restored?: boolean;
  /** Still streaming. */
  open?: boolean;
  timestampUtc?: string;
  tool?: ToolView;
  plan?: PlanEntryView[];
}

/** What the top of the conversation says about older turns. */
export type OlderState =
  | { state: 'none' } // the conversation starts here
  | { state: 'available'; count: number } // the server has `count` older turns
  | { state: 'loading'; count: number }
  | { state: 'unavailable'; message: string };

/** The status line at the top of the view. */
export interface StatusLine {
  /** `idle`, the server's `SessionState`, or the extension's own `needsChoice` / `stopped`. */
  state: SessionState | 'idle' | 'needsChoice' | 'stopped' | 'restricted' | 'live';
  text: string;
}

/** The prompt box: whether Send and Cancel work, and why not. */
export interface PromptState {
  canSend: boolean;
  canCancel: boolean;
  /** Why Send is disabled (shown under the box and as its description); empty when enabled. */
  reason: string;
}

export interface PermissionView {
  /** The request's key, echoed back with the answer. */
  requestId: number;
  title: string;
  toolKind: string;
  /** Exactly the agent's options, in its order. */
  options: { optionId: string; name: string; kind: string }[];
}

export type ViewOp =
  | { op: 'reset'; sessionId: string; items: ViewItem[]; stale: boolean; source?: RestoredSource }
  | { op: 'append'; item: ViewItem }
  | { op: 'replace'; item: ViewItem }
  | { op: 'prepend'; items: ViewItem[] }
  | { op: 'stale'; stale: boolean }
  | { op: 'older'; older: OlderState }
  | { op: 'status'; status: StatusLine }
  | { op: 'prompt'; prompt: PromptState }
  | { op: 'permission'; permission: PermissionView | null };

/** Messages from the webview to the extension. */
export type WebviewMessage =
  | { type: 'ready' }
  | { type: 'send'; text: string }
  | { type: 'cancel' }
  | { type: 'loadOlder' }
  | { type: 'permission'; requestId: number; optionId: string | null };

/**
 * The status line while the server runs and no session is live (before the start-up resume
 * answers, or when it found nothing to resume: R-RESUME-11). Send stays open: a prompt starts
 * a session.
 */
export const NO_SESSION = 'No session yet. Send a prompt to start one, or run "Tether: Resume Session".';

/** The status line while the view's turn waits for the server connection to come back. */
export const RECONNECTING = 'Reconnecting to the Tether daemon; the turn goes on there';

/** Tool output kept per tool call (the tail). */
export const MAX_TOOL_OUTPUT = 32 * 1024;
/** Turns asked per `session/history` page. */
export const HISTORY_PAGE = 50;

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The text of one ACP content block (text, resource text, a resource link's name). */
function blockText(c: unknown): string {
  if (!isObj(c)) return '';
  if (c.type === 'text' && typeof c.text === 'string') return c.text;
  if (c.type === 'resource_link') return typeof c.name === 'string' ? `[${c.name}]` : '';
  if (c.type === 'resource' && isObj(c.resource) && typeof c.resource.text === 'string') return c.resource.text;
  if (c.type === 'image') return '[image]';
  return '';
}

/** The text of a `tool_call` / `tool_call_update`'s `content` (content blocks, diffs, terminals). */
export function toolContentText(content: unknown): string {
  if (!Array.isArray(content)) return '';
  return content
    .map((c) => {
      if (!isObj(c)) return '';
      if (c.type === 'content') return blockText(c.content);
      if (c.type === 'diff') return `--- ${typeof c.path === 'string' ? c.path : '?'}\n${typeof c.newText === 'string' ? c.newText : ''}`;
      if (c.type === 'terminal') return `[terminal ${typeof c.terminalId === 'string' ? c.terminalId : ''}]`;
      return '';
    })
    .filter((t) => t !== '')
    .join('\n');
}

function tail(text: string): string {
  return text.length > MAX_TOOL_OUTPUT ? `…${text.slice(-MAX_TOOL_OUTPUT)}` : text;
}

function isSynthetic(u: AcpSessionUpdate): boolean {
  const meta = u._meta;
  return isObj(meta) && isObj(meta.tether) && meta.tether.synthetic === true;
}

/** Which of the status line's states block a prompt, and why. */
function blockedReason(status: StatusLine): string | undefined {
  switch (status.state) {
    case 'resuming':
      return 'The session is resuming; the prompt box opens when the agent confirms it.';
    case 'waitingRetry':
    case 'rateLimited':
      // The text may end with the handoff offer's question ("…; continue with Codex now?").
      return `${status.text}${/[.?!]$/.test(status.text) ? '' : '.'} The prompt box opens when the session is back.`;
    case 'agentSilent':
      return undefined; // a turn is running: Cancel stays available
    case 'needsChoice':
      return 'Tether needs your choice first: Try Again or Start New Session.';
    case 'failed':
      return 'The session could not be resumed. Run "Tether: Resume Session" to try again.';
    case 'stopped':
      return 'The Tether server is not running (see "Tether: Show Logs").';
    case 'restricted':
      return 'Restricted Mode: trust this folder ("Workspaces: Manage Workspace Trust") to start an agent.';
    case 'idle':
      // No session yet: sending a prompt starts one (the controller resumes first).
      return undefined;
    case 'ready':
    case 'live':
      return undefined;
  }
}

export class TranscriptModel {
  private items: ViewItem[] = [];
  private readonly byId = new Map<string, ViewItem>();
  /** toolCallId → item id. */
  private readonly tools = new Map<string, string>();
  /** The message item still taking chunks, if any. */
  private openItem: ViewItem | undefined;
  private seq = 0;
  private sessionIdValue: string | undefined;
  private staleValue = false;
  /** Where the restored transcript was read from, when not Tether's cache (`session/restored`'s `source`). */
  private sourceValue: RestoredSource | undefined;
  private olderValue: OlderState = { state: 'none' };
  /** Absolute index of the first chat turn shown (`chatTurnsBase`, lowered by each history page). */
  private baseValue = 0;
  private statusValue: StatusLine = { state: 'idle', text: NO_SESSION };
  private statusAt: { params: StatusParams; at: number } | undefined;
  private live = false;
  private busy = false;
  private permissionValue: PermissionView | null = null;
  private promptValue: PromptState;

  constructor(
    private readonly emit: (op: ViewOp) => void,
    private readonly now: () => number = Date.now,
  ) {
    this.promptValue = this.computePrompt();
  }

  get sessionId(): string | undefined {
    return this.sessionIdValue;
  }
  get stale(): boolean {
    return this.staleValue;
  }
  /** The agent's own store the restored transcript came from; `undefined` for Tether's cache. */
  get source(): RestoredSource | undefined {
    return this.sourceValue;
  }
  /** A prompt turn is running as far as the view knows (Cancel is offered). */
  get turnRunning(): boolean {
    return this.busy;
  }
  get base(): number {
    return this.baseValue;
  }
  get older(): OlderState {
    return this.olderValue;
  }
  get prompt(): PromptState {
    return this.promptValue;
  }
  get status(): StatusLine {
    return this.statusValue;
  }
  get permission(): PermissionView | null {
    return this.permissionValue;
  }
  /** A copy of the items, oldest first. */
  list(): ViewItem[] {
    return this.items.map((i) => ({ ...i }));
  }

  /** Every op that rebuilds the whole view (a newly opened or reloaded webview). */
  fullState(): ViewOp[] {
    return [
      this.resetOp(this.sessionIdValue ?? '', this.list()),
      { op: 'older', older: this.olderValue },
      { op: 'status', status: this.statusValue },
      { op: 'prompt', prompt: this.promptValue },
      { op: 'permission', permission: this.permissionValue },
    ];
  }

  /**
   * `session/restored`: the saved transcript, shown at once and marked stale; `source` when it
   * was read from the agent's own store (the stale banner names it).
   */
  restored(sessionId: string, snapshot: Partial<SessionSnapshot> & { chatTurnsBase?: unknown }, source?: RestoredSource, stale = true): void {
    this.clear(sessionId);
    this.sourceValue = source;
    const turns = Array.isArray(snapshot.chatTurns) ? snapshot.chatTurns : [];
    const execs = Array.isArray(snapshot.execTurns) ? snapshot.execTurns : [];
    this.items = this.fromSnapshot(turns, execs);
    for (const i of this.items) this.byId.set(i.id, i);
    this.baseValue = typeof snapshot.chatTurnsBase === 'number' && snapshot.chatTurnsBase > 0 ? snapshot.chatTurnsBase : 0;
    this.olderValue = this.baseValue > 0 ? { state: 'available', count: this.baseValue } : { state: 'none' };
    this.staleValue = stale;
    this.emit(this.resetOp(sessionId, this.list()));
    this.emit({ op: 'older', older: this.olderValue });
  }

  /** A new session (started, or replacing an expired one): an empty conversation. */
  startedSession(sessionId: string): void {
    if (this.sessionIdValue === sessionId) return;
    this.clear(sessionId);
    this.emit({ op: 'reset', sessionId, items: [], stale: false });
    this.emit({ op: 'older', older: this.olderValue });
  }

  /** The agent confirmed the session (or the server cleared the stale banner): the stale mark goes. */
  confirmed(): void {
    if (!this.staleValue) return;
    this.staleValue = false;
    this.emit({ op: 'stale', stale: false });
  }

  /** A `session/update` (already checked by `parseUpdate`). */
  update(p: UpdateParams): void {
    if (this.sessionIdValue !== undefined && p.sessionId !== this.sessionIdValue) return;
    // Events before any transcript: a daemon replays a live session's missed events before
    // the answer to `session/resume` (a reloaded window), so the view adopts their session
    // instead of clearing them when the answer names it.
    this.sessionIdValue ??= p.sessionId;
    // A replay (`session/load`) restates history the restored transcript already shows; it
    // is drawn only when nothing was restored.
    if (p.replay && this.items.some((i) => i.restored)) return;
    const u = p.update;
    switch (u.sessionUpdate) {
      case 'user_message_chunk':
        // A live prompt echo is a turn another editor (or this window before a reload) started.
        if (!p.replay && !this.busy) {
          this.busy = true;
          this.refreshPrompt();
        }
        return this.chunk('user', blockText(u.content));
      case 'agent_message_chunk':
        return this.chunk('agent', blockText(u.content));
      case 'agent_thought_chunk':
        return this.chunk('thought', blockText(u.content));
      case 'tool_call':
        return this.toolCall(u);
      case 'tool_call_update':
        return this.toolCallUpdate(u);
      case 'plan':
        return this.plan(u);
      default:
        return;
    }
  }

  /** The user sent a prompt from the view or the command (agents do not echo it). */
  userPrompt(text: string): void {
    this.closeOpen();
    this.add({ id: this.nextId('u'), kind: 'user', text, timestampUtc: new Date(this.now()).toISOString() });
    this.busy = true;
    this.refreshPrompt();
  }

  /** The prompt turn ended (its answer, or its failure: `error` then says why). */
  turnEnded(stopReason: string | undefined, error?: string): void {
    this.closeOpen();
    this.busy = false;
    if (error) this.add({ id: this.nextId('s'), kind: 'status', text: `The prompt failed: ${error}` });
    else if (stopReason && stopReason !== 'end_turn') this.add({ id: this.nextId('s'), kind: 'status', text: stopText(stopReason) });
    this.refreshPrompt();
  }

  /** `session/status`. */
  onStatus(s: StatusParams): void {
    this.statusAt = { params: s, at: this.now() };
    const text = withOfferQuestion(progressMessage(s, 0) ?? (s.state === 'ready' ? 'Session is live' : 'Resume failed'), s);
    this.setStatus({ state: s.state, text });
    this.live = s.state === 'ready' || s.state === 'agentSilent';
    this.refreshPrompt();
  }

  /** Once a second while a countdown runs: the status line counts down. */
  tick(): void {
    const last = this.statusAt;
    if (!last || (last.params.state !== 'rateLimited' && last.params.state !== 'waitingRetry')) return;
    const countdown = progressMessage(last.params, this.now() - last.at);
    const text = countdown && withOfferQuestion(countdown, last.params);
    if (text && text !== this.statusValue.text) {
      this.statusValue = { state: last.params.state, text };
      this.emit({ op: 'status', status: this.statusValue });
      this.refreshPrompt();
    }
  }

  /** What the controller learnt from a resume result or the server's lifecycle. */
  setLive(sessionId: string | undefined): void {
    this.live = sessionId !== undefined;
    this.statusAt = undefined;
    this.setStatus(sessionId ? { state: 'live', text: 'Session is live' } : { state: 'idle', text: NO_SESSION });
    this.refreshPrompt();
  }
  /**
   * The server connection was lost while this view's turn runs in the daemon: the turn stays
   * open (Cancel is offered once the session is back) and the status line says so.
   */
  reconnecting(): void {
    this.live = false;
    this.statusAt = undefined;
    this.setStatus({ state: 'resuming', text: RECONNECTING });
    this.refreshPrompt();
  }
  needsChoice(message: string): void {
    this.live = false;
    this.statusAt = undefined;
    this.setStatus({ state: 'needsChoice', text: `${message}: choose Try Again or Start New Session` });
    this.refreshPrompt();
  }
  failed(message: string): void {
    this.live = false;
    this.busy = false;
    this.statusAt = undefined;
    this.setStatus({ state: 'failed', text: message });
    this.refreshPrompt();
  }
  serverStopped(): void {
    this.live = false;
    this.busy = false;
    this.statusAt = undefined;
    this.setStatus({ state: 'stopped', text: 'Tether server is not running' });
    this.refreshPrompt();
  }
  /** Restricted Mode: no server, no agent until the folder is trusted; `reason` says so. */
  restricted(reason: string): void {
    this.live = false;
    this.busy = false;
    this.statusAt = undefined;
    this.setStatus({ state: 'restricted', text: reason });
    this.refreshPrompt();
  }

  /** A permission question to show inline; `null` removes it (answered, or cancelled by the turn). */
  setPermission(p: PermissionView | null): void {
    this.permissionValue = p;
    this.emit({ op: 'permission', permission: p });
  }

  /** Whether older turns can be asked for now; marks them loading when so. */
  beginLoadOlder(): { sessionId: string; beforeTurn: number; limit: number } | undefined {
    if (this.olderValue.state !== 'available' || !this.sessionIdValue) return undefined;
    this.olderValue = { state: 'loading', count: this.olderValue.count };
    this.emit({ op: 'older', older: this.olderValue });
    return { sessionId: this.sessionIdValue, beforeTurn: this.baseValue, limit: HISTORY_PAGE };
  }

  /**
   * A `session/history` page: older chat turns, oldest first, and their `chatTurnsBase`
   * (the server's; without it, the old base less the page's length).
   */
  olderLoaded(turns: ChatTurn[], base?: number): void {
    const page = this.fromSnapshot(turns, []).filter((i) => !this.byId.has(i.id));
    this.baseValue = base !== undefined && base < this.baseValue ? base : Math.max(0, this.baseValue - turns.length);
    for (const i of page) this.byId.set(i.id, i);
    this.items = page.concat(this.items);
    this.olderValue = this.baseValue > 0 && turns.length > 0 ? { state: 'available', count: this.baseValue } : { state: 'none' };
    if (page.length > 0) this.emit({ op: 'prepend', items: page.map((i) => ({ ...i })) });
    this.emit({ op: 'older', older: this.olderValue });
  }

  /** The server cannot give older turns (`session/history` unknown, -32601, or failed). */
  olderUnavailable(message: string): void {
    this.olderValue = { state: 'unavailable', message };
    this.emit({ op: 'older', older: this.olderValue });
  }

  // --- internals ---

  private resetOp(sessionId: string, items: ViewItem[]): ViewOp {
    return { op: 'reset', sessionId, items, stale: this.staleValue, ...(this.sourceValue ? { source: { ...this.sourceValue } } : {}) };
  }

  private clear(sessionId: string): void {
    this.sessionIdValue = sessionId;
    this.sourceValue = undefined;
    this.items = [];
    this.byId.clear();
    this.tools.clear();
    this.openItem = undefined;
    this.staleValue = false;
    this.baseValue = 0;
    this.olderValue = { state: 'none' };
  }

  private fromSnapshot(turns: ChatTurn[], execs: ExecTurn[]): ViewItem[] {
    const out: ViewItem[] = [];
    const execById = new Map(execs.filter((e) => isObj(e) && typeof e.execId === 'string').map((e) => [e.execId, e]));
    const placed = new Set<string>();
    const execItem = (e: ExecTurn): ViewItem => {
      placed.add(e.execId);
      const id = `x:${e.execId}`;
      this.tools.set(e.execId, id);
      return {
        id,
        kind: 'tool',
        text: '',
        restored: true,
        tool: {
          toolCallId: e.execId,
          title: e.header || e.command || e.execId,
          kind: 'execute',
          status: e.status || 'pending',
          output: tail(e.buffer || ''),
          finishedByTether: false,
        },
      };
    };
    turns.forEach((t, n) => {
      if (!isObj(t) || typeof t.text !== 'string') return;
      const kind: ItemKind = t.role === 'user' ? 'user' : t.role === 'assistant' ? 'agent' : 'status';
      out.push({
        id: `t:${typeof t.id === 'string' && t.id ? t.id : `${this.baseValue}-${n}`}`,
        kind,
        text: t.text,
        restored: true,
        ...(typeof t.timestampUtc === 'string' ? { timestampUtc: t.timestampUtc } : {}),
      });
      const linked = typeof t.linkedExecId === 'string' ? execById.get(t.linkedExecId) : undefined;
      if (linked && !placed.has(linked.execId)) out.push(execItem(linked));
    });
    for (const e of execById.values()) if (!placed.has(e.execId)) out.push(execItem(e));
    return out;
  }

  private nextId(prefix: string): string {
    return `${prefix}:${++this.seq}`;
  }

  private add(item: ViewItem): void {
    this.items.push(item);
    this.byId.set(item.id, item);
    this.emit({ op: 'append', item: { ...item } });
  }

  private changed(item: ViewItem): void {
    this.emit({ op: 'replace', item: { ...item, ...(item.tool ? { tool: { ...item.tool } } : {}) } });
  }

  private closeOpen(): void {
    const open = this.openItem;
    this.openItem = undefined;
    if (open?.open) {
      delete open.open;
      this.changed(open);
    }
  }

  private chunk(kind: 'user' | 'agent' | 'thought', text: string): void {
    if (text === '') return;
    const open = this.openItem;
    if (open?.kind === kind) {
      open.text += text;
      this.changed(open);
      return;
    }
    this.closeOpen();
    const item: ViewItem = { id: this.nextId(kind[0] ?? 'm'), kind, text, open: true, timestampUtc: new Date(this.now()).toISOString() };
    this.openItem = item;
    this.add(item);
  }

  private toolCall(u: AcpSessionUpdate): void {
    this.closeOpen();
    const callId = typeof u.toolCallId === 'string' ? u.toolCallId : this.nextId('call');
    const existing = this.tools.get(callId);
    const tool: ToolView = {
      toolCallId: callId,
      title: typeof u.title === 'string' && u.title ? u.title : callId,
      kind: typeof u.kind === 'string' ? u.kind : 'other',
      status: typeof u.status === 'string' ? u.status : 'pending',
      output: tail(toolContentText(u.content)),
      finishedByTether: isSynthetic(u),
    };
    if (existing) {
      const item = this.byId.get(existing);
      // A call reported again while it runs is the same call; an id reused after the call
      // finished (some agents number per turn) is a new one.
      if (item?.tool && item.tool.status !== 'completed' && item.tool.status !== 'failed') {
        item.tool = tool;
        this.changed(item);
        return;
      }
    }
    const id = this.byId.has(`x:${callId}`) ? `x:${callId}#${++this.seq}` : `x:${callId}`;
    this.tools.set(callId, id);
    this.add({ id, kind: 'tool', text: '', tool });
  }

  private toolCallUpdate(u: AcpSessionUpdate): void {
    const callId = typeof u.toolCallId === 'string' ? u.toolCallId : undefined;
    if (!callId) return;
    const itemId = this.tools.get(callId);
    const item = itemId ? this.byId.get(itemId) : undefined;
    if (!item?.tool) {
      // An update for a call the view never saw (e.g. before a restart): show it as one.
      this.toolCall({ ...u, sessionUpdate: 'tool_call' });
      return;
    }
    const t = item.tool;
    if (typeof u.title === 'string' && u.title) t.title = u.title;
    if (typeof u.kind === 'string') t.kind = u.kind;
    if (typeof u.status === 'string') t.status = u.status;
    const out = toolContentText(u.content);
    // ACP: `content` in an update replaces the tool call's content.
    if (Array.isArray(u.content)) t.output = tail(out);
    if (isSynthetic(u)) t.finishedByTether = true;
    this.changed(item);
  }

  private plan(u: AcpSessionUpdate): void {
    this.closeOpen();
    const entries = Array.isArray(u.entries) ? u.entries : [];
    const plan: PlanEntryView[] = entries.filter(isObj).map((e) => ({
      content: typeof e.content === 'string' ? e.content : '',
      status: typeof e.status === 'string' ? e.status : 'pending',
      priority: typeof e.priority === 'string' ? e.priority : 'medium',
    }));
    // ACP: each plan update is the whole plan; the last plan item of the turn is replaced.
    const last = this.items[this.items.length - 1];
    if (last?.kind === 'plan') {
      last.plan = plan;
      this.changed(last);
      return;
    }
    this.add({ id: this.nextId('p'), kind: 'plan', text: '', plan });
  }

  private setStatus(s: StatusLine): void {
    if (s.state === this.statusValue.state && s.text === this.statusValue.text) return;
    this.statusValue = s;
    this.emit({ op: 'status', status: s });
  }

  private computePrompt(): PromptState {
    const blocked = this.live || this.statusValue.state === 'idle' ? undefined : (blockedReason(this.statusValue) ?? 'No session is live.');
    if (blocked) return { canSend: false, canCancel: this.busy, reason: blocked };
    if (this.busy) return { canSend: false, canCancel: true, reason: 'The agent is answering; Cancel stops the turn.' };
    return { canSend: true, canCancel: false, reason: '' };
  }

  private refreshPrompt(): void {
    const next = this.computePrompt();
    const cur = this.promptValue;
    if (next.canSend === cur.canSend && next.canCancel === cur.canCancel && next.reason === cur.reason) return;
    this.promptValue = next;
    this.emit({ op: 'prompt', prompt: next });
  }
}

function stopText(stopReason: string): string {
  switch (stopReason) {
    case 'cancelled':
      return 'Turn cancelled.';
    case 'max_tokens':
      return 'The agent stopped: it reached its token limit.';
    case 'max_turn_requests':
      return 'The agent stopped: it reached its request limit for this turn.';
    case 'refusal':
      return 'The agent refused to continue.';
    default:
      return `The turn ended: ${stopReason}.`;
  }
}
