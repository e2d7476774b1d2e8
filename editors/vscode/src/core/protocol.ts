/**
 * The Tether editor protocol as this extension sees it: method names and message shapes.
 *
 * Source: the editor contract,
 * `docs/protocol.md` once the server exists. Keys are camelCase, enum values camelCase strings,
 * durations in milliseconds (`…Ms`), timestamps RFC 3339 UTC strings (`…Utc`), paths absolute.
 *
 * Only the fields the extension reads or writes are typed strictly; everything else is carried
 * through untouched. Every message received from the server is checked by the `parse*`
 * functions in `guards.ts` before use, so a malformed message is logged and ignored instead
 * of breaking the UI.
 */

/** Protocol version the extension speaks (`initialize` result `capabilities.experimental.tether.protocolVersion`). */
export const PROTOCOL_VERSION = 1;

/** Method names, client → server requests and notifications. */
export const Methods = {
  resume: 'session/resume',
  recoveryChoice: 'session/recoveryChoice',
  persist: 'session/persist',
  prompt: 'session/prompt',
  cancel: 'session/cancel',
  list: 'session/list',
  /** Older chat turns (not in every server: -32601 when absent). */
  history: 'session/history',
  clear: 'session/clear',
  /** Every session whose text holds a query's words (not in every server: -32601 when absent). */
  search: 'session/search',
  /** Takes a session over from the machine of the user's that holds it (R-SYNC-7; not in every server). */
  continueHere: 'session/continueHere',
  /** Continues a session's conversation with another configured agent (R-CARRY-5; the handoff offer). */
  handoff: 'session/handoff',
} as const;

/** Method names, server → client notifications and requests. */
export const ServerMethods = {
  restored: 'session/restored',
  status: 'session/status',
  banner: 'session/banner',
  bannerCleared: 'session/bannerCleared',
  expired: 'session/expired',
  update: 'session/update',
  telemetry: 'telemetry/event',
  requestPermission: 'session/requestPermission',
  /** A permission question was settled, possibly by another editor (R-DAEMON-6). */
  permissionResolved: 'session/permissionResolved',
  /** A prompt turn ended, sent to every attached editor, the one that sent it or not. */
  turnEnded: 'session/turnEnded',
  /** The forwarder's new daemon took this session back after the old one died. */
  reattached: 'session/reattached',
} as const;

/** What the client declares under `capabilities.experimental.tether`: it renders these itself. */
export interface TetherClientCapabilities {
  recoveryDialog: boolean;
  banners: boolean;
  status: boolean;
}

export interface Workspace {
  /** Absolute path of the workspace folder. */
  root: string;
}

export type BreakerStatus = 'closed' | 'retrying' | 'open' | 'halfOpen';

export interface BreakerState {
  status: BreakerStatus;
  /** Attempts made in the current round. */
  attempts: number;
  /** Attempts allowed per round (3 by default: R-RESUME-3). */
  maxAttempts: number;
  /** How many times the user chose "Try Again" for this session. */
  userRetries: number;
}

export type ErrorKind =
  | 'sessionExpired'
  | 'sessionNotReady'
  | 'network'
  | 'serverError'
  | 'rateLimited'
  | 'quotaExceeded'
  | 'authentication'
  | 'sessionCorrupt'
  | 'agentCrashed'
  | 'invalidRequest'
  | 'cancelled'
  | 'unknown';

export interface ClassifiedError {
  kind: ErrorKind;
  message: string;
  retryable: boolean;
  retryAfterMs?: number;
  source: 'acp' | 'process' | 'http';
  code?: number;
}

/** One button of the recovery dialog. docs/protocol.md fixes `retry` / "Try Again" and `new` / "Start New Session". */
export interface RecoveryAction {
  id: string;
  title: string;
}

export interface Recovery {
  message: string;
  detail: string;
  actions: RecoveryAction[];
}

/**
 * How a resume ended. `nothingToResume` answers only a resume sent with `create: false` (an
 * editor's start-up, R-RESUME-11): nothing of the workspace was there and no agent was started.
 */
export type ResumeOutcome = 'resumed' | 'started' | 'needsChoice' | 'failed' | 'nothingToResume';

