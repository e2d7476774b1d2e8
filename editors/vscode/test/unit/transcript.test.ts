import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import type { StatusParams, UpdateParams } from '../../src/core/protocol';
import { MAX_TOOL_OUTPUT, TranscriptModel, type ViewOp } from '../../src/core/transcript';

function model(now = () => Date.parse('2026-11-22T01:00:00Z')) {
  const ops: ViewOp[] = [];
  const m = new TranscriptModel((op) => ops.push(op), now);
  return { m, ops };
}

const upd = (update: Record<string, unknown>, replay = false, sessionId = 's1'): UpdateParams => ({
  sessionId,
  update: update as UpdateParams['update'],
  replay,
});
const chunk = (kind: string, text: string, replay = false) => upd({ sessionUpdate: kind, content: { type: 'text', text } }, replay);
const status = (state: StatusParams['state'], extra: Partial<StatusParams> = {}): StatusParams => ({
  sessionId: 's1',
  state,
  attempt: 1,
  maxAttempts: 3,
  ...extra,
});

const snapshot = {
  chatTurns: [
    { id: 't1', role: 'user' as const, text: 'hello', timestampUtc: '2026-11-22T00:00:00Z', complete: true },
    { id: 't2', role: 'assistant' as const, text: 'Hi **there**', timestampUtc: '2026-11-22T00:00:01Z', complete: true, linkedExecId: 'call_1' },
    { id: 't3', role: 'user' as const, text: 'and then?', timestampUtc: '2026-11-22T00:00:02Z', complete: true },
  ],
  execTurns: [
    { execId: 'call_1', header: 'Run tests', command: 'npm test', status: 'completed', buffer: 'ok', truncatedBytes: 0 },
    { execId: 'call_2', header: 'Lint', command: 'npm run lint', status: 'failed', buffer: 'boom', truncatedBytes: 0 },
  ],
  chatTurnsBase: 120,
};

describe('TranscriptModel: the restored transcript', () => {
  it('draws the saved turns at once, marked stale, tool calls placed after the turn that links them', () => {
    const { m, ops } = model();
    m.restored('s1', snapshot);
    const reset = ops[0];
    assert.equal(reset?.op, 'reset');
    if (reset?.op !== 'reset') return;
    assert.equal(reset.stale, true);
    assert.deepEqual(
      reset.items.map((i) => [i.kind, i.text || i.tool?.title]),
      [
        ['user', 'hello'],
        ['agent', 'Hi **there**'],
        ['tool', 'Run tests'],
        ['user', 'and then?'],
        ['tool', 'Lint'],
      ],
    );
    assert.ok(reset.items.every((i) => i.restored));
    assert.deepEqual(ops[1], { op: 'older', older: { state: 'available', count: 120 } });
    assert.equal(m.base, 120);
  });

  it('clears the stale mark once, when the agent confirms', () => {
    const { m, ops } = model();
    m.restored('s1', snapshot);
    ops.length = 0;
    m.confirmed();
    m.confirmed();
    assert.deepEqual(ops, [{ op: 'stale', stale: false }]);
    assert.equal(m.stale, false);
  });

  it('skips a replay of history it already shows, but draws a replay when nothing was restored', () => {
    const { m, ops } = model();
    m.restored('s1', snapshot);
    ops.length = 0;
    m.update(chunk('user_message_chunk', 'hello', true));
    assert.deepEqual(ops, []);
    const fresh = model();
    fresh.m.startedSession('s1');
    fresh.ops.length = 0;
    fresh.m.update(chunk('agent_message_chunk', 'from the agent', true));
    assert.equal(fresh.ops[0]?.op, 'append');
  });

  it('ignores updates of another session', () => {
    const { m, ops } = model();
    m.startedSession('s1');
    ops.length = 0;
    m.update(upd({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'x' } }, false, 'other'));
    assert.deepEqual(ops, []);
  });
});

