import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { SessionController, TURN_LOST, TurnDetachedError, type SessionMemory } from '../../src/core/controller';
import type { ResumeResult } from '../../src/core/protocol';
import { isConnectionLost, listedSession } from '../../src/core/sessions';
import { LocalStatus } from '../../src/core/status';
import { RECONNECTING } from '../../src/core/transcript';
import { type Answer, closed, live, Server, Ui, View, chunk, drawn } from './fakes';

/** A memory that keeps what it is given, like `workspaceState`. */
class Memory implements SessionMemory {
  sets: unknown[] = [];
  constructor(public value: unknown = undefined) {}
  get() {
    return this.value;
  }
  set(value: { sessionId: string } | undefined) {
    this.sets.push(value);
    this.value = value;
  }
}

function make(answers: Record<string, Answer[]>, opts: { daemon?: boolean; memory?: Memory } = {}) {
  const ui = new Ui();
  const view = new View();
  const server = new Server(answers);
  const noTimers = { setInterval: () => 1, clearInterval: () => undefined };
  const c = new SessionController(ui, server, {
    workspaceRoot: '/ws',
    persistenceEnabled: false,
    timers: noTimers,
    now: () => 0,
    view,
    daemon: opts.daemon ?? true,
    ...(opts.memory ? { memory: opts.memory } : {}),
  });
  return { ui, view, server, c };
}

/** The error vscode-jsonrpc rejects a waiting request with when the connection is disposed. */
const connectionDisposed = () =>
  Object.assign(new Error('Pending response rejected since connection got disposed'), { code: -32097 });

/** A request whose answer the test gives (or refuses) later. */
function deferred() {
  let resolve!: (v: unknown) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<unknown>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject, answer: () => promise };
}


const listing = (sessionId: string, live: boolean, turnRunning: boolean) => ({
  sessions: [{ sessionId, agent: 'scripted', updatedUtc: '', turnCount: 1, live, turnRunning, clients: 1 }],
});

/** Starts a turn on live session s1 whose `session/prompt` answer is in the test's hands. */
async function turnRunning(answers: Record<string, Answer[]>, opts: { daemon?: boolean } = {}) {
  const prompt = deferred();
  const env = make({ ...answers, 'session/resume': [live('s1'), ...(answers['session/resume'] ?? [])], 'session/prompt': [prompt.answer] }, opts);
  await env.c.resume();
  const turn = env.c.prompt('count');
  // A rejection is checked by the test; keep node from calling it unhandled meanwhile.
  turn.catch(() => undefined);
  for (let n = 1; n <= 3; n++) env.c.onUpdate(chunk('s1', n, n + 1));
  return { ...env, prompt, turn };
}

