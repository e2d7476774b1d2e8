import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import type { BannerView } from '../../src/core/banners';
import { SessionController, type ServerPort, type UiPort } from '../../src/core/controller';
import type { PermissionPick } from '../../src/core/permission';
import type { PersistParams, ResumeResult } from '../../src/core/protocol';
import type { DialogIntent } from '../../src/core/recovery';
import type { ProgressIntent, StatusView } from '../../src/core/status';

/**
 * The editor side, recorded: what the controller asked to render, answering dialogs and
 * notifications from queues the test fills (what a user would click).
 */
class RecordingUi implements UiPort {
  dialogs: DialogIntent[] = [];
  notifications: BannerView[] = [];
  statuses: StatusView[] = [];
  progresses: ProgressIntent[] = [];
  indicators: ({ text: string; tooltip: string } | undefined)[] = [];
  picks: PermissionPick[] = [];
  logs: string[] = [];
  dialogAnswers: (string | undefined)[] = [];
  notificationAnswers = new Map<string, string | undefined>();
  pickAnswer: { id: string | undefined } | 'wait-for-cancel' = { id: undefined };
  logsShown = 0;
  showDialog(d: DialogIntent) {
    this.dialogs.push(d);
    return Promise.resolve(this.dialogAnswers.shift());
  }
  showNotification(v: BannerView) {
    this.notifications.push(v);
    return Promise.resolve(this.notificationAnswers.get(v.id));
  }
  transients: { view: BannerView; closed: boolean }[] = [];
  showTransient(view: BannerView, until: Promise<void>) {
    const entry = { view, closed: false };
    this.transients.push(entry);
    void until.then(() => (entry.closed = true));
  }
  showOffer(v: BannerView, withdrawn: Promise<void>) {
    this.notifications.push(v);
    return withdrawn.then(() => undefined);
  }
  setStatus(v: StatusView) {
    this.statuses.push(v);
  }
  setBannerIndicator(v: { text: string; tooltip: string } | undefined) {
    this.indicators.push(v);
  }
  progress(p: ProgressIntent) {
    this.progresses.push(p);
  }
  async pick(p: PermissionPick, cancelled: Promise<void>) {
    this.picks.push(p);
    if (this.pickAnswer === 'wait-for-cancel') {
      await cancelled;
      return undefined;
    }
    return this.pickAnswer.id;
  }
  showLogs() {
    this.logsShown++;
  }
  log(line: string) {
    this.logs.push(line);
  }
  get lastStatus() {
    return this.statuses[this.statuses.length - 1];
  }
}

/** The server side, scripted: each method answers from its queue; every request is recorded. */
class ScriptedServer implements ServerPort {
  requests: { method: string; params: unknown }[] = [];
  constructor(private readonly answers: Record<string, unknown[]>) {}
  request(method: string, params: unknown): Promise<unknown> {
    this.requests.push({ method, params });
    const queue = this.answers[method];
    if (!queue || queue.length === 0) return Promise.reject(new Error(`unexpected ${method}`));
    const next = queue.shift();
    return next instanceof Error ? Promise.reject(next) : Promise.resolve(next);
  }
  methods() {
    return this.requests.map((r) => r.method);
  }
}

const flush = () => new Promise<void>((r) => setImmediate(r));

const breaker = { status: 'open' as const, attempts: 3, maxAttempts: 3, userRetries: 0 };
const needsChoice: ResumeResult = {
  outcome: 'needsChoice',
  sessionId: null,
  breaker,
  error: { kind: 'sessionExpired', message: 'Session not found', retryable: false, source: 'acp', code: -32002 },
  recovery: {
    message: 'Previous session not found',
    detail: 'Session 2b44701f… appears to have been deleted or expired.',
    actions: [
      { id: 'retry', title: 'Try Again' },
      { id: 'new', title: 'Start New Session' },
    ],
  },
  stale: true,
};
const resumed: ResumeResult = { outcome: 'resumed', sessionId: 'old-session', breaker: { ...breaker, status: 'closed' }, stale: false };
const started: ResumeResult = {
  outcome: 'started',
  sessionId: 'new-session',
  previousSessionId: 'old-session',
  breaker: { ...breaker, status: 'closed', attempts: 0 },
  stale: false,
};
const restored = { sessionId: 'old-session', snapshot: { chatTurns: [] }, stale: true };