/** Result of `session/resume` and `session/recoveryChoice`. */
export interface ResumeResult {
  outcome: ResumeOutcome;
  /** The live agent session, when there is one. */
  sessionId: string | null;
  /** Set when a new session replaced an old one. */
  previousSessionId?: string;
  breaker: BreakerState;
  error?: ClassifiedError;
  recovery?: Recovery;
  reconciliation?: {
    confirmedTurns: number;
    staleExecCount: number;
    staleDiffCount: number;
    droppedApprovals: number;
  };
  /** True when what the editor shows is cache the agent has not confirmed. */
  stale: boolean;
}

/**
 * The id of the recovery action chosen (docs/protocol.md, `session/recoveryChoice`):
 * "Try Again", "Start New Session", "Continue in a New Session" (R-CARRY-1), or
 * "Continue with <agent>" (R-CARRY-5).
 */
export type RecoveryChoice = 'retry' | 'new' | 'newWithHistory' | `handoff:${string}`;

/** Whether an action id is a choice the server carries out (`login` is not). */
export function isRecoveryChoice(id: string): id is RecoveryChoice {
  return id === 'retry' || id === 'new' || id === 'newWithHistory' || (id.startsWith('handoff:') && id.length > 8);
}

export interface ResumeParams {
  workspace: Workspace;
  sessionId?: string;
  agent?: string;
  workDoneToken?: string | number;
  /** The `seq` of the last event the editor drew of this session: only later ones are replayed (daemon). */
  afterSeq?: number;
  /**
   * `false`: with no `sessionId` and nothing of the workspace cached, answer `nothingToResume`
   * and start no agent (R-RESUME-11). Absent means `true` (a new session is started).
   */
  create?: boolean;
}

export interface RecoveryChoiceParams {
  sessionId: string;
  choice: RecoveryChoice;
}

export type SessionState = 'resuming' | 'waitingRetry' | 'rateLimited' | 'agentSilent' | 'ready' | 'failed';

/** `session/status` notification. */
export interface StatusParams {
  sessionId: string;
  state: SessionState;
  attempt: number;
  maxAttempts: number;
  retryInMs?: number;
  errorKind?: ErrorKind;
  /** The server's ready-made status text. */
  message?: string;
  /** With `rateLimited`: another configured agent offered for a long rate-limit or quota wait. */
  handoff?: HandoffOffer;
}

/**
 * `session/status.handoff`: a rate-limit or quota wait longer than `handoff.offerAfterMs`
 * offers another configured agent (docs/protocol.md, session/status). Nothing is switched
 * unless the user takes it (`session/handoff`).
 */
export interface HandoffOffer {
  /** The configured agent offered. */
  agent: string;
  /** The accept button's title ("Continue with Codex"). */
  title: string;
  /** The `session/recoveryChoice` id, `handoff:<agent>`. */
  choice: string;
  /** What to ask ("Claude's quota resets at 13:00; continue with Codex now?"). */
  question: string;
  /** How long the limit lasts, in ms. */
  limitedForMs?: number;
  /** When the limit resets, when known. */
  resetsUtc?: string;
}

/** `session/handoff` params: the session, its workspace, and the agent to continue with. */
export interface HandoffParams {
  sessionId: string;
  workspace: Workspace;
  agent: string;
}

export type BannerKind =
  | 'restoreFailed'
  | 'staleSnapshot'
  | 'streamError'
  | 'persistenceDisabled'
  | 'recoveredLive'
  | 'cannotSave'
  | 'movedHere'
  | 'heldElsewhere'
  | 'notSynced';

/** `session/banner` notification. */
export interface BannerParams {
  id: string;
  sessionId?: string;
  kind: BannerKind;
  message: string;
  dismissible: boolean;
}

/** `session/bannerCleared` notification. */
export interface BannerClearedParams {
  id: string;
}

/** `session/expired` notification: a new session replaced an old one. */
export interface ExpiredParams {
  previousSessionId: string;
  sessionId: string;
  /** The choice that replaced it (`new`, `newWithHistory`, `handoff:<agent>`), when one did. */
  choice?: string;
  /** The new session's configured agent. */
  agent?: string;
}

/** `session/restored` notification: the cached snapshot, sent before the first agent attempt. */
export interface RestoredParams {
  sessionId: string;
  snapshot: SessionSnapshot;
  /** True for a cached snapshot the agent has not confirmed yet; false for the transcript of a session live in the daemon, sent when this window attaches to it without `afterSeq`. */
  stale: boolean;
  /** Where a transcript Tether never cached was read from (the agent's own store); absent for Tether's cache. */
  source?: RestoredSource;
}