describe('the forwarder dies mid-turn: the turn goes on in the daemon and the re-attach ends it', () => {
  it('a lost connection keeps the turn open, says it is reconnecting; the re-attach draws the rest once and turnEnded ends it', async () => {
    const { c, ui, view, server, prompt, turn } = await turnRunning({
      'session/resume': [live('s1')],
      'session/list': [listing('s1', true, true)],
    });
    prompt.reject(connectionDisposed());
    await assert.rejects(turn, (err: unknown) => err instanceof TurnDetachedError && err.sessionId === 's1');
    // Not ended: Cancel stays, no "The prompt failed", the status says it is reconnecting.
    assert.equal(c.transcript.turnRunning, true);
    assert.deepEqual(c.transcript.status, { state: 'resuming', text: RECONNECTING });
    assert.deepEqual(ui.statuses.at(-1), LocalStatus.reconnecting('s1'));
    assert.equal(drawn(view.ops).filter((i) => i.kind === 'status').length, 0);
    // The restarted server re-attaches after the last event drawn; the daemon replays the
    // missed events before the answer, and says the turn still runs.
    const restarted = c.serverRestarted();
    assert.deepEqual(ui.statuses.at(-1), LocalStatus.reconnecting('s1'), 'still reconnecting while the resume runs');
    c.onUpdate(chunk('s1', 4, 5));
    await restarted;
    assert.deepEqual(server.requests.slice(1).map((r) => [r.method, r.params]), [
      ['session/prompt', { sessionId: 's1', prompt: [{ type: 'text', text: 'count' }] }],
      ['session/resume', { workspace: { root: '/ws' }, sessionId: 's1', afterSeq: 4 }],
      ['session/list', { workspace: { root: '/ws' } }],
    ]);
    assert.equal(c.transcript.turnRunning, true, 'the daemon still runs it');
    assert.deepEqual(ui.statuses.at(-1), LocalStatus.live('s1', false));
    c.onUpdate(chunk('s1', 5, 6));
    c.onTurnEnded({ sessionId: 's1', seq: 7, stopReason: 'end_turn' });
    assert.equal(c.transcript.turnRunning, false);
    assert.deepEqual(
      drawn(view.ops).map((i) => [i.kind, i.text, i.open ?? false]),
      [
        ['user', 'count', false],
        ['agent', '1\n2\n3\n4\n5\n', false],
      ],
    );
    assert.deepEqual(view.last('prompt'), { op: 'prompt', prompt: { canSend: true, canCancel: false, reason: '' } });
    assert.equal(ui.notifications.length, 0);
  });

  it('the restart may come before the rejection: the turnEnded replayed meanwhile ends the turn, once', async () => {
    const resumed = deferred();
    const { c, view, prompt, turn } = await turnRunning({ 'session/resume': [resumed.answer], 'session/list': [listing('s1', true, false)] });
    const restarted = c.serverRestarted();
    // The turn ended while no forwarder ran: the daemon replays its end before the answer.
    c.onUpdate(chunk('s1', 4, 5));
    c.onTurnEnded({ sessionId: 's1', seq: 6, stopReason: 'end_turn' });
    resumed.resolve(live('s1'));
    await restarted;
    prompt.reject(connectionDisposed());
    await assert.rejects(turn, TurnDetachedError);
    assert.equal(c.transcript.turnRunning, false);
    assert.deepEqual(
      drawn(view.ops).map((i) => [i.kind, i.text]),
      [
        ['user', 'count'],
        ['agent', '1\n2\n3\n4\n'],
      ],
    );
  });

  it('the re-attach finds the turn gone (the daemon died too): the turn is closed saying so', async () => {
    const { c, view, prompt, turn } = await turnRunning({
      'session/resume': [live('s1')],
      // A new daemon resumed the session from the cache: live, no turn.
      'session/list': [listing('s1', true, false)],
    });
    prompt.reject(connectionDisposed());
    await assert.rejects(turn, TurnDetachedError);
    await c.serverRestarted();
    assert.equal(c.transcript.turnRunning, false);
    assert.deepEqual(
      drawn(view.ops)
        .filter((i) => i.kind === 'status')
        .map((i) => i.text),
      [`The prompt failed: ${TURN_LOST}`],
    );
  });

  it('the re-attach fails: the turn is closed with the reason', async () => {
    const failed: ResumeResult = {
      outcome: 'failed',
      sessionId: null,
      breaker: closed,
      stale: false,
      error: { kind: 'invalidRequest', message: 'no agent', retryable: false, source: 'process' },
    };
    const { c, view, prompt, turn } = await turnRunning({ 'session/resume': [failed] });
    prompt.reject(connectionDisposed());
    await assert.rejects(turn, TurnDetachedError);
    await c.serverRestarted();
    assert.equal(c.transcript.turnRunning, false);
    const status = drawn(view.ops).filter((i) => i.kind === 'status');
    assert.equal(status.length, 1);
    assert.match(status[0]?.text ?? '', new RegExp(`^The prompt failed: ${TURN_LOST} \\(the session could not be resumed: `));
  });

  it("the server's own error answer still fails the prompt and ends the turn", async () => {
    const { c, view, prompt, turn } = await turnRunning({});
    prompt.reject(Object.assign(new Error('agent crashed'), { code: -32803, data: { kind: 'agentCrashed' } }));
    await assert.rejects(turn, (err: unknown) => !(err instanceof TurnDetachedError));
    assert.equal(c.transcript.turnRunning, false);
    assert.deepEqual(
      drawn(view.ops)
        .filter((i) => i.kind === 'status')
        .map((i) => i.text),
      ['The prompt failed: agent crashed'],
    );
  });

  it('an in-process server (remote off): a lost connection fails the prompt as before', async () => {
    const { c, prompt, turn } = await turnRunning({}, { daemon: false });
    prompt.reject(connectionDisposed());
    await assert.rejects(turn, (err: unknown) => !(err instanceof TurnDetachedError));
    assert.equal(c.transcript.turnRunning, false);
  });

  it('connection-lost codes are the client library\'s; session/list is read for one session', () => {
    assert.equal(isConnectionLost({ code: -32097 }), true);
    assert.equal(isConnectionLost({ code: -32096 }), true);
    assert.equal(isConnectionLost({ code: -32803 }), false);
    assert.equal(isConnectionLost(new Error('x')), false);
    assert.deepEqual(listedSession(listing('a', true, true), 'a'), { live: true, turnRunning: true });
    assert.equal(listedSession(listing('a', true, true), 'b'), undefined);
    assert.equal(listedSession(null, 'a'), undefined);
  });
});

