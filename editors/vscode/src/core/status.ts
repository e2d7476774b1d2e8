/**
 * `session/status` → what the status bar item and the progress notification say.
 *
 * Texts come from R-RESUME-9 ("Resuming…" status during retries): "Resuming… attempt
 * 2 of 3", "Rate limited, resuming in 40 s". A waiting state counts down: the view is computed
 * from the time the status arrived and the current time of an injected clock, so the UI layer
 * only has to re-render once a second.
 */
import type { RestoredSource, StatusParams } from './protocol';

/** How the status bar item should look. `icon` is a codicon name (`sync~spin`, `check`, …). */
export interface StatusView {
  icon: string;
  /** Short text after the icon. */
  text: string;
  tooltip: string;
  severity: 'normal' | 'warning' | 'error';
  /** What the item runs when clicked. */
  command: 'tether.resumeSession' | 'tether.showLogs' | 'workbench.trust.manage';
}

/** What the progress notification should do after a status change. */
export type ProgressIntent =
  | { kind: 'none' }
  | { kind: 'show'; message: string }
  | { kind: 'close' };

/** `ms` as whole seconds rounded up ("40 s"), minutes past 90 s ("2 min 5 s"). */
export function formatDelay(ms: number): string {
  const total = Math.max(0, Math.ceil(ms / 1000));
  if (total < 90) return `${total} s`;
  const min = Math.floor(total / 60);
  const sec = total % 60;
  return sec === 0 ? `${min} min` : `${min} min ${sec} s`;
}

/** First 8 characters of a session id followed by an ellipsis, as the recovery dialog shows it (R-UI-2). */
export function shortId(id: string): string {
  return id.length > 8 ? `${id.slice(0, 8)}…` : id;
}

/**
 * The progress message for a status, `elapsedMs` after it arrived; `undefined` for the terminal
 * states (`ready`, `failed`), which close the progress notification.
 */
export function progressMessage(s: StatusParams, elapsedMs: number): string | undefined {
  const remaining = Math.max(0, (s.retryInMs ?? 0) - elapsedMs);
  // A countdown that reached zero before the next status arrived says "now", not "in 0 s".
  const when = (prefix: string): string => (remaining > 0 ? `${prefix} in ${formatDelay(remaining)}` : `${prefix} now`);
  switch (s.state) {
    case 'resuming':
      return s.maxAttempts > 0 ? `Resuming… attempt ${s.attempt} of ${s.maxAttempts}` : 'Resuming…';
    case 'waitingRetry':
      return s.maxAttempts > 0
        ? `Resuming… attempt ${s.attempt} of ${s.maxAttempts} failed, ${when('retrying')}`
        : `Resuming… ${when('retrying')}`;
    case 'rateLimited':
      return s.retryInMs !== undefined
        ? `Rate limited, ${when('resuming')}`
        : 'Rate limited, resuming when the agent allows';
    case 'agentSilent':
      // Mid-turn, the agent has said nothing for a while (it may be retrying by itself).
      return s.message || 'The agent is silent; waiting for it';
    case 'ready':
    case 'failed':
      return undefined;
  }
}

/** The status bar view of a status, `elapsedMs` after it arrived. */
export function statusView(s: StatusParams, elapsedMs: number): StatusView {
  const session = s.sessionId ? `Session ${shortId(s.sessionId)}` : 'Session';
  switch (s.state) {
    case 'resuming':
    case 'waitingRetry':
      return {
        icon: 'sync~spin',
        text: progressMessage(s, elapsedMs) ?? 'Resuming…',
        tooltip: `${session}: resuming${s.errorKind ? ` (last error: ${s.errorKind})` : ''}`,
        severity: 'normal',
        command: 'tether.showLogs',
      };
    case 'rateLimited':
      return {
        icon: 'watch',
        text: progressMessage(s, elapsedMs) ?? 'Rate limited',
        tooltip: `${session}: the agent is rate limited; Tether resumes the same session when the wait is over`,
        severity: 'warning',
        command: 'tether.showLogs',
      };
    case 'agentSilent':
      return {
        icon: 'watch',
        text: 'Tether: agent silent',
        tooltip: `${session}: ${s.message || 'the agent has sent nothing for a while'}`,
        severity: 'normal',
        command: 'tether.showLogs',
      };
    case 'ready':
      return {
        icon: 'check',
        text: 'Tether',
        tooltip: `${session} is live`,
        severity: 'normal',
        command: 'tether.showLogs',
      };
    case 'failed':
      return {
        icon: 'error',
        text: 'Tether: resume failed',
        tooltip: `${session}: resume failed${s.errorKind ? ` (${s.errorKind})` : ''}. Click to resume again.`,
        severity: 'error',
        command: 'tether.resumeSession',
      };
  }
}

