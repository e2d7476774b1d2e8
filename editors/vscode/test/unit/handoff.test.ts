import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { SessionController } from '../../src/core/controller';
import { parseStatus } from '../../src/core/guards';
import { HANDOFF_OFFER_ID, KEEP_WAITING } from '../../src/core/handoff';
import type { ResumeResult } from '../../src/core/protocol';
import { closed, drawn, live, Server, Ui, View, type Answer } from './fakes';

const flush = () => new Promise<void>((r) => setImmediate(r));
const noTimers = { setInterval: () => 1, clearInterval: () => undefined };

const QUESTION = "Claude's quota resets at 13:00; continue with Codex now?";
const offer = { agent: 'codex', title: 'Continue with Codex', choice: 'handoff:codex', question: QUESTION, limitedForMs: 5_400_000 };

/** The `session/status` of a rate-limit wait of `sessionId`, with the handoff offer unless `withOffer` is false. */
const limited = (sessionId: string, withOffer = true) => ({
  sessionId,
  state: 'rateLimited',
  attempt: 1,
  maxAttempts: 5,
  retryInMs: 300_000,
  errorKind: 'quotaExceeded',
  message: `Rate limited, resuming in 300 s${withOffer ? `. ${QUESTION}` : ''}`,
  ...(withOffer ? { handoff: offer } : {}),
});
const resuming = (sessionId: string) => ({ sessionId, state: 'resuming', attempt: 1, maxAttempts: 5, message: 'Resuming session after rate limit' });

const handedOff: ResumeResult = { outcome: 'started', sessionId: 's2', previousSessionId: 's1', breaker: closed, stale: false };

/**
 * A controller whose session `s1` is live and runs a prompt turn that waits until `endTurn`
 * answers it (as a rate-limit wait does); `more` adds answers (e.g. `session/handoff`).
 */
async function waiting(more: Record<string, Answer[]> = {}) {
  const ui = new Ui();
  const view = new View();
  let endTurn!: (stopReason: string) => void;
  const server = new Server({
    'session/resume': [live('s1')],
    'session/prompt': [() => new Promise((resolve) => (endTurn = (stopReason) => resolve({ stopReason })))],
    ...more,
  });
  const c = new SessionController(ui, server, { workspaceRoot: '/ws', persistenceEnabled: false, timers: noTimers, now: () => 0, view });
  await c.resume();
  const turn = c.prompt('go');
  await flush();
  return { ui, view, server, c, turn, endTurn: (stopReason = 'end_turn') => endTurn(stopReason) };
}

const handoffRequests = (server: Server) => server.requests.filter((r) => r.method === 'session/handoff');