function make(answers: Record<string, unknown[]>, persistenceEnabled = true) {
  const ui = new RecordingUi();
  const server = new ScriptedServer(answers);
  const noTimers = { setInterval: () => 1, clearInterval: () => undefined };
  const c = new SessionController(ui, server, { workspaceRoot: '/ws', persistenceEnabled, timers: noTimers, now: () => 0 });
  return { ui, server, c };
}

describe('SessionController: the recovery dialog', () => {
  it('shows the modal for needsChoice and sends retry for "Try Again"', async () => {
    const { ui, server, c } = make({ 'session/resume': [needsChoice], 'session/recoveryChoice': [resumed] });
    ui.dialogAnswers.push('Try Again');
    // The server sends session/restored before its first agent attempt.
    const p = c.resume();
    c.onRestored(restored);
    await p;
    assert.deepEqual(ui.dialogs, [
      {
        message: 'Previous session not found',
        detail: 'Session 2b44701f… appears to have been deleted or expired.',
        buttons: ['Try Again', 'Start New Session'],
      },
    ]);
    assert.deepEqual(server.requests, [
      { method: 'session/resume', params: { workspace: { root: '/ws' } } },
      { method: 'session/recoveryChoice', params: { sessionId: 'old-session', choice: 'retry' } },
    ]);
    assert.equal(c.sessionId, 'old-session');
    assert.equal(c.awaitingChoice, false);
    assert.equal(ui.lastStatus?.icon, 'check');
  });

  it('sends new for "Start New Session" and announces the replacement from session/expired', async () => {
    const { ui, server, c } = make({ 'session/resume': [needsChoice], 'session/recoveryChoice': [started] });
    c.onRestored(restored);
    ui.dialogAnswers.push('Start New Session');
    await c.resume();
    c.onExpired({ previousSessionId: 'old-session', sessionId: 'new-session' });
    assert.deepEqual(server.requests[1], { method: 'session/recoveryChoice', params: { sessionId: 'old-session', choice: 'new' } });
    assert.equal(c.sessionId, 'new-session');
    const expired = ui.notifications.find((n) => n.id === 'tether.expired');
    assert.equal(expired?.severity, 'info');
    assert.equal(expired?.text, 'Tether: session old-sess… has ended; started new session new-sess…. The old transcript is archived.');
  });

  it('sends nothing when the dialog is dismissed, and offers it again', async () => {
    const { ui, server, c } = make({ 'session/resume': [needsChoice], 'session/recoveryChoice': [started] });
    c.onRestored(restored);
    ui.dialogAnswers.push(undefined, 'Start New Session');
    ui.notificationAnswers.set('tether.recoveryPending', 'Show Options');
    await c.resume();
    await flush();
    await flush();
    assert.equal(ui.dialogs.length, 2, 'the re-offer notification opened the dialog again');
    const reoffer = ui.notifications.find((n) => n.id === 'tether.recoveryPending');
    assert.equal(reoffer?.text, 'Tether: Previous session not found. The session is waiting for your choice.');
    assert.deepEqual(server.methods(), ['session/resume', 'session/recoveryChoice']);
    assert.equal((server.requests[1]?.params as { choice: string }).choice, 'new');
  });

  it('keeps the choice outstanding after a dismissal: the status item and Resume Session reopen the dialog', async () => {
    const { ui, server, c } = make({ 'session/resume': [needsChoice], 'session/recoveryChoice': [resumed] });
    c.onRestored(restored);
    ui.dialogAnswers.push(undefined);
    await c.resume();
    assert.equal(c.awaitingChoice, true);
    assert.equal(ui.lastStatus?.text, 'Tether: choose how to recover');
    assert.equal(ui.lastStatus?.command, 'tether.resumeSession');
    ui.dialogAnswers.push('Try Again');
    await c.resume();
    assert.deepEqual(server.methods(), ['session/resume', 'session/recoveryChoice'], 'no second session/resume');
    assert.equal(ui.dialogs.length, 2);
  });

  it('asks again when the retry round fails again (the server decides)', async () => {
    const again = { ...needsChoice, breaker: { ...breaker, userRetries: 1 } };
    const { ui, server, c } = make({ 'session/resume': [needsChoice], 'session/recoveryChoice': [again, started] });
    c.onRestored(restored);
    ui.dialogAnswers.push('Try Again', 'Start New Session');
    await c.resume();
    assert.equal(ui.dialogs.length, 2);
    assert.deepEqual(
      server.requests.slice(1).map((r) => (r.params as { choice: string }).choice),
      ['retry', 'new'],
    );
  });

  it('keeps the needsChoice status when the round\'s failed status arrives after the result', async () => {
    const { ui, c } = make({ 'session/resume': [needsChoice] });
    c.onRestored(restored);
    ui.dialogAnswers.push(undefined);
    await c.resume();
    c.onStatus({ sessionId: 'old-session', state: 'failed', attempt: 3, maxAttempts: 3, errorKind: 'network' });
    assert.equal(ui.lastStatus?.text, 'Tether: choose how to recover');
  });

  it('clears the replaced session\'s banners on session/expired', () => {
    const { ui, c } = make({});
    c.onBanner({ id: 'stale:old-session', sessionId: 'old-session', kind: 'staleSnapshot', message: 'cached', dismissible: true });
    c.onExpired({ previousSessionId: 'old-session', sessionId: 'new-session' });
    assert.equal(c.banners.active().length, 0);
    assert.equal(ui.indicators[ui.indicators.length - 1], undefined);
  });

  it('keeps the choice outstanding when the server rejects it', async () => {
    const { ui, c } = make({ 'session/resume': [needsChoice], 'session/recoveryChoice': [new Error('connection closed')] });
    c.onRestored(restored);
    ui.dialogAnswers.push('Try Again');
    await c.resume();
    assert.equal(c.awaitingChoice, true);
    assert.match(ui.lastStatus?.tooltip ?? '', /session\/recoveryChoice failed: connection closed/);
  });

  it('reports a failed outcome with the server texts and a Show Logs action', async () => {
    const failed: ResumeResult = {
      ...needsChoice,
      outcome: 'failed',
      recovery: { message: 'Authentication required', detail: 'Log in to claude', actions: [] },
    };
    const { ui, c } = make({ 'session/resume': [failed] });
    ui.notificationAnswers.set('tether.failed', 'Show Logs');
    await c.resume();
    await flush();
    assert.equal(ui.dialogs.length, 0);
    assert.equal(ui.notifications[0]?.text, 'Tether: Authentication required. Log in to claude');
    assert.equal(ui.logsShown, 1);
    assert.equal(ui.lastStatus?.severity, 'error');
  });

  it('reports a malformed result instead of throwing', async () => {
    const { ui, c } = make({ 'session/resume': [{ outcome: 42 }] });
    await c.resume();
    assert.match(ui.logs.join('\n'), /ignored: ResumeResult: outcome must be one of/);
    assert.equal(ui.lastStatus?.severity, 'error');
  });

  it('joins a resume already in flight', async () => {
    const { server, c } = make({ 'session/resume': [resumed] });
    await Promise.all([c.resume(), c.resume()]);
    assert.deepEqual(server.methods(), ['session/resume']);
  });

  it('forgets the outstanding choice and resumes again when the server restarts', async () => {
    const { ui, server, c } = make({ 'session/resume': [needsChoice, resumed] });
    c.onRestored(restored);
    ui.dialogAnswers.push(undefined);
    await c.resume();
    assert.equal(c.awaitingChoice, true);
    await c.serverRestarted();
    assert.deepEqual(server.methods(), ['session/resume', 'session/resume']);
    assert.equal(c.awaitingChoice, false);
    assert.equal(c.sessionId, 'old-session');
  });

  it('does not resume without a workspace folder', async () => {
    const ui = new RecordingUi();
    const server = new ScriptedServer({});
    const c = new SessionController(ui, server, { workspaceRoot: undefined, persistenceEnabled: true });
    await c.resume();
    assert.deepEqual(server.requests, []);
    assert.equal(ui.notifications[0]?.id, 'tether.noWorkspace');
  });
});

