import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import type { BannerView } from '../../src/core/banners';
import { OLDER_UNAVAILABLE, SessionController, type ServerPort, type UiPort, type ViewPort } from '../../src/core/controller';
import type { PermissionPick } from '../../src/core/permission';
import type { ResumeResult } from '../../src/core/protocol';
import { ago, historyPage, isMethodNotFound, searchPicks, sessionPicks } from '../../src/core/sessions';
import type { ViewOp } from '../../src/core/transcript';

/** A UI that records only what these tests read; the quick pick waits until it is closed. */
class Ui implements UiPort {
  picks: PermissionPick[] = [];
  pickClosed = 0;
  logs: string[] = [];
  showDialog() {
    return Promise.resolve(undefined);
  }
  showNotification(v: BannerView) {
    void v;
    return Promise.resolve(undefined);
  }
  showTransient() {}
  showOffer() {
    return Promise.resolve(undefined);
  }
  setStatus() {}
  setBannerIndicator() {}
  progress() {}
  async pick(p: PermissionPick, cancelled: Promise<void>) {
    this.picks.push(p);
    await cancelled;
    this.pickClosed++;
    return undefined;
  }
  showLogs() {}
  log(line: string) {
    this.logs.push(line);
  }
}

class View implements ViewPort {
  ops: ViewOp[] = [];
  reveals = 0;
  post(op: ViewOp) {
    this.ops.push(op);
  }
  reveal() {
    this.reveals++;
  }
  last(kind: ViewOp['op']) {
    return this.ops.filter((o) => o.op === kind).at(-1);
  }
}

class Server implements ServerPort {
  requests: { method: string; params: unknown }[] = [];
  notifications: { method: string; params: unknown }[] = [];
  constructor(private readonly answers: Record<string, unknown[]>) {}
  request(method: string, params: unknown): Promise<unknown> {
    this.requests.push({ method, params });
    const next = this.answers[method]?.shift();
    if (next === undefined) return Promise.reject(new Error(`unexpected ${method}`));
    if (next instanceof Error) return Promise.reject(next);
    return Promise.resolve(next);
  }
  notify(method: string, params: unknown) {
    this.notifications.push({ method, params });
  }
}

const closed = { status: 'closed' as const, attempts: 1, maxAttempts: 3, userRetries: 0 };
const resumed: ResumeResult = { outcome: 'resumed', sessionId: 's1', breaker: closed, stale: false };
const restored = {
  sessionId: 's1',
  snapshot: {
    chatTurns: [
      { id: 't1', role: 'user', text: 'hello', timestampUtc: '', complete: true },
      { id: 't2', role: 'assistant', text: 'hi', timestampUtc: '', complete: true },
    ],
    chatTurnsBase: 40,
  },
  stale: true,
};

function make(answers: Record<string, unknown[]>) {
  const ui = new Ui();
  const view = new View();
  const server = new Server(answers);
  const noTimers = { setInterval: () => 1, clearInterval: () => undefined };
  const c = new SessionController(ui, server, { workspaceRoot: '/ws', persistenceEnabled: false, timers: noTimers, now: () => 0, view });
  return { ui, view, server, c };
}

const flush = () => new Promise<void>((r) => setImmediate(r));