describe('the handoff offer of a long rate-limit or quota wait (session/status.handoff)', () => {
  it('reads the offer of a rateLimited status, with defaults for a missing title and choice', () => {
    const p = parseStatus(limited('s1'));
    assert.ok(p.ok);
    assert.deepEqual(p.value.handoff, offer);
    const bare = parseStatus({ ...limited('s1'), handoff: { agent: 'gemini' } });
    assert.ok(bare.ok);
    assert.deepEqual(bare.value.handoff, { agent: 'gemini', title: 'Continue with gemini', choice: 'handoff:gemini', question: '' });
    const noAgent = parseStatus({ ...limited('s1'), handoff: { title: 'Continue with ?' } });
    assert.ok(noAgent.ok);
    assert.equal(noAgent.value.handoff, undefined, 'an offer without an agent cannot be taken');
    const notLimited = parseStatus({ ...resuming('s1'), handoff: offer });
    assert.ok(notLimited.ok);
    assert.equal(notLimited.value.handoff, undefined, 'only a rateLimited status offers');
  });

  it('is offered once per wait: the question, "Continue with Codex" and "Keep Waiting"; the view shows the question', async () => {
    const { ui, view, c } = await waiting();
    c.onStatus(limited('s1'));
    c.onStatus(limited('s1'));
    await flush();
    assert.equal(ui.offers.length, 1, 'one offer for the wait');
    assert.deepEqual(ui.offers[0].view, {
      id: HANDOFF_OFFER_ID,
      severity: 'warning',
      text: `Tether: ${QUESTION}`,
      actions: ['Continue with Codex', KEEP_WAITING],
    });
    assert.equal(ui.offers[0].withdrawn, false);
    assert.deepEqual(c.handoffOffered, offer);
    const line = view.last('status');
    assert.ok(line?.op === 'status' && line.status.text === `Rate limited, resuming in 5 min. ${QUESTION}`, JSON.stringify(line));
    assert.equal(c.transcript.prompt.reason, `Rate limited, resuming in 5 min. ${QUESTION} The prompt box opens when the session is back.`);
    assert.ok(ui.logs.some((l) => l.startsWith('handoff offered for s1: "Continue with Codex" / "Keep Waiting"')), ui.logs.join('\n'));
  });

  it('"Continue with Codex" sends session/handoff {sessionId, workspace, agent}; the view follows the new session', async () => {
    const box: { w?: Awaited<ReturnType<typeof waiting>> } = {};
    // What the server does (docs/protocol.md, session/handoff): session/expired, the old
    // turn cancelled (its wait abandoned), then the result.
    const answer = async () => {
      if (!box.w) throw new Error('no controller yet');
      box.w.c.onExpired({ previousSessionId: 's1', sessionId: 's2', choice: 'handoff:codex', agent: 'codex' });
      box.w.endTurn('cancelled');
      await flush();
      return handedOff;
    };
    const w = await waiting({ 'session/handoff': [answer] });
    box.w = w;
    w.ui.offerAnswers.set(HANDOFF_OFFER_ID, 'Continue with Codex');
    w.c.onStatus(limited('s1'));
    const old = await w.turn;
    await flush();
    assert.deepEqual(handoffRequests(w.server), [
      { method: 'session/handoff', params: { sessionId: 's1', workspace: { root: '/ws' }, agent: 'codex' } },
    ]);
    assert.equal(old.stopReason, 'cancelled');
    assert.equal(w.c.sessionId, 's2', 'the new session is live');
    assert.equal(w.c.transcript.sessionId, 's2', 'the view shows the new session');
    assert.equal(w.c.transcript.turnRunning, false, 'no turn runs in the new session');
    assert.equal(w.c.transcript.prompt.canSend, true, 'the prompt box is open');
    assert.deepEqual(
      drawn(w.view.ops).filter((i) => i.kind === 'status'),
      [],
      'the old turn\'s "Turn cancelled." is not drawn in the new session',
    );
    assert.equal(w.c.handoffOffered, undefined);
    assert.equal(w.ui.notifications.find((v) => v.id === 'tether.expired')?.text, 'Tether: continued session s1 with codex in new session s2.');
    assert.ok(w.ui.logs.some((l) => l === 'handoff offer: user chose "Continue with Codex"; session/handoff s1 to codex'), w.ui.logs.join('\n'));
  });

  it('"Keep Waiting" sends nothing, and the same wait does not ask again', async () => {
    const { ui, server, c, endTurn, turn } = await waiting();
    ui.offerAnswers.set(HANDOFF_OFFER_ID, KEEP_WAITING);
    c.onStatus(limited('s1'));
    await flush();
    c.onStatus(limited('s1'));
    await flush();
    assert.equal(ui.offers.length, 1);
    assert.deepEqual(handoffRequests(server), []);
    assert.equal(c.sessionId, 's1');
    assert.ok(ui.logs.some((l) => l === 'handoff offer: user chose "Keep Waiting" for s1: nothing sent, the wait goes on'), ui.logs.join('\n'));
    endTurn();
    await turn;
    assert.deepEqual(handoffRequests(server), []);
  });

  it('is withdrawn when the wait ends (a status without handoff): a late accept sends nothing', async () => {
    const { ui, server, c } = await waiting();
    c.onStatus(limited('s1'));
    c.onStatus(resuming('s1'));
    await flush();
    assert.equal(ui.offers[0].withdrawn, true);
    assert.equal(c.handoffOffered, undefined);
    await c.acceptHandoff();
    assert.deepEqual(handoffRequests(server), []);
    assert.ok(ui.logs.some((l) => l === 'handoff offer for s1 withdrawn: the wait ended (status resuming)'), ui.logs.join('\n'));
  });

  it('is withdrawn when the turn ends, and when the session is replaced', async () => {
    const a = await waiting();
    a.c.onStatus(limited('s1'));
    a.endTurn('end_turn');
    await a.turn;
    assert.equal(a.ui.offers[0].withdrawn, true);
    assert.ok(a.ui.logs.includes('handoff offer for s1 withdrawn: the turn ended'), a.ui.logs.join('\n'));

    const b = await waiting();
    b.c.onStatus(limited('s1'));
    b.c.onExpired({ previousSessionId: 's1', sessionId: 's3', choice: 'new' });
    await flush();
    assert.equal(b.ui.offers[0].withdrawn, true);
    assert.equal(b.c.handoffOffered, undefined);
  });

  it('a second wait offers again', async () => {
    const { ui, c } = await waiting();
    ui.offerAnswers.set(HANDOFF_OFFER_ID, KEEP_WAITING);
    c.onStatus(limited('s1'));
    await flush();
    c.onStatus(resuming('s1'));
    c.onStatus(limited('s1'));
    await flush();
    assert.equal(ui.offers.length, 2, 'one offer per wait');
  });

  it("a wait without an offer, or another session's offer, shows nothing", async () => {
    const { ui, c } = await waiting();
    c.onStatus(limited('s1', false));
    c.onStatus(limited('other'));
    await flush();
    assert.equal(ui.offers.length, 0);
    assert.ok(ui.logs.includes('handoff offer for other not shown: the view shows s1'), ui.logs.join('\n'));
  });

  it('a handoff the server could not start leaves the session waiting and says why', async () => {
    const failed: ResumeResult = {
      outcome: 'failed',
      sessionId: null,
      breaker: closed,
      error: { kind: 'agentCrashed', message: 'codex exited with status 1', retryable: false, source: 'process' },
      stale: false,
    };
    const { ui, server, c } = await waiting({ 'session/handoff': [failed] });
    ui.offerAnswers.set(HANDOFF_OFFER_ID, 'Continue with Codex');
    c.onStatus(limited('s1'));
    await flush();
    await flush();
    assert.equal(handoffRequests(server).length, 1);
    assert.equal(c.sessionId, 's1', 'the old session goes on');
    assert.equal(c.transcript.turnRunning, true, 'its turn still waits');
    const n = ui.notifications.find((v) => v.id === 'tether.handoffFailed');
    assert.equal(n?.text, 'Tether: could not continue with codex: codex exited with status 1. The session goes on waiting.');
  });
});