describe('TranscriptModel: live updates as diff ops', () => {
  it('appends a message once, then replaces only that item for each chunk', () => {
    const { m, ops } = model();
    m.startedSession('s1');
    ops.length = 0;
    m.update(chunk('agent_message_chunk', 'Two '));
    m.update(chunk('agent_message_chunk', 'files.'));
    assert.deepEqual(
      ops.map((o) => o.op),
      ['append', 'replace'],
    );
    const last = ops[1];
    assert.ok(last?.op === 'replace' && last.item.text === 'Two files.' && last.item.open === true);
    assert.equal(ops[0]?.op === 'append' && ops[0].item.id, last.item.id, 'the same item');
  });

  it('a thought, then the answer: two items; the thought is closed when the answer starts', () => {
    const { m, ops } = model();
    m.startedSession('s1');
    ops.length = 0;
    m.update(chunk('agent_thought_chunk', 'thinking'));
    m.update(chunk('agent_message_chunk', 'answer'));
    assert.deepEqual(
      ops.map((o) => (o.op === 'append' || o.op === 'replace' ? `${o.op}:${o.item.kind}:${o.item.open ? 'open' : 'closed'}` : o.op)),
      ['append:thought:open', 'replace:thought:closed', 'append:agent:open'],
    );
  });

  it('tool calls: kind, title, status and output; content in an update replaces the output', () => {
    const { m, ops } = model();
    m.startedSession('s1');
    ops.length = 0;
    m.update(upd({ sessionUpdate: 'tool_call', toolCallId: 'c1', title: 'Edit notes.txt', kind: 'edit', status: 'pending' }));
    m.update(
      upd({
        sessionUpdate: 'tool_call_update',
        toolCallId: 'c1',
        status: 'completed',
        content: [{ type: 'content', content: { type: 'text', text: 'done' } }, { type: 'diff', path: '/w/notes.txt', newText: 'hi' }],
      }),
    );
    const item = m.list()[0];
    assert.deepEqual(item?.tool, {
      toolCallId: 'c1',
      title: 'Edit notes.txt',
      kind: 'edit',
      status: 'completed',
      output: 'done\n--- /w/notes.txt\nhi',
      finishedByTether: false,
    });
    assert.deepEqual(
      ops.map((o) => o.op),
      ['append', 'replace'],
    );
  });

  it('marks the tool calls Tether finished as failed, with their explanation', () => {
    const { m } = model();
    m.startedSession('s1');
    m.update(upd({ sessionUpdate: 'tool_call', toolCallId: 'c1', title: 'Run', kind: 'execute', status: 'in_progress' }));
    m.update(
      upd({
        sessionUpdate: 'tool_call_update',
        toolCallId: 'c1',
        status: 'failed',
        content: [{ type: 'content', content: { type: 'text', text: 'Tool call interrupted: the agent process ended.' } }],
        _meta: { tether: { synthetic: true, reason: 'agentExited' } },
      }),
    );
    const t = m.list()[0]?.tool;
    assert.equal(t?.status, 'failed');
    assert.equal(t?.finishedByTether, true);
    assert.match(t?.output ?? '', /Tool call interrupted/);
  });

  it('a tool call id reported again: the same call while it runs, a new one after it finished', () => {
    const { m } = model();
    m.startedSession('s1');
    m.update(upd({ sessionUpdate: 'tool_call', toolCallId: 'c', title: 'Edit', status: 'pending' }));
    m.update(upd({ sessionUpdate: 'tool_call', toolCallId: 'c', title: 'Edit file', status: 'in_progress' }));
    assert.deepEqual(
      m.list().map((i) => i.tool?.title),
      ['Edit file'],
    );
    m.update(upd({ sessionUpdate: 'tool_call_update', toolCallId: 'c', status: 'completed' }));
    m.update(upd({ sessionUpdate: 'tool_call', toolCallId: 'c', title: 'Edit file', status: 'pending' }));
    m.update(upd({ sessionUpdate: 'tool_call_update', toolCallId: 'c', status: 'failed' }));
    assert.deepEqual(
      m.list().map((i) => i.tool?.status),
      ['completed', 'failed'],
    );
    assert.equal(new Set(m.list().map((i) => i.id)).size, 2, 'two items, two ids');
  });

  it('an update for a tool call it never saw is shown as a tool call', () => {
    const { m } = model();
    m.startedSession('s1');
    m.update(upd({ sessionUpdate: 'tool_call_update', toolCallId: 'lost', status: 'failed' }));
    assert.equal(m.list()[0]?.tool?.status, 'failed');
  });

  it('keeps only the tail of a huge tool output', () => {
    const { m } = model();
    m.startedSession('s1');
    const big = 'x'.repeat(MAX_TOOL_OUTPUT * 2);
    m.update(upd({ sessionUpdate: 'tool_call', toolCallId: 'c', content: [{ type: 'content', content: { type: 'text', text: big } }] }));
    assert.equal(m.list()[0]?.tool?.output.length, MAX_TOOL_OUTPUT + 1);
  });

  it('a plan update replaces the plan just shown', () => {
    const { m, ops } = model();
    m.startedSession('s1');
    ops.length = 0;
    m.update(upd({ sessionUpdate: 'plan', entries: [{ content: 'a', status: 'pending', priority: 'high' }] }));
    m.update(upd({ sessionUpdate: 'plan', entries: [{ content: 'a', status: 'completed', priority: 'high' }] }));
    assert.deepEqual(
      ops.map((o) => o.op),
      ['append', 'replace'],
    );
    assert.deepEqual(m.list()[0]?.plan, [{ content: 'a', status: 'completed', priority: 'high' }]);
  });

  it('the user prompt is drawn at once; a cancelled turn says so', () => {
    const { m } = model();
    m.startedSession('s1');
    m.setLive('s1');
    m.userPrompt('run the tests');
    m.update(chunk('agent_message_chunk', 'partial'));
    m.turnEnded('cancelled');
    assert.deepEqual(
      m.list().map((i) => [i.kind, i.text, i.open ?? false]),
      [
        ['user', 'run the tests', false],
        ['agent', 'partial', false],
        ['status', 'Turn cancelled.', false],
      ],
    );
    m.turnEnded(undefined, 'agentCrashed');
    assert.equal(m.list().at(-1)?.text, 'The prompt failed: agentCrashed');
  });
});