describe('the session view, fed by the controller', () => {
  it('a resume: the restored turns at once (stale, view opened), the live answer, the stale mark cleared', async () => {
    const { view, c } = make({ 'session/resume': [resumed] });
    const resuming = c.resume();
    c.onRestored(restored);
    assert.equal(view.reveals, 1, 'the view opens on resume');
    const reset = view.ops[0];
    assert.ok(reset?.op === 'reset' && reset.stale && reset.items.map((i) => i.text).join() === 'hello,hi');
    c.onStatus({ sessionId: 's1', state: 'resuming', attempt: 1, maxAttempts: 3 });
    assert.deepEqual(view.last('status'), { op: 'status', status: { state: 'resuming', text: 'Resuming… attempt 1 of 3' } });
    c.onBanner({ id: 'stale:s1', sessionId: 's1', kind: 'staleSnapshot', message: 'Showing the saved transcript', dismissible: true });
    c.onStatus({ sessionId: 's1', state: 'ready', attempt: 1, maxAttempts: 3 });
    c.onBannerCleared({ id: 'stale:s1' });
    assert.deepEqual(view.last('stale'), { op: 'stale', stale: false });
    await resuming;
    assert.deepEqual(view.last('prompt'), { op: 'prompt', prompt: { canSend: true, canCancel: false, reason: '' } });
    c.onUpdate({ sessionId: 's1', update: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'live' } }, replay: false });
    assert.equal(view.last('append')?.op === 'append' && view.last('append')?.op, 'append');
  });

  it('a prompt from the view: drawn at once, Send waits while the agent answers, Cancel sends session/cancel', async () => {
    let answer!: (v: unknown) => void;
    const { view, server, c } = make({ 'session/resume': [resumed] });
    await c.resume();
    server.request = (method: string, params: unknown) => {
      server.requests.push({ method, params });
      return new Promise((r) => (answer = r));
    };
    const turn = c.prompt('run the tests');
    const user = view.last('append');
    assert.ok(user?.op === 'append' && user.item.kind === 'user' && user.item.text === 'run the tests');
    assert.deepEqual(view.last('prompt'), {
      op: 'prompt',
      prompt: { canSend: false, canCancel: true, reason: 'The agent is answering; Cancel stops the turn.' },
    });
    c.cancel();
    assert.deepEqual(server.notifications, [{ method: 'session/cancel', params: { sessionId: 's1' } }]);
    answer({ stopReason: 'cancelled' });
    await turn;
    const note = view.last('append');
    assert.ok(note?.op === 'append' && note.item.text === 'Turn cancelled.');
    assert.equal(view.last('prompt')?.op === 'prompt' && (view.last('prompt') as { prompt: { canSend: boolean } }).prompt.canSend, true);
  });

  it("a permission question: inline with exactly the agent's options; the view's answer closes the quick pick", async () => {
    const { ui, view, c } = make({});
    const request = {
      sessionId: 's1',
      toolCall: { toolCallId: 'c1', title: 'Write notes.txt', kind: 'edit' },
      options: [
        { optionId: 'allow', name: 'Allow', kind: 'allow_once' },
        { optionId: 'reject', name: 'Reject', kind: 'reject_once' },
      ],
    };
    const answering = c.onPermissionRequest(request, new Promise(() => undefined));
    const shown = view.last('permission');
    assert.ok(shown?.op === 'permission' && shown.permission);
    if (shown?.op !== 'permission' || !shown.permission) return;
    assert.deepEqual(shown.permission.options, request.options);
    assert.equal(shown.permission.title, 'Write notes.txt');
    assert.equal(ui.picks.length, 1, 'the quick pick is offered as well');
    c.answerPermission(shown.permission.requestId, 'reject');
    assert.deepEqual(await answering, { outcome: { outcome: 'selected', optionId: 'reject' } });
    await flush();
    assert.equal(ui.pickClosed, 1, 'the quick pick closed');
    assert.deepEqual(view.last('permission'), { op: 'permission', permission: null });
    c.answerPermission(shown.permission.requestId, 'allow');
    assert.match(ui.logs.at(-1) ?? '', /no longer open: ignored/);
  });

  it('a permission question cancelled by the turn leaves the view', async () => {
    const { view, c } = make({});
    let cancel!: () => void;
    const answering = c.onPermissionRequest(
      { sessionId: 's1', options: [{ optionId: 'a', name: 'Allow', kind: 'allow_once' }] },
      new Promise<void>((r) => (cancel = r)),
    );
    cancel();
    assert.deepEqual(await answering, { outcome: { outcome: 'cancelled' } });
    assert.deepEqual(view.last('permission'), { op: 'permission', permission: null });
  });

  it('older turns: session/history before the first shown turn; prepended when the server has them', async () => {
    const page = { chatTurns: [{ id: 'o1', role: 'user', text: 'older', timestampUtc: '', complete: true }] };
    const { view, server, c } = make({ 'session/history': [page] });
    c.onRestored(restored);
    await c.loadOlder();
    assert.deepEqual(server.requests[0], {
      method: 'session/history',
      params: { sessionId: 's1', beforeTurn: 40, limit: 50, workspace: { root: '/ws' } },
    });
    const prepend = view.last('prepend');
    assert.ok(prepend?.op === 'prepend' && prepend.items[0]?.text === 'older');
    assert.deepEqual(view.last('older'), { op: 'older', older: { state: 'available', count: 39 } });
  });

  it('older turns: a server without session/history (-32601) says they are not available', async () => {
    const { view, c } = make({ 'session/history': [Object.assign(new Error('Method not found'), { code: -32601 })] });
    c.onRestored(restored);
    await c.loadOlder();
    assert.deepEqual(view.last('older'), { op: 'older', older: { state: 'unavailable', message: OLDER_UNAVAILABLE } });
    await c.loadOlder(); // nothing more is asked
  });

  it('a needsChoice result and a failed one block the prompt box with their reason', async () => {
    const needs: ResumeResult = {
      outcome: 'failed',
      sessionId: null,
      breaker: closed,
      stale: false,
      error: { kind: 'invalidRequest', message: 'the agent could not be started', retryable: false, source: 'process' },
    };
    const { view, c } = make({ 'session/resume': [needs] });
    await c.resume();
    const p = view.last('prompt');
    assert.ok(p?.op === 'prompt' && !p.prompt.canSend && p.prompt.reason.includes('could not be resumed'));
  });
});

