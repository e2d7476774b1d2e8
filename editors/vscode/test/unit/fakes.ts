/**
 * Recording fakes of the controller's ports for unit tests: the UI (status item, log,
 * notifications), the session view (its ops), and a server that answers each request from
 * a queue per method.
 */
import type { BannerView } from '../../src/core/banners';
import type { ServerPort, UiPort, ViewPort } from '../../src/core/controller';
import type { ResumeResult } from '../../src/core/protocol';
import type { StatusView } from '../../src/core/status';
import type { ViewItem, ViewOp } from '../../src/core/transcript';

/**
 * A UI that records the status item, the log and the notifications shown; a notification is
 * answered with the action set for its id in `notificationAnswers` (what a user would click),
 * else closed.
 */
export class Ui implements UiPort {
  logs: string[] = [];
  statuses: StatusView[] = [];
  notifications: BannerView[] = [];
  notificationAnswers = new Map<string, string>();
  showDialog() {
    return Promise.resolve(undefined);
  }
  showNotification(v: BannerView) {
    this.notifications.push(v);
    return Promise.resolve(this.notificationAnswers.get(v.id));
  }
  showTransient() {}
  /** Offers shown (`showOffer`), with whether each was withdrawn; answered from `offerAnswers` by id. */
  offers: { view: BannerView; withdrawn: boolean }[] = [];
  offerAnswers = new Map<string, string>();
  showOffer(v: BannerView, withdrawn: Promise<void>) {
    const shown = { view: v, withdrawn: false };
    this.offers.push(shown);
    void withdrawn.then(() => (shown.withdrawn = true));
    const answer = this.offerAnswers.get(v.id);
    return answer === undefined ? withdrawn.then(() => undefined) : Promise.resolve(answer);
  }
  setStatus(v: StatusView) {
    this.statuses.push(v);
  }
  setBannerIndicator() {}
  progress() {}
  pick() {
    return Promise.resolve(undefined);
  }
  showLogs() {}
  log(line: string) {
    this.logs.push(line);
  }
}

/** A session view that records the ops it is posted. */
export class View implements ViewPort {
  ops: ViewOp[] = [];
  post(op: ViewOp) {
    this.ops.push(op);
  }
  reveal() {}
  /** The last op of `kind` posted. */
  last(kind: ViewOp['op']) {
    return this.ops.filter((o) => o.op === kind).at(-1);
  }
}

/** The items a view shows after replaying every op (reset, append, replace). */
export function drawn(ops: ViewOp[]): ViewItem[] {
  let items: ViewItem[] = [];
  for (const op of ops) {
    if (op.op === 'reset') items = [...op.items];
    if (op.op === 'append') items.push(op.item);
    if (op.op === 'replace') items = items.map((i) => (i.id === op.item.id ? op.item : i));
  }
  return items;
}

/** A numbered chunk (`"<n>\n"`) as the scripted agent streams it, with the daemon's `seq`. */
export const chunk = (sessionId: string, n: number, seq: number) => ({
  sessionId,
  update: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: `${n}\n` } },
  replay: false,
  seq,
});

/** An answer, or a function giving it from the params. */
export type Answer = unknown;

/**
 * Answers each request from its method's queue (a function answers from the params);
 * rejects a request with none left; records every request.
 */
export class Server implements ServerPort {
  requests: { method: string; params: unknown }[] = [];
  constructor(private readonly answers: Record<string, Answer[]>) {}
  request(method: string, params: unknown): Promise<unknown> {
    this.requests.push({ method, params });
    const next = this.answers[method]?.shift();
    if (next === undefined) return Promise.reject(new Error(`unexpected ${method}`));
    return typeof next === 'function' ? (next as (p: unknown) => Promise<unknown>)(params) : Promise.resolve(next);
  }
  notify() {}
}

/** A closed breaker, as a `ResumeResult` carries it. */
export const closed = { status: 'closed' as const, attempts: 0, maxAttempts: 3, userRetries: 0 };

/** The result of resuming `sessionId`, live and confirmed. */
export const live = (sessionId: string): ResumeResult => ({ outcome: 'resumed', sessionId, breaker: closed, stale: false });
