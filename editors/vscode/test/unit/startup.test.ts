import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { SessionController } from '../../src/core/controller';
import { parseResumeResult } from '../../src/core/guards';
import type { ResumeResult } from '../../src/core/protocol';
import { outcomeIntent } from '../../src/core/recovery';
import { LocalStatus } from '../../src/core/status';
import { NO_SESSION } from '../../src/core/transcript';
import { closed, drawn, Server, Ui, View, type Answer } from './fakes';

/**
 * Opening a folder resumes only what exists (R-RESUME-11): the window's start-up sends
 * `session/resume` with `create: false` when it has no session id to resume, a
 * `nothingToResume` answer is an idle view (no error), and the first prompt starts a session.
 */

const nothing: ResumeResult = { outcome: 'nothingToResume', sessionId: null, breaker: closed, stale: false };
const started = (sessionId: string): ResumeResult => ({ outcome: 'started', sessionId, breaker: closed, stale: false });

function make(answers: Record<string, Answer[]>, remembered?: string) {
  const ui = new Ui();
  const view = new View();
  const server = new Server(answers);
  const noTimers = { setInterval: () => 1, clearInterval: () => undefined };
  const stored: { value: unknown } = { value: remembered ? { sessionId: remembered } : undefined };
  const c = new SessionController(ui, server, {
    workspaceRoot: '/ws',
    persistenceEnabled: false,
    timers: noTimers,
    now: () => 0,
    view,
    memory: { get: () => stored.value, set: (v) => (stored.value = v) },
  });
  return { ui, view, server, c, stored };
}

/** The server's answer to `session/prompt`: the agent's reply streams first, then the stop reason. */
const reply = (c: SessionController, text: string) => (params: unknown) => {
  const sessionId = (params as { sessionId: string }).sessionId;
  c.onUpdate({ sessionId, update: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text } }, replay: false });
  return Promise.resolve({ stopReason: 'end_turn' });
};