describe('Show Sessions', () => {
  it('lists title (or first prompt), agent, last update and turn count, most recent first', async () => {
    const now = Date.parse('2026-11-22T01:00:00Z');
    const raw = {
      sessions: [
        { sessionId: '77b0aaaa-1111', agent: 'claude', title: 'Fix the build', updatedUtc: '2026-11-22T00:55:00Z', turnCount: 12 },
        { sessionId: '1f3a9c2e-2222', agent: 'scripted', updatedUtc: '2026-11-20T01:00:00Z', turnCount: 1 },
        { sessionId: 'b', agent: '', firstPrompt: 'why\nis   it red', updatedUtc: 'bad', turnCount: 0 },
        { agent: 'no id' },
      ],
    };
    assert.deepEqual(sessionPicks(raw, now), [
      { sessionId: '77b0aaaa-1111', label: 'Fix the build', description: 'claude', detail: 'updated 5 min ago · 12 turns · 77b0aaaa-1111' },
      { sessionId: '1f3a9c2e-2222', label: 'Session 1f3a9c2e…', description: 'scripted', detail: 'updated 2 days ago · 1 turn · 1f3a9c2e-2222' },
      { sessionId: 'b', label: 'why is it red', description: 'unknown agent', detail: 'updated bad · 0 turns · b' },
    ]);
    const { server, c } = make({ 'session/list': [raw] });
    assert.equal((await c.listSessions()).length, 3);
    assert.deepEqual(server.requests[0], { method: 'session/list', params: { workspace: { root: '/ws' } } });
  });

  it('says where a session of another path of the project was recorded, and its branch', () => {
    const now = Date.parse('2026-11-22T01:00:00Z');
    const raw = {
      sessions: [
        { sessionId: 'm', agent: 'claude', title: 'Moved', updatedUtc: '2026-11-22T00:55:00Z', turnCount: 2, recordedAt: '/src/app-old', branch: 'main' },
        { sessionId: 'n', agent: 'claude', title: 'No branch', updatedUtc: '2026-11-22T00:55:00Z', turnCount: 2, recordedAt: '/src/notes' },
      ],
    };
    assert.deepEqual(
      sessionPicks(raw, now).map((p) => p.detail),
      ['updated 5 min ago · 2 turns · m · recorded at /src/app-old (branch main)', 'updated 5 min ago · 2 turns · n · recorded at /src/notes'],
    );
  });

  it('searches as the user types: session/search hits as picks, the snippet as detail', async () => {
    const now = Date.parse('2026-11-22T01:00:00Z');
    const raw = {
      sessions: [
        {
          sessionId: '011056c5-aaaa',
          agent: 'my-claude',
          source: 'claude',
          title: 'why is the build flaky?',
          workspace: '/ws',
          updatedUtc: '2026-11-22T00:55:00Z',
          snippet: '…the «flaky» «build» reads a\nstale cache…',
          path: '/home/ada/.claude/projects/-ws/011056c5-aaaa.jsonl',
        },
        { sessionId: '77b0aaaa-1111', agent: 'scripted', source: 'tether', updatedUtc: '2026-11-20T01:00:00Z', snippet: 'the «build» failed' },
        { sessionId: 'x', agent: '', source: 'newstore', title: '  ', updatedUtc: '', snippet: 7 },
        { agent: 'no id', snippet: 'left out' },
      ],
      indexed: 12,
    };
    assert.deepEqual(searchPicks(raw, now), [
      {
        sessionId: '011056c5-aaaa',
        label: 'why is the build flaky?',
        description: "my-claude · Claude Code's store · updated 5 min ago",
        detail: '…the flaky build reads a stale cache…',
      },
      { sessionId: '77b0aaaa-1111', label: 'Session 77b0aaaa…', description: 'scripted · saved by Tether · updated 2 days ago', detail: 'the build failed' },
      { sessionId: 'x', label: 'Session x', description: "unknown agent · newstore's store · updated unknown time", detail: '' },
    ]);
    assert.deepEqual(searchPicks({ sessions: 'no' }, now), []);
    assert.deepEqual(searchPicks(undefined, now), []);

    const { server, c } = make({ 'session/search': [raw] });
    assert.equal((await c.searchSessions('flaky "build')).length, 3);
    assert.deepEqual(server.requests[0], {
      method: 'session/search',
      params: { query: 'flaky "build', workspace: { root: '/ws' }, limit: 50 },
    });
    // Nothing typed: nothing asked.
    assert.deepEqual(await c.searchSessions('   '), []);
    assert.equal(server.requests.length, 1);
  });

  it('opens the chosen session: the view, then session/resume with its id', async () => {
    const { view, server, c } = make({ 'session/resume': [resumed] });
    await c.openSession('s1');
    assert.deepEqual(server.requests[0], { method: 'session/resume', params: { workspace: { root: '/ws' }, sessionId: 's1' } });
    assert.ok(view.reveals >= 1);
  });

  it('relative times', () => {
    const now = Date.parse('2026-11-22T01:00:00Z');
    assert.equal(ago('2026-11-22T00:59:30Z', now), 'just now');
    assert.equal(ago('2026-11-21T22:00:00Z', now), '3 h ago');
    assert.equal(ago('2026-11-01T00:00:00Z', now), '2026-11-01');
  });

  it('reads a session/history answer (docs/protocol.md)', () => {
    const t = { id: 'a', role: 'user', text: 'x', timestampUtc: '', complete: true };
    assert.deepEqual(historyPage({ sessionId: 's', chatTurnsBase: 20, chatTurns: [t, { bad: 1 }], totalChatTurns: 120 }), {
      turns: [t],
      base: 20,
    });
    assert.deepEqual(historyPage({ chatTurns: [t], chatTurnsBase: -1 }), { turns: [t] }, 'a hostile base is ignored');
    assert.deepEqual(historyPage({ chatTurns: [] }), { turns: [] });
    assert.equal(historyPage({ turns: [t] }), undefined);
    assert.equal(historyPage([t]), undefined);
    assert.equal(isMethodNotFound({ code: -32601, message: 'x' }), true);
    assert.equal(isMethodNotFound(new Error('x')), false);
  });
});
