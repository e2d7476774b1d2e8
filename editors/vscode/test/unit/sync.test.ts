import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { bannerView, CONTINUE_HERE, DISMISS, heldSessionId } from '../../src/core/banners';
import { HeldElsewhereError, SessionController } from '../../src/core/controller';
import { parseBanner } from '../../src/core/guards';
import type { BannerParams } from '../../src/core/protocol';
import { fromMachineText, sessionPicks } from '../../src/core/sessions';
import { continuedText, continueFailedText, heldElsewhereOffer, heldElsewhereRefusal } from '../../src/core/sync';
import { live, Server, Ui, View, type Answer } from './fakes';

const now = Date.parse('2026-11-22T01:00:00Z');

/** What vscode-jsonrpc rejects a request with when the server answers an error. */
function responseError(code: number, message: string, data?: unknown): Error {
  return Object.assign(new Error(message), { code, data });
}

const HELD_MESSAGE =
  'ada-laptop is continuing this session: it is read-only here. Choose "Continue here" (session/continueHere) to take it over; ada-laptop then shows it read-only.';

const refused = () =>
  responseError(-32803, HELD_MESSAGE, { kind: 'heldElsewhere', machine: 'ada-laptop', untilMs: 1_764_000_000_000, retryable: false });

const heldBanner = (over: Partial<BannerParams> = {}): BannerParams => ({
  id: 'held:s1',
  sessionId: 's1',
  kind: 'heldElsewhere',
  message: HELD_MESSAGE,
  dismissible: false,
  ...over,
});

const flush = async () => {
  for (let i = 0; i < 5; i++) await new Promise<void>((r) => setImmediate(r));
};

/** A controller of the folder `/ws` (`null`: no folder open). */
function make(answers: Record<string, Answer[]>, root: string | null = '/ws') {
  const ui = new Ui();
  const view = new View();
  const server = new Server(answers);
  const c = new SessionController(ui, server, {
    workspaceRoot: root ?? undefined,
    persistenceEnabled: false,
    timers: { setInterval: () => 1, clearInterval: () => undefined },
    now: () => now,
    view,
  });
  return { ui, view, server, c };
}

describe('Show Sessions: sessions from another machine (R-SYNC-1)', () => {
  it('names the machine that pushed the session last, and when, after the agent', () => {
    const raw = {
      sessions: [
        {
          sessionId: 'a',
          agent: 'claude',
          title: 'Sync the sessions',
          updatedUtc: '2026-11-22T00:55:00Z',
          turnCount: 4,
          fromMachine: 'ada-laptop',
          fromMachineAt: '2026-11-22T00:55:00Z',
        },
        { sessionId: 'b', agent: 'claude', title: 'No time', updatedUtc: '2026-11-22T00:55:00Z', turnCount: 1, fromMachine: 'ada-desktop' },
        { sessionId: 'c', agent: 'claude', title: 'Mine', updatedUtc: '2026-11-22T00:55:00Z', turnCount: 1 },
        { sessionId: 'd', agent: '', title: 'Empty machine', updatedUtc: '2026-11-22T00:55:00Z', turnCount: 1, fromMachine: '', fromMachineAt: '2026-11-22T00:55:00Z' },
      ],
    };
    assert.deepEqual(
      sessionPicks(raw, now).map((p) => p.description),
      ['claude · from ada-laptop · 5 min ago', 'claude · from ada-desktop', 'claude', 'unknown agent'],
    );
    // The detail is as before: fromMachine does not change it.
    assert.equal(sessionPicks(raw, now)[0]?.detail, 'updated 5 min ago · 4 turns · a');
  });

  it('reads fromMachine and fromMachineAt defensively', () => {
    assert.equal(fromMachineText({}, now), undefined);
    assert.equal(fromMachineText({ fromMachine: 7 }, now), undefined);
    assert.equal(fromMachineText({ fromMachine: 'ada\nlaptop', fromMachineAt: 'yesterday' }, now), 'from ada laptop · yesterday');
    assert.equal(fromMachineText({ fromMachine: 'ada-laptop', fromMachineAt: '2026-11-19T01:00:00Z' }, now), 'from ada-laptop · 3 days ago');
  });
});

