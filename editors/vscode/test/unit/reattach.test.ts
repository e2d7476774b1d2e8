import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { SessionController } from '../../src/core/controller';
import { parseRestored, parseTurnEnded, parseUpdate } from '../../src/core/guards';
import { staleText } from '../../src/core/render';
import { LocalStatus } from '../../src/core/status';
import { live, Server, Ui, View, chunk, drawn } from './fakes';

function make(answers: Record<string, unknown[]>) {
  const ui = new Ui();
  const view = new View();
  const server = new Server(answers);
  const noTimers = { setInterval: () => 1, clearInterval: () => undefined };
  const c = new SessionController(ui, server, { workspaceRoot: '/ws', persistenceEnabled: false, timers: noTimers, now: () => 0, view });
  return { ui, view, server, c };
}

const echo = (sessionId: string, text: string, seq: number) => ({
  sessionId,
  update: { sessionUpdate: 'user_message_chunk', content: { type: 'text', text } },
  replay: false,
  seq,
});


describe('re-attaching to a session live in the daemon (R-DAEMON-4)', () => {
  it('a reloaded window resumes without afterSeq, draws the replayed running turn, and ends it on session/turnEnded', async () => {
    const { view, server, c, ui } = make({ 'session/resume': [live('s1')] });
    // The daemon replays the running turn from its prompt (the echo), before the answer.
    const resuming = c.resume();
    c.onUpdate(echo('s1', 'count', 5));
    for (let n = 1; n <= 3; n++) c.onUpdate(chunk('s1', n, 5 + n));
    await resuming;
    assert.deepEqual(server.requests, [{ method: 'session/resume', params: { workspace: { root: '/ws' } } }], 'nothing drawn yet: no sessionId, no afterSeq');
    assert.deepEqual(view.last('prompt'), {
      op: 'prompt',
      prompt: { canSend: false, canCancel: true, reason: 'The agent is answering; Cancel stops the turn.' },
    });
    // The rest streams live, then the turn ends for this window too.
    c.onUpdate(chunk('s1', 4, 9));
    c.onTurnEnded({ sessionId: 's1', seq: 10, stopReason: 'end_turn' });
    const items = drawn(view.ops);
    assert.deepEqual(
      items.map((i) => [i.kind, i.text, i.open ?? false]),
      [
        ['user', 'count', false],
        ['agent', '1\n2\n3\n4\n', false],
      ],
    );
    assert.deepEqual(view.last('prompt'), { op: 'prompt', prompt: { canSend: true, canCancel: false, reason: '' } });
    assert.equal(c.lastSeq, 10);
    assert.ok(ui.logs.includes('session/turnEnded s1 seq=10: end_turn'), ui.logs.join('\n'));
  });

  it('a turn ended with another stop reason says so, once', async () => {
    const { view, c } = make({ 'session/resume': [live('s1')] });
    await c.resume();
    c.onUpdate(echo('s1', 'count', 1));
    c.onTurnEnded({ sessionId: 's1', seq: 3, stopReason: 'cancelled' });
    c.onTurnEnded({ sessionId: 's1', seq: 3, stopReason: 'cancelled' });
    assert.deepEqual(
      drawn(view.ops).filter((i) => i.kind === 'status').map((i) => i.text),
      ['Turn cancelled.'],
    );
  });

  it("this window's own prompt is ended by its answer, not twice by session/turnEnded", async () => {
    let answer!: (v: unknown) => void;
    const { view, server, c } = make({ 'session/resume': [live('s1')] });
    await c.resume();
    server.request = (method: string, params: unknown) => {
      server.requests.push({ method, params });
      return new Promise((r) => (answer = r));
    };
    const turn = c.prompt('stop soon');
    c.onUpdate(chunk('s1', 1, 2));
    // The notification may come before the answer: the answer ends the turn.
    c.onTurnEnded({ sessionId: 's1', seq: 3, stopReason: 'cancelled' });
    assert.equal((view.last('prompt') as { prompt: { canCancel: boolean } }).prompt.canCancel, true);
    answer({ stopReason: 'cancelled' });
    await turn;
    // ...or after it: nothing more is drawn.
    c.onTurnEnded({ sessionId: 's1', seq: 3, stopReason: 'cancelled' });
    assert.deepEqual(
      drawn(view.ops).filter((i) => i.kind === 'status').map((i) => i.text),
      ['Turn cancelled.'],
    );
  });

  it('resuming a session it has drawn (its server restarted) sends that session and afterSeq of the last event drawn', async () => {
    const { server, c } = make({ 'session/resume': [live('s1'), live('s1')] });
    await c.resume();
    c.onUpdate(echo('s1', 'count', 4));
    c.onUpdate(chunk('s1', 1, 5));
    c.onUpdate({ sessionId: 'other', update: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'x' } }, replay: false, seq: 99 });
    c.onUpdate(chunk('s1', 2, 6));
    await c.serverRestarted();
    assert.deepEqual(server.requests[1], { method: 'session/resume', params: { workspace: { root: '/ws' }, sessionId: 's1', afterSeq: 6 } });
  });

  it('a session drawn from session/restored with no event since is resumed by id, without afterSeq', async () => {
    const { server, c } = make({ 'session/resume': [live('s1'), live('s1')] });
    const first = c.resume();
    c.onRestored({ sessionId: 's1', snapshot: { chatTurns: [] }, stale: true });
    await first;
    assert.deepEqual(server.requests[0]?.params, { workspace: { root: '/ws' } });
    await c.serverRestarted();
    assert.deepEqual(server.requests[1]?.params, { workspace: { root: '/ws' }, sessionId: 's1' });
  });

  it('session/reattached: the new daemon numbers events from 1 again, so the old seq is dropped', async () => {
    const { c } = make({ 'session/resume': [live('s1')] });
    await c.resume();
    c.onUpdate(chunk('s1', 1, 40));
    assert.equal(c.lastSeq, 40);
    await c.onReattached({ sessionId: 's1', result: live('s1') });
    assert.equal(c.lastSeq, undefined);
    c.onUpdate(chunk('s1', 2, 1));
    assert.equal(c.lastSeq, 1);
  });

  it('guards: seq is carried; a turnEnded without seq is refused', () => {
    const u = parseUpdate(chunk('s1', 1, 7));
    assert.ok(u.ok && u.value.seq === 7);
    const old = parseUpdate({ sessionId: 's1', update: { sessionUpdate: 'plan' } });
    assert.ok(old.ok && !('seq' in old.value));
    assert.deepEqual(parseTurnEnded({ sessionId: 's1', seq: 42, stopReason: 'end_turn' }), {
      ok: true,
      value: { sessionId: 's1', seq: 42, stopReason: 'end_turn' },
    });
    assert.deepEqual(parseTurnEnded({ sessionId: 's1', stopReason: 'end_turn' }), { ok: false, error: 'session/turnEnded: seq is not a number' });
  });
});

