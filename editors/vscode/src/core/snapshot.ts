/**
 * The extension's minimal model of the session it shows, sent as `session/persist`'s
 * `snapshot` (shape: docs/protocol.md's `SessionSnapshot`, fields from R-STORE-1).
 *
 * The server owns the authoritative cache: it journals every update it forwards and
 * reconciles on resume. This model only adds what the server cannot see (the editor's UI state,
 * e.g. a stream error banner the user dismissed) and keeps the cache current between the
 * server's own writes. It starts from `session/restored` and follows live `session/update`s;
 * replayed updates (`replay: true`, an agent's `session/load` history) are not appended,
 * because the restored snapshot already holds that history and the server reconciles the two.
 *
 * Bounds: an exec buffer keeps its last `MAX_EXEC_BUFFER` characters and counts the rest in
 * `truncatedBytes` (UTF-8 bytes); at most `MAX_TURNS` chat turns are kept (the oldest go first).
 */
import type { AcpSessionUpdate, ChatTurn, ExecTurn, PersistTrigger, SessionSnapshot, UpdateParams } from './protocol';

export const MAX_EXEC_BUFFER = 64 * 1024;
export const MAX_TURNS = 2000;

// ESC [ … final byte, and ESC ] … BEL/ST (OSC) sequences.
// eslint-disable-next-line no-control-regex
const ANSI = /\u001b\[[0-?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)/g;

/** `text` without ANSI escape sequences. */
export function stripAnsi(text: string): string {
  return text.replace(ANSI, '');
}

function emptySnapshot(workingDir: string): SessionSnapshot {
  return {
    chatTurns: [],
    execTurns: [],
    diffSessions: [],
    approvals: { pending: [] },
    uiState: { isStreamErrorVisible: false },
    context: { workingDir },
  };
}

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Text of an ACP content block, or of `tool_call_update.content` entries (`{type:"content", content:{type:"text"}}`). */
function textOf(update: AcpSessionUpdate): string {
  if (update.content && typeof update.content === 'object' && !Array.isArray(update.content)) {
    return update.content.type === 'text' && typeof update.content.text === 'string' ? update.content.text : '';
  }
  if (Array.isArray(update.content)) {
    return (update.content as unknown[])
      .map((c) => (isObj(c) && isObj(c.content) && c.content.type === 'text' && typeof c.content.text === 'string' ? c.content.text : ''))
      .join('');
  }
  return '';
}

export class SnapshotModel {
  private snap: SessionSnapshot;
  private counter = 0;
  private rev = 0;

  /** `now` gives RFC 3339 timestamps for new turns (an injected clock). */
  constructor(
    private readonly workingDir: string,
    private readonly now: () => Date,
  ) {
    this.snap = emptySnapshot(workingDir);
  }

  /** Increases on every change; the persist scheduler saves only when it moved. */
  get revision(): number {
    return this.rev;
  }

  /** Starts over from a restored snapshot (tolerating missing arrays). */
  restore(s: Partial<SessionSnapshot>): void {
    const base = emptySnapshot(this.workingDir);
    this.snap = {
      chatTurns: Array.isArray(s.chatTurns) ? s.chatTurns.slice(-MAX_TURNS) : base.chatTurns,
      execTurns: Array.isArray(s.execTurns) ? s.execTurns : base.execTurns,
      diffSessions: Array.isArray(s.diffSessions) ? s.diffSessions : base.diffSessions,
      approvals: isObj(s.approvals) && Array.isArray(s.approvals.pending) ? s.approvals : base.approvals,
      uiState: isObj(s.uiState) ? { ...base.uiState, ...s.uiState } : base.uiState,
      context: isObj(s.context) ? { ...s.context, workingDir: s.context.workingDir || this.workingDir } : base.context,
      ...(isObj(s.telemetry) ? { telemetry: s.telemetry } : {}),
    };
    this.counter = this.snap.chatTurns.length + this.snap.execTurns.length;
    this.rev++;
  }

  /** Forgets everything (a new session replaced the old one). */
  reset(): void {
    this.snap = emptySnapshot(this.workingDir);
    this.counter = 0;
    this.rev++;
  }

  /**
   * Applies a live update; returns the milestone trigger it completes (R-UI-6:
   * `execCompleted` when a tool call ends), if any.
   */
  apply(p: UpdateParams): PersistTrigger | undefined {
    if (p.replay) return undefined;
    const u = p.update;
    switch (u.sessionUpdate) {
      case 'user_message_chunk':
        this.appendChat('user', textOf(u));
        return undefined;
      case 'agent_message_chunk':
        this.appendChat('assistant', textOf(u));
        return undefined;
      case 'tool_call': {
        this.finishOpenTurn();
        const id = typeof u.toolCallId === 'string' ? u.toolCallId : `exec-${++this.counter}`;
        const title = typeof u.title === 'string' ? u.title : id;
        const exec: ExecTurn = {
          execId: id,
          header: title,
          command: title,
          status: typeof u.status === 'string' ? u.status : 'pending',
          buffer: '',
          truncatedBytes: 0,
        };
        this.snap.execTurns = this.snap.execTurns.filter((e) => e.execId !== id).concat(exec);
        this.appendOutput(exec, textOf(u));
        this.rev++;
        return this.isDone(exec.status) ? 'execCompleted' : undefined;
      }
      case 'tool_call_update': {
        const exec = this.snap.execTurns.find((e) => e.execId === u.toolCallId);
        if (!exec) return undefined;
        const wasDone = this.isDone(exec.status);
        if (typeof u.title === 'string') exec.header = u.title;
        if (typeof u.status === 'string') exec.status = u.status;
        this.appendOutput(exec, textOf(u));
        this.rev++;
        return !wasDone && this.isDone(exec.status) ? 'execCompleted' : undefined;
      }
      default:
        return undefined;
    }
  }

  /**
   * Starts a prompt turn the editor sent (agents do not echo the user's prompt as updates);
   * returns the number of chat turns before it, for `replySince`.
   */
  beginPromptTurn(text: string): number {
    this.finishOpenTurn();
    const mark = this.snap.chatTurns.length;
    this.appendChat('user', text);
    this.finishOpenTurn();
    return mark;
  }

  /** Ends the turn in progress (the prompt's response arrived: `turnFinalized`, R-UI-6). */
  finishTurn(): void {
    const before = this.snap.chatTurns.some((t) => !t.complete);
    this.finishOpenTurn();
    if (before) this.rev++;
  }

  /** The assistant text of the turns after `mark` (see `beginPromptTurn`). */
  replySince(mark: number): string {
    return this.snap.chatTurns
      .slice(mark)
      .filter((t) => t.role === 'assistant')
      .map((t) => t.text)
      .join('');
  }

  /** The title of a tool call the agent reported (`tool_call`), if known. */
  toolTitle(toolCallId: string): string | undefined {
    return this.snap.execTurns.find((e) => e.execId === toolCallId)?.header;
  }

  /** Records whether the stream error banner is visible (R-STORE-1, R-UI-3: the stream error banner). */
  setStreamError(state: { visible: boolean; text?: string }): void {
    const ui = this.snap.uiState;
    if (ui.isStreamErrorVisible === state.visible && ui.streamErrorText === state.text) return;
    this.snap.uiState = { ...ui, isStreamErrorVisible: state.visible };
    if (state.text !== undefined) this.snap.uiState.streamErrorText = state.text;
    else delete this.snap.uiState.streamErrorText;
    this.rev++;
  }

  /** A deep copy of the snapshot, with its telemetry counters filled in. */
  toSnapshot(): SessionSnapshot {
    const s = structuredClone(this.snap);
    s.telemetry = {
      turnCount: s.chatTurns.filter((t) => t.role !== 'status').length,
      execCount: s.execTurns.length,
    };
    return s;
  }

  private isDone(status: string): boolean {
    return status === 'completed' || status === 'failed';
  }

  private finishOpenTurn(): void {
    const last = this.snap.chatTurns[this.snap.chatTurns.length - 1];
    if (last && !last.complete) last.complete = true;
  }

  private appendChat(role: 'user' | 'assistant', text: string): void {
    if (text === '') return;
    const last = this.snap.chatTurns[this.snap.chatTurns.length - 1];
    if (last?.role === role && !last.complete) {
      last.text += text;
    } else {
      this.finishOpenTurn();
      const turn: ChatTurn = {
        id: `turn-${++this.counter}`,
        role,
        text,
        timestampUtc: this.now().toISOString(),
        complete: false,
      };
      this.snap.chatTurns.push(turn);
      if (this.snap.chatTurns.length > MAX_TURNS) this.snap.chatTurns.shift();
    }
    this.rev++;
  }

  private appendOutput(exec: ExecTurn, text: string): void {
    if (text === '') return;
    let buffer = exec.buffer + stripAnsi(text);
    if (buffer.length > MAX_EXEC_BUFFER) {
      const dropped = buffer.slice(0, buffer.length - MAX_EXEC_BUFFER);
      exec.truncatedBytes += Buffer.byteLength(dropped, 'utf8');
      buffer = buffer.slice(-MAX_EXEC_BUFFER);
    }
    exec.buffer = buffer;
  }
}