describe('start-up resumes only what exists (R-RESUME-11)', () => {
  it('the start-up resume sends create: false when it has no session id to resume', async () => {
    const { server, c } = make({ 'session/resume': [nothing] });
    await c.resume({ create: false });
    assert.deepEqual(server.requests, [{ method: 'session/resume', params: { workspace: { root: '/ws' }, create: false } }]);
  });

  it("a reloaded window's start-up resumes the remembered session by id, without create", async () => {
    const { server, c } = make({ 'session/resume': [started('s1')] }, 's1');
    await c.resume({ create: false });
    assert.deepEqual(server.requests, [{ method: 'session/resume', params: { workspace: { root: '/ws' }, sessionId: 's1' } }]);
  });

  it('"Tether: Resume Session" sends no create: the server starts a session when there is none', async () => {
    const { server, c } = make({ 'session/resume': [started('s1')] });
    await c.resume();
    assert.deepEqual(server.requests, [{ method: 'session/resume', params: { workspace: { root: '/ws' } } }]);
    assert.equal(c.sessionId, 's1');
  });

  it('nothingToResume is parsed and rendered idle: no error, no notification, no dialog, the view says how to start one', async () => {
    const parsed = parseResumeResult({ outcome: 'nothingToResume', sessionId: null, breaker: closed, stale: false });
    assert.ok(parsed.ok);
    assert.deepEqual(outcomeIntent(parsed.value), { kind: 'none' });

    const { ui, view, c, stored } = make({ 'session/resume': [nothing] });
    c.setLiveIdle();
    await c.resume({ create: false });
    assert.equal(c.sessionId, undefined);
    assert.equal(c.awaitingChoice, false);
    assert.deepEqual(ui.notifications, [], 'no toast');
    assert.deepEqual(ui.statuses.at(-1), LocalStatus.idle());
    assert.ok(ui.statuses.every((s) => s.severity === 'normal'), JSON.stringify(ui.statuses));
    assert.match(LocalStatus.idle().tooltip, /no session yet.*prompt starts one/i);
    assert.deepEqual(c.transcript.status, { state: 'idle', text: NO_SESSION });
    assert.ok(view.ops.every((o) => o.op !== 'status' || o.status.state === 'idle'), JSON.stringify(view.ops));
    assert.match(NO_SESSION, /Send a prompt to start one/);
    // Send stays open: a prompt starts the session.
    assert.deepEqual(c.transcript.prompt, { canSend: true, canCancel: false, reason: '' });
    assert.deepEqual(drawn(view.ops), []);
    assert.equal(stored.value, undefined, 'no session is remembered');
    assert.ok(ui.logs.some((l) => l.includes('create=false')), ui.logs.join('\n'));
    assert.ok(ui.logs.some((l) => l.startsWith('result: nothingToResume session=null')), ui.logs.join('\n'));
    assert.ok(!ui.logs.some((l) => l.includes('failed')), ui.logs.join('\n'));
  });

  it('a prompt with no session first resumes without create: false (which starts one), then prompts it', async () => {
    const answers: Record<string, Answer[]> = { 'session/resume': [nothing, started('s1')], 'session/prompt': [] };
    const { server, view, c, stored } = make(answers);
    answers['session/prompt'].push(reply(c, 'hi back'));
    await c.resume({ create: false });
    const out = await c.prompt('hello');
    assert.deepEqual(
      server.requests.map((r) => [r.method, r.params]),
      [
        ['session/resume', { workspace: { root: '/ws' }, create: false }],
        ['session/resume', { workspace: { root: '/ws' } }],
        ['session/prompt', { sessionId: 's1', prompt: [{ type: 'text', text: 'hello' }] }],
      ],
    );
    assert.deepEqual(out, { stopReason: 'end_turn', reply: 'hi back', stale: false });
    assert.equal(c.sessionId, 's1');
    assert.deepEqual(stored.value, { sessionId: 's1' }, 'the started session is remembered for a reload');
    assert.deepEqual(
      drawn(view.ops).map((i) => [i.kind, i.text]),
      [
        ['user', 'hello'],
        ['agent', 'hi back'],
      ],
    );
  });

  it('a prompt sent while the start-up resume is in flight waits for its answer, then starts the session', async () => {
    let answerStartup!: (r: ResumeResult) => void;
    const answers: Record<string, Answer[]> = {
      'session/resume': [() => new Promise<ResumeResult>((r) => (answerStartup = r)), started('s1')],
      'session/prompt': [],
    };
    const { server, c } = make(answers);
    answers['session/prompt'].push(reply(c, 'ok'));
    const startup = c.resume({ create: false });
    const prompted = c.prompt('hello');
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(server.requests.map((r) => r.method), ['session/resume'], 'nothing else is sent before the answer');
    answerStartup(nothing);
    await startup;
    await prompted;
    assert.deepEqual(
      server.requests.map((r) => [r.method, (r.params as { create?: boolean }).create]),
      [
        ['session/resume', false],
        ['session/resume', undefined],
        ['session/prompt', undefined],
      ],
    );
  });

  it('a prompt when a session is live sends no resume', async () => {
    const answers: Record<string, Answer[]> = { 'session/resume': [started('s1')], 'session/prompt': [] };
    const { server, c } = make(answers);
    answers['session/prompt'].push(reply(c, 'ok'));
    await c.resume();
    await c.prompt('again');
    assert.deepEqual(server.requests.map((r) => r.method), ['session/resume', 'session/prompt']);
  });

  it('"Tether: Resume Session" while the start-up resume is in flight follows it when it found nothing', async () => {
    let answerStartup!: (r: ResumeResult) => void;
    const { server, c } = make({ 'session/resume': [() => new Promise<ResumeResult>((r) => (answerStartup = r)), started('s1')] });
    const startup = c.resume({ create: false });
    const command = c.resume();
    answerStartup(nothing);
    await Promise.all([startup, command]);
    assert.deepEqual(
      server.requests.map((r) => r.params),
      [{ workspace: { root: '/ws' }, create: false }, { workspace: { root: '/ws' } }],
    );
    assert.equal(c.sessionId, 's1');
  });

  it('a prompt whose session could not be started is refused, after the resume, and sends no prompt', async () => {
    const failed: ResumeResult = {
      outcome: 'failed',
      sessionId: null,
      breaker: closed,
      error: { kind: 'invalidRequest', message: 'agent command not found: claude-agent-acp', retryable: false, source: 'process' },
      stale: false,
    };
    const { ui, server, c } = make({ 'session/resume': [nothing, failed] });
    await c.resume({ create: false });
    await assert.rejects(c.prompt('hi'), /no session is live/);
    assert.deepEqual(server.requests.map((r) => r.method), ['session/resume', 'session/resume']);
    // The failure to start is the server's to tell, as for any resume.
    assert.equal(ui.notifications.at(-1)?.severity, 'error');
  });

  it('a restarted server re-attaches with create: false when the window showed no session', async () => {
    const { server, c } = make({ 'session/resume': [nothing, nothing] });
    await c.resume({ create: false });
    await c.serverRestarted();
    assert.deepEqual(
      server.requests.map((r) => r.params),
      [
        { workspace: { root: '/ws' }, create: false },
        { workspace: { root: '/ws' }, create: false },
      ],
    );
    assert.equal(c.sessionId, undefined);
  });
});