describe("a reloaded window resumes the session its view showed, not the workspace's most recent", () => {
  it('remembers the view\'s session; a fresh controller resumes it by id, without afterSeq', async () => {
    const memory = new Memory();
    const first = make({ 'session/resume': [live('old')] }, { memory });
    const resuming = first.c.resume();
    first.c.onRestored({ sessionId: 'old', snapshot: { chatTurns: [] }, stale: false });
    first.c.onUpdate(chunk('old', 1, 9));
    await resuming;
    assert.deepEqual(memory.value, { sessionId: 'old' });
    assert.equal(memory.sets.length, 1, 'stored once, not per event');
    // After a reload: a new controller, an empty view, the same workspaceState.
    const second = make({ 'session/resume': [live('old')] }, { memory });
    await second.c.resume();
    assert.deepEqual(second.server.requests[0]?.params, { workspace: { root: '/ws' }, sessionId: 'old' });
  });

  it('picking or starting another session replaces it; clearing the workspace forgets it', async () => {
    const memory = new Memory({ sessionId: 'old' });
    const { c, server } = make({ 'session/resume': [live('old'), live('other')], 'session/clear': [{ removed: 2 }] }, { memory });
    await c.resume();
    await c.openSession('other');
    assert.deepEqual(memory.value, { sessionId: 'other' });
    c.onExpired({ previousSessionId: 'other', sessionId: 'new' });
    assert.deepEqual(memory.value, { sessionId: 'new' });
    await c.clear();
    assert.equal(memory.value, undefined);
    assert.deepEqual(server.requests[1]?.params, { workspace: { root: '/ws' }, sessionId: 'other' });
  });

  it('nothing remembered, or something malformed: the workspace\'s most recent session', () => {
    for (const value of [undefined, null, 'old', { sessionId: 3 }, { sessionId: '' }]) {
      const { c } = make({}, { memory: new Memory(value) });
      assert.deepEqual(c.resumeParams('/ws'), { workspace: { root: '/ws' } }, JSON.stringify(value));
    }
  });

  it('a view that has drawn its session keeps resuming it with afterSeq, whatever is remembered', async () => {
    const memory = new Memory({ sessionId: 'elsewhere' });
    const { c } = make({ 'session/resume': [live('s1')] }, { memory });
    // The remembered session is resumed; the server answers with s1 (a new session replaced it).
    await c.resume();
    c.onUpdate(chunk('s1', 1, 3));
    assert.deepEqual(c.resumeParams('/ws'), { workspace: { root: '/ws' }, sessionId: 's1', afterSeq: 3 });
    assert.deepEqual(memory.value, { sessionId: 's1' });
  });
});
