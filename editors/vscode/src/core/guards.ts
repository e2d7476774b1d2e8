/**
 * Runtime checks of the messages the server sends. The server is trusted to follow the
 * protocol, but a shim must never throw on input: a message that does not have the fields the
 * UI needs is reported (`{ error }`, naming the field) and ignored by the caller.
 */
import type {
  BannerClearedParams,
  BannerKind,
  BannerParams,
  ExpiredParams,
  HandoffOffer,
  PermissionRequestParams,
  ReattachedParams,
  RestoredParams,
  RestoredSource,
  ResumeResult,
  SessionState,
  StatusParams,
  TurnEndedParams,
  UpdateParams,
} from './protocol';

export type Parsed<T> = { ok: true; value: T } | { ok: false; error: string };

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function fail<T>(method: string, field: string, reason: string): Parsed<T> {
  return { ok: false, error: `${method}: ${field} ${reason}` };
}

function str(o: Obj, k: string): string | undefined {
  const v = o[k];
  return typeof v === 'string' ? v : undefined;
}

function num(o: Obj, k: string): number | undefined {
  const v = o[k];
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

const STATES: readonly SessionState[] = ['resuming', 'waitingRetry', 'rateLimited', 'agentSilent', 'ready', 'failed'];
const BANNER_KINDS: readonly BannerKind[] = [
  'restoreFailed',
  'staleSnapshot',
  'streamError',
  'persistenceDisabled',
  'recoveredLive',
  'cannotSave',
  'movedHere',
  'heldElsewhere',
  'notSynced',
];
const OUTCOMES = ['resumed', 'started', 'needsChoice', 'failed', 'nothingToResume'];

export function parseStatus(p: unknown): Parsed<StatusParams> {
  const m = 'session/status';
  if (!isObj(p)) return fail(m, 'params', 'is not an object');
  const state = str(p, 'state');
  if (!state || !STATES.includes(state as SessionState)) {
    return fail(m, 'state', `must be one of ${STATES.join(', ')}`);
  }
  const sessionId = str(p, 'sessionId') ?? '';
  const attempt = num(p, 'attempt') ?? 0;
  const maxAttempts = num(p, 'maxAttempts') ?? 0;
  const retryInMs = num(p, 'retryInMs');
  const errorKind = str(p, 'errorKind') as StatusParams['errorKind'];
  const message = str(p, 'message');
  const handoff = state === 'rateLimited' ? parseHandoffOffer(p.handoff) : undefined;
  return {
    ok: true,
    value: {
      sessionId,
      state: state as SessionState,
      attempt,
      maxAttempts,
      ...(retryInMs !== undefined ? { retryInMs: Math.max(0, retryInMs) } : {}),
      ...(errorKind ? { errorKind } : {}),
      ...(message ? { message } : {}),
      ...(handoff ? { handoff } : {}),
    },
  };
}

/**
 * `session/status.handoff`: the offer, or `undefined` when absent or without an agent (an
 * offer that names no agent cannot be taken, so it is not shown; never fatal to the status).
 */
function parseHandoffOffer(h: unknown): HandoffOffer | undefined {
  if (!isObj(h)) return undefined;
  const agent = str(h, 'agent');
  if (!agent) return undefined;
  const limitedForMs = num(h, 'limitedForMs');
  const resetsUtc = str(h, 'resetsUtc');
  return {
    agent,
    title: str(h, 'title') || `Continue with ${agent}`,
    choice: str(h, 'choice') || `handoff:${agent}`,
    question: str(h, 'question') ?? '',
    ...(limitedForMs !== undefined ? { limitedForMs } : {}),
    ...(resetsUtc ? { resetsUtc } : {}),
  };
}

export function parseBanner(p: unknown): Parsed<BannerParams> {
  const m = 'session/banner';
  if (!isObj(p)) return fail(m, 'params', 'is not an object');
  const id = str(p, 'id');
  if (!id) return fail(m, 'id', 'is missing');
  const kind = str(p, 'kind');
  if (!kind || !BANNER_KINDS.includes(kind as BannerKind)) {
    return fail(m, 'kind', `must be one of ${BANNER_KINDS.join(', ')}`);
  }
  const message = str(p, 'message');
  if (message === undefined) return fail(m, 'message', 'is missing');
  const sessionId = str(p, 'sessionId');
  return {
    ok: true,
    value: {
      id,
      kind: kind as BannerKind,
      message,
      // A banner is dismissible unless the server says otherwise.
      dismissible: p.dismissible !== false,
      ...(sessionId ? { sessionId } : {}),
    },
  };
}

export function parseBannerCleared(p: unknown): Parsed<BannerClearedParams> {
  const id = isObj(p) ? str(p, 'id') : undefined;
  if (!id) return fail('session/bannerCleared', 'id', 'is missing');
  return { ok: true, value: { id } };
}

export function parseExpired(p: unknown): Parsed<ExpiredParams> {
  const m = 'session/expired';
  if (!isObj(p)) return fail(m, 'params', 'is not an object');
  const sessionId = str(p, 'sessionId');
  if (!sessionId) return fail(m, 'sessionId', 'is missing');
  const choice = str(p, 'choice');
  const agent = str(p, 'agent');
  return {
    ok: true,
    value: { sessionId, previousSessionId: str(p, 'previousSessionId') ?? '', ...(choice ? { choice } : {}), ...(agent ? { agent } : {}) },
  };
}

export function parseRestored(p: unknown): Parsed<RestoredParams> {
  const m = 'session/restored';
  if (!isObj(p)) return fail(m, 'params', 'is not an object');
  const sessionId = str(p, 'sessionId');
  if (!sessionId) return fail(m, 'sessionId', 'is missing');
  if (!isObj(p.snapshot)) return fail(m, 'snapshot', 'is not an object');
  // `source` only adds a line to the view: a malformed one is left out, never fatal.
  let source: RestoredSource | undefined;
  if (isObj(p.source)) {
    const agent = str(p.source, 'agent');
    const path = str(p.source, 'path');
    if (agent && path) source = { agent, path, complete: p.source.complete !== false };
  }
  return {
    ok: true,
    value: { sessionId, snapshot: p.snapshot as unknown as RestoredParams['snapshot'], stale: p.stale !== false, ...(source ? { source } : {}) },
  };
}

/** Checks `session/turnEnded` (`sessionId` and `seq` required; `stopReason` or `error`). */
export function parseTurnEnded(p: unknown): Parsed<TurnEndedParams> {
  const m = 'session/turnEnded';
  if (!isObj(p)) return fail(m, 'params', 'is not an object');
  const sessionId = str(p, 'sessionId');
  if (!sessionId) return fail(m, 'sessionId', 'is missing');
  const seq = num(p, 'seq');
  if (seq === undefined) return fail(m, 'seq', 'is not a number');
  const stopReason = str(p, 'stopReason');
  const error = str(p, 'error');
  return { ok: true, value: { sessionId, seq, ...(stopReason ? { stopReason } : {}), ...(error ? { error } : {}) } };
}

/** Checks `session/reattached`: its `result` as a `ResumeResult`, or the `error` the new daemon gave. */
export function parseReattached(p: unknown): Parsed<ReattachedParams> {
  const m = 'session/reattached';
  if (!isObj(p)) return fail(m, 'params', 'is not an object');
  const sessionId = str(p, 'sessionId');
  if (!sessionId) return fail(m, 'sessionId', 'is missing');
  if (p.result !== undefined) {
    const result = parseResumeResult(p.result);
    if (!result.ok) return result;
    return { ok: true, value: { sessionId, result: result.value } };
  }
  return { ok: true, value: { sessionId, error: str(p, 'error') ?? (isObj(p.error) ? (str(p.error, 'message') ?? 'refused') : 'refused') } };
}

export function parseUpdate(p: unknown): Parsed<UpdateParams> {
  const m = 'session/update';
  if (!isObj(p)) return fail(m, 'params', 'is not an object');
  const sessionId = str(p, 'sessionId');
  if (!sessionId) return fail(m, 'sessionId', 'is missing');
  if (!isObj(p.update) || typeof p.update.sessionUpdate !== 'string') {
    return fail(m, 'update.sessionUpdate', 'is missing');
  }
  return {
    ok: true,
    value: {
      sessionId,
      update: p.update as UpdateParams['update'],
      replay: p.replay === true,
      ...(num(p, 'seq') !== undefined ? { seq: num(p, 'seq') } : {}),
    },
  };
}

export function parseResumeResult(p: unknown): Parsed<ResumeResult> {
  const m = 'ResumeResult';
  if (!isObj(p)) return fail(m, 'result', 'is not an object');
  const outcome = str(p, 'outcome');
  if (!outcome || !OUTCOMES.includes(outcome)) return fail(m, 'outcome', `must be one of ${OUTCOMES.join(', ')}`);
  const b = isObj(p.breaker) ? p.breaker : {};
  const rec = isObj(p.recovery) ? p.recovery : undefined;
  let recovery: ResumeResult['recovery'];
  if (rec) {
    const actions = Array.isArray(rec.actions)
      ? rec.actions.filter(
          (a): a is { id: string; title: string } =>
            isObj(a) && typeof a.id === 'string' && typeof a.title === 'string',
        )
      : [];
    recovery = { message: str(rec, 'message') ?? '', detail: str(rec, 'detail') ?? '', actions };
  }
  const sessionId = str(p, 'sessionId') ?? null;
  const previousSessionId = str(p, 'previousSessionId');
  const value: ResumeResult = {
    outcome: outcome as ResumeResult['outcome'],
    sessionId,
    breaker: {
      status: (str(b, 'status') ?? 'closed') as ResumeResult['breaker']['status'],
      attempts: num(b, 'attempts') ?? 0,
      maxAttempts: num(b, 'maxAttempts') ?? 0,
      userRetries: num(b, 'userRetries') ?? 0,
    },
    stale: p.stale === true,
    ...(previousSessionId ? { previousSessionId } : {}),
    ...(recovery ? { recovery } : {}),
    ...(isObj(p.error) ? { error: p.error as unknown as NonNullable<ResumeResult['error']> } : {}),
    ...(isObj(p.reconciliation)
      ? { reconciliation: p.reconciliation as unknown as NonNullable<ResumeResult['reconciliation']> }
      : {}),
  };
  return { ok: true, value };
}

export function parsePermissionRequest(p: unknown): Parsed<PermissionRequestParams> {
  const m = 'session/requestPermission';
  if (!isObj(p)) return fail(m, 'params', 'is not an object');
  if (!Array.isArray(p.options)) return fail(m, 'options', 'is not an array');
  const options = p.options.filter(
    (o): o is PermissionRequestParams['options'][number] =>
      isObj(o) && typeof o.optionId === 'string' && typeof o.name === 'string',
  );
  if (options.length === 0) return fail(m, 'options', 'has no option with optionId and name');
  return {
    ok: true,
    value: {
      sessionId: str(p, 'sessionId') ?? '',
      options,
      ...(isObj(p.toolCall) ? { toolCall: p.toolCall } : {}),
    },
  };
}