describe('TranscriptModel: status line and prompt box', () => {
  it('the prompt box opens when no session is live yet (a prompt starts one) or the session is live and no turn runs', () => {
    const { m } = model();
    assert.deepEqual(m.prompt, { canSend: true, canCancel: false, reason: '' });
    assert.deepEqual(m.status, { state: 'idle', text: 'No session yet. Send a prompt to start one, or run "Tether: Resume Session".' });
    m.onStatus(status('resuming'));
    assert.equal(m.prompt.canSend, false);
    assert.match(m.prompt.reason, /resuming/);
    assert.equal(m.status.text, 'Resuming… attempt 1 of 3');
    m.onStatus(status('ready'));
    assert.deepEqual(m.prompt, { canSend: true, canCancel: false, reason: '' });
    m.userPrompt('hi');
    assert.deepEqual(m.prompt, { canSend: false, canCancel: true, reason: 'The agent is answering; Cancel stops the turn.' });
    m.turnEnded('end_turn');
    assert.equal(m.prompt.canSend, true);
  });

  it('rate limited: the status counts down, Send waits, Cancel stays for the running turn', () => {
    let t = 1_000_000;
    const { m, ops } = model(() => t);
    m.setLive('s1');
    m.userPrompt('hi');
    ops.length = 0;
    m.onStatus(status('rateLimited', { retryInMs: 40_000 }));
    assert.equal(m.status.text, 'Rate limited, resuming in 40 s');
    assert.deepEqual(m.prompt, {
      canSend: false,
      canCancel: true,
      reason: 'Rate limited, resuming in 40 s. The prompt box opens when the session is back.',
    });
    t += 3_000;
    m.tick();
    assert.equal(m.status.text, 'Rate limited, resuming in 37 s');
    t += 100;
    const before = ops.length;
    m.tick(); // same text: nothing sent
    assert.equal(ops.length, before);
    m.onStatus(status('ready'));
    m.turnEnded('end_turn');
    assert.equal(m.prompt.canSend, true);
  });

  it('needsChoice, failed and a stopped server each block Send with their reason', () => {
    const { m } = model();
    m.setLive('s1');
    m.needsChoice('Previous session not found');
    assert.match(m.prompt.reason, /Try Again or Start New Session/);
    assert.match(m.status.text, /^Previous session not found/);
    m.failed('Cannot connect');
    assert.match(m.prompt.reason, /could not be resumed/);
    m.serverStopped();
    assert.match(m.prompt.reason, /server is not running/);
  });

  it('sends an op only when the prompt state changes', () => {
    const { m, ops } = model();
    m.setLive('s1');
    const n = ops.filter((o) => o.op === 'prompt').length;
    m.setLive('s1');
    assert.equal(ops.filter((o) => o.op === 'prompt').length, n);
  });
});

