/**
 * `session/list` and `session/search` → the "Tether: Show Sessions" quick pick, and the reading of a
 * `session/history` answer. No `vscode` import.
 */
import type { ChatTurn } from './protocol';
import { shortId } from './status';

export interface SessionPick {
  sessionId: string;
  /** The session's title, else its first prompt, else "Session 1f3a9c2e…". */
  label: string;
  /**
   * The agent; for a session another of the user's machines pushed last (`fromMachine`,
   * R-SYNC-1), then " · from ada-laptop · 5 min ago" (`fromMachineAt`, when given).
   */
  description: string;
  /**
   * "updated 5 min ago · 12 turns · <id>", then, for a session recorded at another path of
   * the workspace's project (`recordedAt`, R-PROJECT-3), " · recorded at <path> (branch b)":
   * opening it moves it here.
   */
  detail: string;
}

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** "just now", "5 min ago", "3 h ago", "2 days ago", else the date. */
export function ago(utc: string, now: number): string {
  const t = Date.parse(utc);
  if (Number.isNaN(t)) return utc || 'unknown time';
  const s = Math.max(0, Math.round((now - t) / 1000));
  if (s < 60) return 'just now';
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86_400) return `${Math.floor(s / 3600)} h ago`;
  if (s < 7 * 86_400) {
    const d = Math.floor(s / 86_400);
    return `${d} day${d === 1 ? '' : 's'} ago`;
  }
  return new Date(t).toISOString().slice(0, 10);
}

function oneLine(text: string, max = 80): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/**
 * "from ada-laptop · 5 min ago": which other machine of the user's pushed a `session/list`
 * entry's turns last (`fromMachine`) and when (`fromMachineAt`, left out when absent);
 * `undefined` for a session of this machine (no `fromMachine`).
 */
export function fromMachineText(entry: Record<string, unknown>, now: number): string | undefined {
  const machine = typeof entry.fromMachine === 'string' ? oneLine(entry.fromMachine, 60) : '';
  if (!machine) return undefined;
  const at = typeof entry.fromMachineAt === 'string' && entry.fromMachineAt ? ` · ${ago(entry.fromMachineAt, now)}` : '';
  return `from ${machine}${at}`;
}

/** The picks of a `session/list` result, in the server's order (most recent first). */
export function sessionPicks(raw: unknown, now: number): SessionPick[] {
  const sessions = isObj(raw) && Array.isArray(raw.sessions) ? raw.sessions : [];
  return sessions.filter(isObj).flatMap((s) => {
    if (typeof s.sessionId !== 'string' || !s.sessionId) return [];
    const title = typeof s.title === 'string' && s.title.trim() ? s.title : typeof s.firstPrompt === 'string' ? s.firstPrompt : '';
    const turns = typeof s.turnCount === 'number' ? s.turnCount : 0;
    const updated = typeof s.updatedUtc === 'string' ? s.updatedUtc : '';
    const branch = typeof s.branch === 'string' && s.branch ? ` (branch ${s.branch})` : '';
    const elsewhere = typeof s.recordedAt === 'string' && s.recordedAt ? ` · recorded at ${s.recordedAt}${branch}` : '';
    const agent = typeof s.agent === 'string' && s.agent ? s.agent : 'unknown agent';
    const from = fromMachineText(s, now);
    return [
      {
        sessionId: s.sessionId,
        label: title.trim() ? oneLine(title) : `Session ${shortId(s.sessionId)}`,
        description: from ? `${agent} · ${from}` : agent,
        detail: `updated ${ago(updated, now)} · ${turns} turn${turns === 1 ? '' : 's'} · ${s.sessionId}${elsewhere}`,
      },
    ];
  });
}

/** Sessions a `session/search` asks for at most: one quick pick's worth. */
export const SEARCH_LIMIT = 50;

/** Where a `session/search` hit was found, for people: `source` → a store's name. */
const SOURCE_NAMES: Record<string, string> = {
  tether: 'saved by Tether',
  claude: "Claude Code's store",
  codex: "Codex's store",
  gemini: "Gemini CLI's store",
  copilot: "Copilot CLI's store",
  opencode: "opencode's store",
};

/**
 * The picks of a `session/search` result (R-INDEX-8, docs/protocol.md), in the server's order
 * (best match first): the title (else "Session 1f3a9c2e…") as label; the agent, where it was
 * found and when it was updated as description; the snippet around the match as detail, its
 * `«`/`»` marks dropped and cut to one line. Entries without an id are left out.
 */
export function searchPicks(raw: unknown, now: number): SessionPick[] {
  const sessions = isObj(raw) && Array.isArray(raw.sessions) ? raw.sessions : [];
  return sessions.filter(isObj).flatMap((s) => {
    if (typeof s.sessionId !== 'string' || !s.sessionId) return [];
    const title = typeof s.title === 'string' ? s.title : '';
    const agent = typeof s.agent === 'string' && s.agent ? s.agent : 'unknown agent';
    const source = typeof s.source === 'string' ? (SOURCE_NAMES[s.source] ?? `${s.source}'s store`) : '';
    const updated = typeof s.updatedUtc === 'string' ? s.updatedUtc : '';
    const snippet = typeof s.snippet === 'string' ? oneLine(s.snippet.replace(/[«»]/g, ''), 200) : '';
    return [
      {
        sessionId: s.sessionId,
        label: title.trim() ? oneLine(title) : `Session ${shortId(s.sessionId)}`,
        description: [agent, source, `updated ${ago(updated, now)}`].filter(Boolean).join(' · '),
        detail: snippet,
      },
    ];
  });
}

/** A `session/history` page: its chat turns, oldest first, and the absolute index of the first. */
export interface HistoryPage {
  turns: ChatTurn[];
  /** `chatTurnsBase`: the view's new base; absent from a server that does not send it. */
  base?: number;
}

/** Reads a `session/history` answer (`{chatTurns, chatTurnsBase, totalChatTurns}`, docs/protocol.md). */
export function historyPage(raw: unknown): HistoryPage | undefined {
  if (!isObj(raw) || !Array.isArray(raw.chatTurns)) return undefined;
  const turns = raw.chatTurns.filter((t): t is ChatTurn => isObj(t) && typeof t.text === 'string' && typeof t.role === 'string');
  const base = raw.chatTurnsBase;
  return typeof base === 'number' && Number.isSafeInteger(base) && base >= 0 ? { turns, base } : { turns };
}

/** Whether a request failed because the server does not know the method (JSON-RPC -32601). */
export function isMethodNotFound(err: unknown): boolean {
  return isObj(err) && err.code === -32601;
}

/**
 * Whether a request failed because the connection to the server was lost, not because the
 * server answered with an error: vscode-jsonrpc rejects the requests still waiting when the
 * connection is disposed with -32097 (`PendingResponseRejected`), and the language client
 * refuses new ones while it is not running with -32096 (`ConnectionInactive`). Both codes
 * are the client library's own; a server never sends them.
 */
export function isConnectionLost(err: unknown): boolean {
  return isObj(err) && (err.code === -32097 || err.code === -32096);
}

/** What a `session/list` answer says of one session: whether it is live and runs a turn. */
export function listedSession(raw: unknown, sessionId: string): { live: boolean; turnRunning: boolean } | undefined {
  const sessions = isObj(raw) && Array.isArray(raw.sessions) ? raw.sessions : [];
  const s = sessions.filter(isObj).find((e) => e.sessionId === sessionId);
  return s ? { live: s.live === true, turnRunning: s.turnRunning === true } : undefined;
}