describe('SessionController: status and progress', () => {
  it('shows progress during the attempts and closes it when the result comes', async () => {
    const { ui, c } = make({ 'session/resume': [resumed] });
    c.onStatus({ sessionId: 'old-session', state: 'resuming', attempt: 1, maxAttempts: 3 });
    c.onStatus({ sessionId: 'old-session', state: 'waitingRetry', attempt: 1, maxAttempts: 3, retryInMs: 1000, errorKind: 'network' });
    c.onStatus({ sessionId: 'old-session', state: 'resuming', attempt: 2, maxAttempts: 3 });
    await c.resume();
    assert.deepEqual(ui.progresses, [
      { kind: 'show', message: 'Resuming… attempt 1 of 3' },
      { kind: 'show', message: 'Resuming… attempt 1 of 3 failed, retrying in 1 s' },
      { kind: 'show', message: 'Resuming… attempt 2 of 3' },
      { kind: 'close' },
    ]);
  });

  it('shows a rate-limit wait', () => {
    const { ui, c } = make({});
    c.onStatus({ sessionId: 's', state: 'rateLimited', attempt: 1, maxAttempts: 5, retryInMs: 40_000, errorKind: 'rateLimited' });
    assert.equal(ui.lastStatus?.text, 'Rate limited, resuming in 40 s');
    assert.deepEqual(ui.progresses, [{ kind: 'show', message: 'Rate limited, resuming in 40 s' }]);
    assert.equal(c.tick(), true);
  });

  it('makes the session active on ready and logs what it ignores', () => {
    const { ui, c } = make({});
    c.onStatus({ sessionId: 's', state: 'ready', attempt: 1, maxAttempts: 3 });
    assert.equal(c.sessionId, 's');
    assert.equal(c.persist.running, true);
    c.onStatus({ state: 'bogus' });
    assert.match(ui.logs[ui.logs.length - 1] ?? '', /^ignored: session\/status: state/);
  });

  it('shows the cached transcript state on session/restored', () => {
    const { ui, c } = make({});
    c.onRestored(restored);
    assert.equal(ui.lastStatus?.text, 'Tether: cached transcript');
  });
});