describe('TranscriptModel: older turns', () => {
  it('asks for the page before the first loaded turn, then prepends it and lowers the base', () => {
    const { m, ops } = model();
    m.restored('s1', { chatTurns: snapshot.chatTurns, chatTurnsBase: 2 });
    const ask = m.beginLoadOlder();
    assert.deepEqual(ask, { sessionId: 's1', beforeTurn: 2, limit: 50 });
    assert.equal(m.beginLoadOlder(), undefined, 'one page at a time');
    ops.length = 0;
    m.olderLoaded([
      { id: 'o1', role: 'user', text: 'first', timestampUtc: '', complete: true },
      { id: 'o2', role: 'assistant', text: 'second', timestampUtc: '', complete: true },
    ]);
    assert.equal(ops[0]?.op, 'prepend');
    assert.deepEqual(ops[1], { op: 'older', older: { state: 'none' } });
    assert.deepEqual(
      m.list().map((i) => i.text),
      ['first', 'second', 'hello', 'Hi **there**', 'and then?'],
    );
  });

  it("takes the server's chatTurnsBase as the new base and asks again below it", () => {
    const { m } = model();
    m.restored('s1', { chatTurns: snapshot.chatTurns, chatTurnsBase: 120 });
    m.beginLoadOlder();
    const turn = (i: number) => ({ id: `o${i}`, role: 'user' as const, text: `older ${i}`, timestampUtc: '', complete: true });
    // The server sent fewer turns than the page spans (one could not be read): its base wins.
    m.olderLoaded([turn(71), turn(72)], 70);
    assert.deepEqual(m.older, { state: 'available', count: 70 });
    assert.deepEqual(m.beginLoadOlder(), { sessionId: 's1', beforeTurn: 70, limit: 50 });
    m.olderLoaded([turn(0)], 0);
    assert.deepEqual(m.older, { state: 'none' });
  });

  it('says older turns are not available when the server cannot send them', () => {
    const { m, ops } = model();
    m.restored('s1', { chatTurns: [], chatTurnsBase: 10 });
    m.beginLoadOlder();
    m.olderUnavailable('Older turns are not available');
    assert.deepEqual(ops.at(-1), { op: 'older', older: { state: 'unavailable', message: 'Older turns are not available' } });
    assert.equal(m.beginLoadOlder(), undefined);
  });

  it('has nothing to ask when the conversation starts with what is shown', () => {
    const { m } = model();
    m.restored('s1', { chatTurns: snapshot.chatTurns });
    assert.deepEqual(m.older, { state: 'none' });
    assert.equal(m.beginLoadOlder(), undefined);
  });
});

describe('TranscriptModel: a big transcript', () => {
  it('5,000 turns: one reset, then each chunk is one small op whatever the size', () => {
    const { m, ops } = model();
    const chatTurns = Array.from({ length: 5000 }, (_, n) => ({
      id: `t${n}`,
      role: n % 2 === 0 ? ('user' as const) : ('assistant' as const),
      text: `turn ${n}`,
      timestampUtc: '',
      complete: true,
    }));
    const t0 = performance.now();
    m.restored('s1', { chatTurns });
    m.confirmed();
    m.setLive('s1');
    ops.length = 0;
    for (let n = 0; n < 1000; n++) m.update(chunk('agent_message_chunk', 'x'));
    const ms = performance.now() - t0;
    assert.equal(ops.filter((o) => o.op === 'append').length, 1);
    assert.equal(ops.filter((o) => o.op === 'replace').length, 999);
    assert.ok(ops.every((o) => o.op !== 'reset'), 'no op redraws the conversation');
    assert.equal(m.list().length, 5001);
    assert.ok(ms < 2000, `model work for 5,000 turns and 1,000 chunks took ${ms} ms`);
  });

  it('fullState rebuilds the whole view for a newly opened panel', () => {
    const { m } = model();
    m.restored('s1', snapshot);
    m.setPermission({ requestId: 1, title: 'Edit', toolKind: 'edit', options: [{ optionId: 'a', name: 'Allow', kind: 'allow_once' }] });
    assert.deepEqual(
      m.fullState().map((o) => o.op),
      ['reset', 'older', 'status', 'prompt', 'permission'],
    );
  });
});