describe('the heldElsewhere banner (R-SYNC-7)', () => {
  it('is parsed, a warning with Continue Here for its session, and not dismissible', () => {
    const parsed = parseBanner(heldBanner());
    assert.ok(parsed.ok);
    assert.equal(parsed.value.dismissible, false);
    const v = bannerView(parsed.value);
    assert.equal(v.severity, 'warning');
    assert.equal(v.text, `Tether: On another machine. ${HELD_MESSAGE}`);
    assert.deepEqual(v.actions, [CONTINUE_HERE]);
    assert.equal(v.continueHere, 's1');
  });

  it('takes the session from the banner id when the banner has no sessionId', () => {
    const { sessionId: _, ...noSession } = heldBanner();
    void _;
    assert.equal(heldSessionId(noSession), 's1');
    assert.equal(bannerView(noSession).continueHere, 's1');
    // Nothing names a session: no action to offer.
    const anonymous = { ...noSession, id: 'held-elsewhere' };
    assert.equal(heldSessionId(anonymous), undefined);
    assert.deepEqual(bannerView(anonymous).actions, []);
    assert.equal(bannerView(anonymous).continueHere, undefined);
  });

  it('is offered for heldElsewhere only', () => {
    for (const kind of ['restoreFailed', 'streamError', 'persistenceDisabled', 'recoveredLive', 'cannotSave', 'movedHere', 'notSynced'] as const) {
      const v = bannerView(heldBanner({ kind, dismissible: true }));
      assert.equal(v.continueHere, undefined, kind);
      assert.ok(!v.actions.includes(CONTINUE_HERE), kind);
      assert.ok(v.actions.includes(DISMISS), kind);
    }
    assert.equal(heldSessionId(heldBanner({ kind: 'movedHere' })), undefined);
  });
});

describe('a prompt refused as heldElsewhere (R-SYNC-7)', () => {
  it('is told apart from other failures by data.kind', () => {
    assert.deepEqual(heldElsewhereRefusal(refused(), 's1'), { sessionId: 's1', machine: 'ada-laptop', message: HELD_MESSAGE });
    assert.equal(heldElsewhereRefusal(responseError(-32803, 'busy', { kind: 'turnRunning', sessionId: 's1' }), 's1'), undefined);
    assert.equal(heldElsewhereRefusal(new Error('no session is live'), 's1'), undefined);
    assert.equal(heldElsewhereRefusal(responseError(-32803, 'x', 'heldElsewhere'), 's1'), undefined);
    assert.equal(heldElsewhereRefusal(undefined, 's1'), undefined);
    assert.equal(heldElsewhereRefusal('heldElsewhere', 's1'), undefined);
    // A plain object, as a rejection that is not an Error.
    assert.equal(heldElsewhereRefusal({ message: 'm', data: { kind: 'heldElsewhere' } }, 's1')?.message, 'm');
    // Without a message or machine: a sentence of its own.
    assert.deepEqual(heldElsewhereRefusal(responseError(-32803, '', { kind: 'heldElsewhere', machine: 'ada-laptop' }), 's1'), {
      sessionId: 's1',
      machine: 'ada-laptop',
      message: 'ada-laptop is continuing this session: it is read-only here.',
    });
    assert.equal(
      heldElsewhereRefusal(responseError(-32803, '', { kind: 'heldElsewhere' }), 's1')?.message,
      'Another of your machines is continuing this session: it is read-only here.',
    );
  });

  it('is offered as the banner is: same id, text and Continue Here', () => {
    const held = heldElsewhereRefusal(refused(), 's1');
    assert.ok(held);
    assert.deepEqual(heldElsewhereOffer(held), bannerView(heldBanner()));
  });
});

describe('what session/continueHere answered', () => {
  it('names the machine it was taken over from, when one held it', () => {
    assert.equal(continuedText({ epoch: 3, takenFrom: 'ada-laptop' }), 'Tether: Continued here; taken over from ada-laptop.');
    assert.equal(continuedText({ epoch: 1 }), 'Tether: Continued here.');
    assert.equal(continuedText({ epoch: 1, takenFrom: '' }), 'Tether: Continued here.');
    assert.equal(continuedText(null), 'Tether: Continued here.');
  });

  it("shows the server's message when it fails", () => {
    assert.equal(
      continueFailedText(responseError(-32803, 'sync is not set up here: set sync.remote and run `tether sync join`', { kind: 'syncOff' })),
      'Tether: Continue Here failed: sync is not set up here: set sync.remote and run `tether sync join`',
    );
    assert.equal(continueFailedText({ code: -32803, message: 'the remote refused' }), 'Tether: Continue Here failed: the remote refused');
    assert.equal(
      continueFailedText(responseError(-32601, 'Unhandled method session/continueHere')),
      'Tether: Continue Here failed: this Tether server does not support session/continueHere.',
    );
  });
});