/** `session/restored`'s `source`: the agent's own session store the transcript came from. */
export interface RestoredSource {
  /** `claude`, `codex`, `gemini`, `copilot` (other values are shown as they are). */
  agent: string;
  /** The session's file in that store (absolute). */
  path: string;
  /** The whole file was read; `false` when older turns may exist. */
  complete: boolean;
}

/** `session/turnEnded` notification: a prompt turn ended (the ACP stop reason, or the error's kind). */
export interface TurnEndedParams {
  sessionId: string;
  seq: number;
  stopReason?: string;
  error?: string;
}

/** `session/reattached` notification: the session was resumed in a new daemon (its `seq`s start again at 1). */
export interface ReattachedParams {
  sessionId: string;
  result?: ResumeResult;
  error?: string;
}

/** `session/update` notification: an ACP `SessionUpdate`, forwarded. */
export interface UpdateParams {
  sessionId: string;
  update: AcpSessionUpdate;
  /** True while the agent replays history (`session/load`), false for live output. */
  replay: boolean;
  /** The event's place among the session's events (from a daemon); kept for `afterSeq`. */
  seq?: number;
}

/** The subset of ACP `SessionUpdate` variants the snapshot model reads (ACP v1 schema). */
export interface AcpSessionUpdate {
  sessionUpdate: string;
  content?: { type: string; text?: string };
  toolCallId?: string;
  title?: string;
  status?: string;
  [key: string]: unknown;
}

export type PersistTrigger =
  | 'turnFinalized'
  | 'execCompleted'
  | 'diffReceived'
  | 'approvalChanged'
  | 'bannerChanged'
  | 'shutdown'
  | 'timer'
  | 'edit';

export interface PersistParams {
  sessionId: string;
  workspace: Workspace;
  trigger: PersistTrigger;
  snapshot: SessionSnapshot;
}

export interface PersistResult {
  saved: boolean;
  coalesced: boolean;
  bytes: number;
  durationMs: number;
  schemaVersion: number;
}

export interface ChatTurn {
  id: string;
  role: 'user' | 'assistant' | 'status';
  text: string;
  timestampUtc: string;
  complete: boolean;
  linkedExecId?: string;
  linkedDiffId?: string;
  metadata?: Record<string, unknown>;
}

export interface ExecTurn {
  execId: string;
  header: string;
  command: string;
  status: string;
  exitCode?: number;
  /** ANSI stripped. */
  buffer: string;
  ansiBuffer?: string;
  truncatedBytes: number;
}

/** The snapshot a client sends with `session/persist` (R-STORE-1, R-UI-6). */
export interface SessionSnapshot {
  chatTurns: ChatTurn[];
  execTurns: ExecTurn[];
  diffSessions: unknown[];
  approvals: { pending: unknown[]; remembered?: unknown[] };
  uiState: {
    draftInput?: string;
    cursor?: number;
    isStreamErrorVisible: boolean;
    streamErrorText?: string;
    tokenSummary?: string;
  };
  context: { workingDir: string; model?: string; reasoning?: string; approvalMode?: string };
  telemetry?: { turnCount: number; execCount: number };
}

/** `session/requestPermission` request: an agent's ACP `session/request_permission`, forwarded. */
export interface PermissionRequestParams {
  sessionId: string;
  toolCall?: { toolCallId?: string; title?: string; kind?: string; [key: string]: unknown };
  options: PermissionOption[];
}

/** ACP `PermissionOption`. */
export interface PermissionOption {
  optionId: string;
  name: string;
  /** `allow_once`, `allow_always`, `reject_once` or `reject_always` (ACP v1); other values are shown as they are. */
  kind: string;
}

/** ACP `RequestPermissionResponse`: the chosen option id, or cancelled. */
export type PermissionResponse =
  | { outcome: { outcome: 'selected'; optionId: string } }
  | { outcome: { outcome: 'cancelled' } };

export interface ClearResult {
  removed: number;
}

/** `session/continueHere` params (R-SYNC-7): the session and the workspace it belongs to here. */
export interface ContinueHereParams {
  workspace: Workspace;
  sessionId: string;
}

/** `session/continueHere` result: the lease epoch now held, and the machine it was taken from (when one held it). */
export interface ContinueHereResult {
  epoch: number;
  takenFrom?: string;
}