/** Status bar views of the states the extension knows before or besides any `session/status`. */
export const LocalStatus = {
  starting: (): StatusView => ({
    icon: 'sync~spin',
    text: 'Tether: starting…',
    tooltip: 'Starting tether serve',
    severity: 'normal',
    command: 'tether.showLogs',
  }),
  /**
   * The server runs and no session is live: before the start-up resume answers, or after it
   * found nothing to resume (`nothingToResume`, R-RESUME-11). Not an error: a prompt starts a
   * session, and so does a click (Resume Session).
   */
  idle: (): StatusView => ({
    icon: 'plug',
    text: 'Tether',
    tooltip:
      'Tether is running; no session yet. A prompt starts one ("Tether: Send Prompt" or the session view, "Tether: Open Session"), or click to start a session now.',
    severity: 'normal',
    command: 'tether.resumeSession',
  }),
  /** Restricted Mode: nothing starts until the folder is trusted (click: manage trust). */
  restricted: (reason: string): StatusView => ({
    icon: 'shield',
    text: 'Tether: Restricted Mode',
    tooltip: reason,
    severity: 'warning',
    command: 'workbench.trust.manage',
  }),
  serverUnavailable: (reason: string): StatusView => ({
    icon: 'error',
    text: 'Tether: server unavailable',
    tooltip: reason,
    severity: 'error',
    command: 'tether.showLogs',
  }),
  restoredStale: (sessionId: string, source?: RestoredSource): StatusView => ({
    icon: 'history',
    text: source ? `Tether: ${sourceAgentName(source.agent)} transcript` : 'Tether: cached transcript',
    tooltip: source
      ? `Session ${shortId(sessionId)}: showing the transcript read from ${sourceAgentName(source.agent)}'s own session store (${source.path}); the agent has not confirmed it yet`
      : `Session ${shortId(sessionId)}: showing the cached transcript; the agent has not confirmed it yet`,
    severity: 'normal',
    command: 'tether.showLogs',
  }),
  needsChoice: (message: string): StatusView => ({
    icon: 'warning',
    text: 'Tether: choose how to recover',
    tooltip: `${message}. Click to choose "Try Again" or "Start New Session".`,
    severity: 'warning',
    command: 'tether.resumeSession',
  }),
  live: (sessionId: string, stale: boolean): StatusView => ({
    icon: 'check',
    text: 'Tether',
    tooltip: `Session ${shortId(sessionId)} is live${stale ? ' (parts of the transcript are stale)' : ''}`,
    severity: 'normal',
    command: 'tether.showLogs',
  }),
  /** The server connection was lost mid-turn; the turn goes on in the daemon until the window re-attaches. */
  reconnecting: (sessionId: string): StatusView => ({
    icon: 'sync~spin',
    text: 'Tether: reconnecting…',
    tooltip: `Session ${shortId(sessionId)}: the connection to tether serve was lost; the turn goes on in the Tether daemon and is re-attached when the server is back`,
    severity: 'normal',
    command: 'tether.showLogs',
  }),
  failed: (message: string): StatusView => ({
    icon: 'error',
    text: 'Tether: resume failed',
    tooltip: `${message}. Click to resume again.`,
    severity: 'error',
    command: 'tether.resumeSession',
  }),
};

/**
 * Remembers the last `session/status` and when it arrived, and says what the progress
 * notification must do. Progress opens on the first non-terminal state and closes on `ready`
 * or `failed`, or when the caller calls `close()` (a `needsChoice` result: the modal takes over).
 */
export class StatusTracker {
  private last: { status: StatusParams; at: number } | undefined;
  private progressOpen = false;

  constructor(private readonly now: () => number) {}

  /** Records a status; returns the status bar view and the progress intent. */
  apply(status: StatusParams): { view: StatusView; progress: ProgressIntent } {
    this.last = { status, at: this.now() };
    const message = progressMessage(status, 0);
    const view = statusView(status, 0);
    if (message === undefined) {
      const wasOpen = this.progressOpen;
      this.progressOpen = false;
      return { view, progress: wasOpen ? { kind: 'close' } : { kind: 'none' } };
    }
    this.progressOpen = true;
    return { view, progress: { kind: 'show', message } };
  }

  /**
   * The current views of a counting-down state (`waitingRetry`, `rateLimited`), for a
   * once-a-second refresh; `undefined` when nothing counts down.
   */
  tick(): { view: StatusView; progress: ProgressIntent } | undefined {
    if (this.last?.status.retryInMs === undefined) return undefined;
    const { status, at } = this.last;
    if (status.state !== 'waitingRetry' && status.state !== 'rateLimited') return undefined;
    const elapsed = this.now() - at;
    const message = progressMessage(status, elapsed);
    return {
      view: statusView(status, elapsed),
      progress: this.progressOpen && message ? { kind: 'show', message } : { kind: 'none' },
    };
  }

  /** Whether a countdown is running (the UI layer then ticks once a second). */
  counting(): boolean {
    const s = this.last?.status;
    return !!s && s.retryInMs !== undefined && (s.state === 'waitingRetry' || s.state === 'rateLimited');
  }

  /** Ends the progress (a result arrived); returns `close` if it was open. */
  close(): ProgressIntent {
    const wasOpen = this.progressOpen;
    this.progressOpen = false;
    this.last = undefined;
    return wasOpen ? { kind: 'close' } : { kind: 'none' };
  }
}

/** The agents whose own session stores Tether reads, by `session/restored`'s `source.agent`. */
const STORE_NAMES: Record<string, string> = {
  claude: 'Claude Code',
  codex: 'Codex',
  gemini: 'Gemini CLI',
  copilot: 'Copilot CLI',
  opencode: 'opencode',
};

/** The agent of a `source` as shown to the user (`claude` → `Claude Code`; unknown ones as given). */
export function sourceAgentName(agent: string): string {
  return STORE_NAMES[agent] ?? agent;
}
