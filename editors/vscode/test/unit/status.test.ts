import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import type { StatusParams } from '../../src/core/protocol';
import { formatDelay, progressMessage, shortId, StatusTracker, statusView } from '../../src/core/status';

const status = (over: Partial<StatusParams>): StatusParams => ({
  sessionId: 'a1b2c3d4e5f6',
  state: 'resuming',
  attempt: 1,
  maxAttempts: 3,
  ...over,
});

describe('status texts (R-RESUME-9)', () => {
  it('says which attempt is running', () => {
    assert.equal(progressMessage(status({ attempt: 2 }), 0), 'Resuming… attempt 2 of 3');
  });

  it('counts a rate-limit wait down in whole seconds, rounded up', () => {
    const s = status({ state: 'rateLimited', retryInMs: 40_000, errorKind: 'rateLimited' });
    assert.equal(progressMessage(s, 0), 'Rate limited, resuming in 40 s');
    assert.equal(progressMessage(s, 15_200), 'Rate limited, resuming in 25 s');
    assert.equal(progressMessage(s, 39_001), 'Rate limited, resuming in 1 s');
    assert.equal(progressMessage(s, 40_000), 'Rate limited, resuming now');
    assert.equal(progressMessage(s, 60_000), 'Rate limited, resuming now');
  });

  it('says when the next attempt comes after a failed one', () => {
    const s = status({ state: 'waitingRetry', attempt: 1, retryInMs: 2_000 });
    assert.equal(progressMessage(s, 0), 'Resuming… attempt 1 of 3 failed, retrying in 2 s');
    assert.equal(progressMessage(s, 2_000), 'Resuming… attempt 1 of 3 failed, retrying now');
  });

  it('shows an agent that is silent mid-turn with the server\'s words', () => {
    const message = 'opencode has sent nothing for 5 s: it retries rate limits and server errors by itself; waiting for it';
    const s = status({ state: 'agentSilent', attempt: 0, maxAttempts: 0, message });
    assert.equal(progressMessage(s, 0), message);
    const view = statusView(s, 0);
    assert.equal(view.icon, 'watch');
    assert.ok(view.tooltip.includes(message));
  });

  it('has no progress text for terminal states', () => {
    assert.equal(progressMessage(status({ state: 'ready' }), 0), undefined);
    assert.equal(progressMessage(status({ state: 'failed' }), 0), undefined);
  });

  it('formats long delays in minutes', () => {
    assert.equal(formatDelay(0), '0 s');
    assert.equal(formatDelay(1), '1 s');
    assert.equal(formatDelay(89_000), '89 s');
    assert.equal(formatDelay(90_000), '1 min 30 s');
    assert.equal(formatDelay(300_000), '5 min');
    assert.equal(formatDelay(-5), '0 s');
  });

  it('shortens session ids the way the recovery dialog shows them (R-UI-2)', () => {
    assert.equal(shortId('2b44701f-c54a-46e0'), '2b44701f…');
    assert.equal(shortId('abc'), 'abc');
  });

  it('puts the same text in the status bar and lets a failed state be clicked to resume', () => {
    const v = statusView(status({ attempt: 3 }), 0);
    assert.equal(v.text, 'Resuming… attempt 3 of 3');
    assert.equal(v.icon, 'sync~spin');
    const f = statusView(status({ state: 'failed', errorKind: 'network' }), 0);
    assert.equal(f.command, 'tether.resumeSession');
    assert.equal(f.severity, 'error');
    assert.match(f.tooltip, /network/);
  });
});

describe('StatusTracker', () => {
  it('opens progress on the first busy state, updates it, and closes it on ready', () => {
    let now = 1_000;
    const t = new StatusTracker(() => now);
    assert.deepEqual(t.apply(status({ attempt: 1 })).progress, { kind: 'show', message: 'Resuming… attempt 1 of 3' });
    assert.deepEqual(t.apply(status({ attempt: 2 })).progress, { kind: 'show', message: 'Resuming… attempt 2 of 3' });
    now += 500;
    assert.deepEqual(t.apply(status({ state: 'ready' })).progress, { kind: 'close' });
    // A second terminal state has nothing left to close.
    assert.deepEqual(t.apply(status({ state: 'ready' })).progress, { kind: 'none' });
  });

  it('ticks a countdown from the time the status arrived', () => {
    let now = 0;
    const t = new StatusTracker(() => now);
    t.apply(status({ state: 'rateLimited', retryInMs: 40_000 }));
    assert.equal(t.counting(), true);
    now = 10_000;
    const tick = t.tick();
    assert.deepEqual(tick?.progress, { kind: 'show', message: 'Rate limited, resuming in 30 s' });
    assert.equal(tick?.view.text, 'Rate limited, resuming in 30 s');
  });

  it('does not tick states without a countdown', () => {
    const t = new StatusTracker(() => 0);
    assert.equal(t.tick(), undefined);
    t.apply(status({ state: 'resuming' }));
    assert.equal(t.tick(), undefined);
    assert.equal(t.counting(), false);
  });

  it('close() ends an open progress once', () => {
    const t = new StatusTracker(() => 0);
    t.apply(status({}));
    assert.deepEqual(t.close(), { kind: 'close' });
    assert.deepEqual(t.close(), { kind: 'none' });
  });
});