describe('SessionController: Continue Here', () => {
  it("the banner's Continue Here sends session/continueHere for its session and workspace, then says from where", async () => {
    const { ui, server, c } = make({ 'session/continueHere': [{ epoch: 3, takenFrom: 'ada-laptop' }] });
    ui.notificationAnswers.set('held:s1', CONTINUE_HERE);
    c.onBanner(heldBanner());
    await flush();
    assert.deepEqual(server.requests, [{ method: 'session/continueHere', params: { workspace: { root: '/ws' }, sessionId: 's1' } }]);
    const done = ui.notifications.at(-1);
    assert.equal(done?.severity, 'info');
    assert.equal(done?.text, 'Tether: Continued here; taken over from ada-laptop.');
    // The server clears the banner; the extension keeps it until then.
    assert.equal(c.banners.isActive('held:s1'), true);
    c.onBannerCleared({ id: 'held:s1' });
    assert.equal(c.banners.active().length, 0);
  });

  it('closing the banner sends nothing', async () => {
    const { ui, server, c } = make({});
    c.onBanner(heldBanner());
    await flush();
    assert.equal(ui.notifications.length, 1);
    assert.deepEqual(server.requests, []);
  });

  it("shows the server's error when continuing fails", async () => {
    const syncOff = responseError(-32803, 'sync is not set up here: set sync.remote and run `tether sync join`', { kind: 'syncOff' });
    const { ui, c } = make({ 'session/continueHere': [() => Promise.reject(syncOff)] });
    await c.continueHere('s1');
    const shown = ui.notifications.at(-1);
    assert.equal(shown?.severity, 'error');
    assert.equal(shown?.text, `Tether: Continue Here failed: ${syncOff.message}`);
  });

  it('the command continues the session the view shows; with none shown it asks for one', async () => {
    const { ui, server, c } = make({ 'session/resume': [live('s9')], 'session/continueHere': [{ epoch: 2 }] });
    await c.continueHere();
    assert.deepEqual(server.requests, []);
    assert.equal(ui.notifications.at(-1)?.text, 'Tether: no session is shown to continue here; open one with Tether: Show Sessions.');
    await c.resume();
    await c.continueHere();
    assert.deepEqual(server.requests.at(-1), { method: 'session/continueHere', params: { workspace: { root: '/ws' }, sessionId: 's9' } });
    assert.equal(ui.notifications.at(-1)?.text, 'Tether: Continued here.');
  });

  it('needs a workspace folder', async () => {
    const { ui, server, c } = make({}, null);
    await c.continueHere('s1');
    assert.deepEqual(server.requests, []);
    assert.equal(ui.notifications.at(-1)?.text, 'Tether: open a folder first; sessions belong to a workspace.');
  });

  it("a prompt refused as heldElsewhere shows the server's message with Continue Here, which continues the session", async () => {
    const { ui, view, server, c } = make({
      'session/resume': [live('s1')],
      'session/prompt': [() => Promise.reject(refused())],
      'session/continueHere': [{ epoch: 4, takenFrom: 'ada-laptop' }],
    });
    await c.resume();
    ui.notificationAnswers.set('held:s1', CONTINUE_HERE);
    await assert.rejects(c.prompt('go on'), (err: unknown) => {
      assert.ok(err instanceof HeldElsewhereError);
      assert.equal(err.sessionId, 's1');
      assert.equal(err.machine, 'ada-laptop');
      assert.equal(err.message, HELD_MESSAGE);
      return true;
    });
    const offer = ui.notifications.find((n) => n.id === 'held:s1');
    assert.equal(offer?.text, `Tether: On another machine. ${HELD_MESSAGE}`);
    assert.deepEqual(offer?.actions, [CONTINUE_HERE]);
    await flush();
    assert.deepEqual(server.requests.at(-1), { method: 'session/continueHere', params: { workspace: { root: '/ws' }, sessionId: 's1' } });
    assert.equal(ui.notifications.at(-1)?.text, 'Tether: Continued here; taken over from ada-laptop.');
    // The view's turn ends with the server's message, and Send opens again.
    const prompt = view.last('prompt');
    assert.ok(prompt?.op === 'prompt' && prompt.prompt.canSend);
  });

  it('any other refusal is thrown as it was, without Continue Here', async () => {
    const busy = responseError(-32803, 'session s1 is already running a prompt turn', { kind: 'turnRunning', sessionId: 's1' });
    const { ui, c } = make({ 'session/resume': [live('s1')], 'session/prompt': [() => Promise.reject(busy)] });
    await c.resume();
    await assert.rejects(c.prompt('go on'), (err: unknown) => err === busy);
    assert.equal(ui.notifications.some((n) => n.actions.includes(CONTINUE_HERE)), false);
  });
});