describe("session/restored with source: a transcript from the agent's own store (R-HIST-3)", () => {
  const path = '/home/ada/.claude/projects/-home-ada-proj/011056c5.jsonl';
  const fromClaude = {
    sessionId: '011056c5',
    snapshot: { chatTurns: [{ id: 'u1', role: 'user', text: 'please run the fixture command', timestampUtc: '', complete: true }] },
    stale: true,
    source: { agent: 'claude', path, complete: true },
  };

  it('the stale banner names the agent and the file; Tether\'s own cache keeps its text', () => {
    assert.equal(staleText(), 'Saved transcript: the agent has not confirmed it yet.');
    assert.equal(
      staleText({ agent: 'claude', path, complete: true }),
      `Transcript read from Claude Code's own session store, ${path}: the agent has not confirmed it yet.`,
    );
    assert.equal(
      staleText({ agent: 'codex', path: '/c/rollout.jsonl', complete: false }),
      "Transcript read from Codex's own session store, /c/rollout.jsonl (its latest turns; older ones may exist): the agent has not confirmed it yet.",
    );
    assert.match(staleText({ agent: 'someagent', path: '/x', complete: true }), /^Transcript read from someagent's own session store, \/x:/);
  });

  it('the view gets the source with the reset (and the banner text from it), the status item names the store', () => {
    const { view, ui, c } = make({});
    c.onRestored(fromClaude);
    const reset = view.last('reset');
    assert.ok(reset?.op === 'reset');
    assert.deepEqual(reset.source, { agent: 'claude', path, complete: true });
    assert.equal(reset.stale, true);
    assert.equal(staleText(reset.source), `Transcript read from Claude Code's own session store, ${path}: the agent has not confirmed it yet.`);
    assert.deepEqual(ui.statuses.at(-1), LocalStatus.restoredStale('011056c5', { agent: 'claude', path, complete: true }));
    assert.equal(ui.statuses.at(-1)?.text, 'Tether: Claude Code transcript');
    assert.match(ui.statuses.at(-1)?.tooltip ?? '', new RegExp(`Claude Code's own session store \\(${path.replace(/[.]/g, '\\.')}\\)`));
    assert.ok(ui.logs.some((l) => l === `restored: 011056c5 from claude's own store, ${path} (stale)`), ui.logs.join('\n'));
    // A newly opened panel is rebuilt with it too.
    const full = c.transcript.fullState()[0];
    assert.ok(full?.op === 'reset' && full.source?.agent === 'claude');
  });

  it("Tether's cache (no source): no source in the reset, the usual status", () => {
    const { view, ui, c } = make({});
    c.onRestored({ ...fromClaude, source: undefined });
    const reset = view.last('reset');
    assert.ok(reset?.op === 'reset' && reset.source === undefined);
    assert.equal(ui.statuses.at(-1)?.text, 'Tether: cached transcript');
  });

  it('a later restore of a cached session forgets the previous source', () => {
    const { view, c } = make({});
    c.onRestored(fromClaude);
    c.onRestored({ sessionId: 's2', snapshot: { chatTurns: [] }, stale: true });
    const reset = view.last('reset');
    assert.ok(reset?.op === 'reset' && reset.source === undefined);
  });

  it('the transcript of a session live in the daemon (stale: false) is drawn as live', () => {
    const { view, ui, c } = make({});
    c.onRestored({ sessionId: 's3', snapshot: fromClaude.snapshot, stale: false });
    const reset = view.last('reset');
    assert.ok(reset?.op === 'reset' && reset.stale === false && reset.items.length === 1);
    assert.ok(ui.logs.includes('restored: transcript of s3, live in the daemon'), ui.logs.join('\n'));
    assert.equal(ui.statuses.at(-1)?.tooltip, 'Session s3 is live');
    // Without the field (an older server), a snapshot is stale as before.
    const old = parseRestored({ sessionId: 's4', snapshot: {} });
    assert.ok(old.ok && old.value.stale === true);
  });

  it('guards: a malformed source is left out, never fatal', () => {
    const bad = parseRestored({ ...fromClaude, source: { agent: 3 } });
    assert.ok(bad.ok && bad.value.source === undefined);
    const partial = parseRestored({ ...fromClaude, source: { agent: 'codex', path: '/p' } });
    assert.ok(partial.ok && partial.value.source?.complete === true);
  });
});