describe('SessionController: banners', () => {
  it('announces banners, keeps the indicator, and clears them on bannerCleared', () => {
    const { ui, c } = make({});
    c.onBanner({ id: 'b1', kind: 'restoreFailed', message: 'Previous session could not be restored.', dismissible: true });
    assert.equal(ui.notifications[0]?.text, 'Tether: Restore failed. Previous session could not be restored.');
    assert.equal(ui.indicators[ui.indicators.length - 1]?.text, '$(bell-dot) 1');
    c.onBannerCleared({ id: 'b1' });
    assert.equal(ui.indicators[ui.indicators.length - 1], undefined);
    assert.equal(c.banners.active().length, 0);
  });

  it('shows the stale-transcript banner until the server clears it, once', async () => {
    const { ui, c } = make({});
    const stale = { id: 'stale:s', sessionId: 's', kind: 'staleSnapshot', message: 'Showing the saved transcript.', dismissible: true };
    c.onBanner(stale);
    c.onBanner({ ...stale, message: 'Still showing the saved transcript.' });
    assert.equal(ui.notifications.length, 0);
    assert.equal(ui.transients.length, 1, 'one notification per banner id');
    assert.equal(ui.transients[0]?.view.text, 'Tether: Stale transcript. Showing the saved transcript.');
    c.onBannerCleared({ id: 'stale:s' });
    await flush();
    assert.equal(ui.transients[0]?.closed, true);
  });

  it("closes the stale-transcript notification when its session is replaced", async () => {
    const { ui, c } = make({});
    c.onBanner({ id: 'stale:old', sessionId: 'old', kind: 'staleSnapshot', message: 'm', dismissible: true });
    c.onExpired({ previousSessionId: 'old', sessionId: 'new' });
    await flush();
    assert.equal(ui.transients[0]?.closed, true);
  });

  it('persists a dismissed stream error as bannerChanged with the banner hidden', async () => {
    const ok = { saved: true, coalesced: false, bytes: 10, durationMs: 1, schemaVersion: 1 };
    const { ui, server, c } = make({ 'session/resume': [resumed], 'session/persist': [ok] });
    await c.resume();
    ui.notificationAnswers.set('e1', 'Dismiss');
    c.onBanner({ id: 'e1', kind: 'streamError', message: 'Stream dropped.', dismissible: true });
    await flush();
    await flush();
    const persist = server.requests.find((r) => r.method === 'session/persist')?.params as PersistParams | undefined;
    assert.equal(persist?.trigger, 'bannerChanged');
    assert.equal(persist?.snapshot.uiState.isStreamErrorVisible, false);
    assert.equal(persist?.sessionId, 'old-session');
    assert.deepEqual(persist?.workspace, { root: '/ws' });
  });

  it('re-announces active banners on request', () => {
    const { ui, c } = make({});
    c.onBanner({ id: 'p', kind: 'persistenceDisabled', message: 'Saving failed 3 times.', dismissible: false });
    c.reannounceBanners();
    assert.equal(ui.notifications.length, 2);
    assert.deepEqual(ui.notifications[1]?.actions, ['Show Logs']);
  });
});

describe('SessionController: permission and persistence', () => {
  const request = {
    sessionId: 's',
    toolCall: { toolCallId: 't', title: 'rm -rf build' },
    options: [
      { optionId: 'yes', name: 'Allow', kind: 'allow_once' },
      { optionId: 'no', name: 'Reject', kind: 'reject_once' },
    ],
  };

  it("answers the agent's permission request with the picked option", async () => {
    const { ui, c } = make({});
    ui.pickAnswer = { id: 'no' };
    const answer = await c.onPermissionRequest(request, new Promise(() => undefined));
    assert.deepEqual(answer, { outcome: { outcome: 'selected', optionId: 'no' } });
    assert.equal(ui.picks[0]?.items.length, 2);
  });

  it('names the tool call from its earlier tool_call update when the request has no title', async () => {
    const { ui, c } = make({});
    c.onUpdate({ sessionId: 's', update: { sessionUpdate: 'tool_call', toolCallId: 't9', title: 'Edit file', status: 'pending' }, replay: false });
    ui.pickAnswer = { id: 'yes' };
    await c.onPermissionRequest({ ...request, toolCall: { toolCallId: 't9' } }, new Promise(() => undefined));
    assert.equal(ui.picks[0]?.placeholder, 'Allow "Edit file"? (Escape cancels)');
  });

  it('answers cancelled when the server cancels the request', async () => {
    const { ui, c } = make({});
    ui.pickAnswer = 'wait-for-cancel';
    const answer = await c.onPermissionRequest(request, Promise.resolve());
    assert.deepEqual(answer, { outcome: { outcome: 'cancelled' } });
  });

  it('answers cancelled to a malformed request without asking', async () => {
    const { ui, c } = make({});
    assert.deepEqual(await c.onPermissionRequest({ options: [] }, Promise.resolve()), { outcome: { outcome: 'cancelled' } });
    assert.equal(ui.picks.length, 0);
  });

  it('sends a shutdown persist with the snapshot on deactivation', async () => {
    const ok = { saved: true, coalesced: false, bytes: 10, durationMs: 1, schemaVersion: 1 };
    const { server, c } = make({ 'session/resume': [resumed], 'session/persist': [ok] });
    await c.resume();
    c.onUpdate({ sessionId: 'old-session', update: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'hi' } }, replay: false });
    await c.shutdown();
    const p = server.requests[1]?.params as PersistParams;
    assert.equal(p.trigger, 'shutdown');
    assert.equal(p.snapshot.chatTurns[0]?.text, 'hi');
    assert.equal(p.snapshot.context.workingDir, '/ws');
  });

  it('sends no persist when persistence is off or no session is active', async () => {
    const off = make({ 'session/resume': [resumed] }, false);
    await off.c.resume();
    await off.c.shutdown();
    assert.deepEqual(off.server.methods(), ['session/resume']);
    const idle = make({});
    await idle.c.shutdown();
    assert.deepEqual(idle.server.requests, []);
  });

  it('persists at once when a tool call completes', async () => {
    const ok = { saved: true, coalesced: false, bytes: 10, durationMs: 1, schemaVersion: 1 };
    const { server, c } = make({ 'session/resume': [resumed], 'session/persist': [ok] });
    await c.resume();
    c.onUpdate({ sessionId: 'old-session', update: { sessionUpdate: 'tool_call', toolCallId: 't', title: 'ls', status: 'completed' }, replay: false });
    await flush();
    assert.equal((server.requests[1]?.params as PersistParams).trigger, 'execCompleted');
  });

  it('sends a prompt turn, returns the streamed reply and persists turnFinalized', async () => {
    const ok = { saved: true, coalesced: false, bytes: 10, durationMs: 1, schemaVersion: 1 };
    const server = new ScriptedServer({ 'session/resume': [resumed], 'session/persist': [ok] });
    const ui = new RecordingUi();
    const noTimers = { setInterval: () => 1, clearInterval: () => undefined };
    const c = new SessionController(ui, server, { workspaceRoot: '/ws', persistenceEnabled: true, timers: noTimers });
    await c.resume();
    // The server streams the reply while the request is pending.
    server.request = (method: string, params: unknown) => {
      server.requests.push({ method, params });
      if (method === 'session/prompt') {
        c.onUpdate({ sessionId: 'old-session', update: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'permission: ' } }, replay: false });
        c.onUpdate({ sessionId: 'old-session', update: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'allow' } }, replay: false });
        return Promise.resolve({ stopReason: 'end_turn' });
      }
      return Promise.resolve(ok);
    };
    const out = await c.prompt('hello');
    assert.deepEqual(out, { stopReason: 'end_turn', reply: 'permission: allow', stale: false });
    assert.deepEqual(server.requests[1], {
      method: 'session/prompt',
      params: { sessionId: 'old-session', prompt: [{ type: 'text', text: 'hello' }] },
    });
    await flush();
    const persist = server.requests[2]?.params as PersistParams;
    assert.equal(persist.trigger, 'turnFinalized');
    assert.deepEqual(
      persist.snapshot.chatTurns.map((t) => [t.role, t.text, t.complete]),
      [
        ['user', 'hello', true],
        ['assistant', 'permission: allow', true],
      ],
    );
  });

  it('refuses a prompt when no session is live and the resume it sends first fails', async () => {
    const { server, c } = make({});
    await assert.rejects(c.prompt('hi'), /no session is live/);
    // With no session, a prompt resumes first (a new session when there is none: R-RESUME-11).
    assert.deepEqual(server.requests, [{ method: 'session/resume', params: { workspace: { root: '/ws' } } }]);
  });

  it('clears the saved session of the workspace', async () => {
    const { server, c } = make({ 'session/clear': [{ removed: 2 }] });
    assert.equal(await c.clear(), 2);
    assert.deepEqual(server.requests, [{ method: 'session/clear', params: { workspace: { root: '/ws' } } }]);
  });
});
