import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import {
  parseBanner,
  parseBannerCleared,
  parseExpired,
  parsePermissionRequest,
  parseRestored,
  parseResumeResult,
  parseStatus,
  parseUpdate,
} from '../../src/core/guards';

const err = (p: { ok: boolean; error?: string }) => (p.ok ? '' : (p.error ?? ''));

describe('message checks name the bad field and never throw', () => {
  it('session/status', () => {
    assert.equal(err(parseStatus(null)), 'session/status: params is not an object');
    assert.match(err(parseStatus({ state: 'dancing' })), /^session\/status: state must be one of resuming/);
    const ok = parseStatus({ sessionId: 's', state: 'rateLimited', attempt: 1, maxAttempts: 3, retryInMs: -5 });
    assert.deepEqual(ok, { ok: true, value: { sessionId: 's', state: 'rateLimited', attempt: 1, maxAttempts: 3, retryInMs: 0 } });
    const noisy = parseStatus({ state: 'ready', attempt: 'x', retryInMs: Infinity });
    assert.deepEqual(noisy, { ok: true, value: { sessionId: '', state: 'ready', attempt: 0, maxAttempts: 0 } });
  });

  it('session/banner and session/bannerCleared', () => {
    assert.equal(err(parseBanner({ kind: 'streamError', message: 'm' })), 'session/banner: id is missing');
    assert.match(err(parseBanner({ id: 'b', kind: 'party', message: 'm' })), /kind must be one of/);
    assert.equal(err(parseBanner({ id: 'b', kind: 'streamError' })), 'session/banner: message is missing');
    const b = parseBanner({ id: 'b', kind: 'streamError', message: 'm' });
    assert.equal(b.ok && b.value.dismissible, true, 'dismissible unless the server says otherwise');
    assert.equal(err(parseBannerCleared({})), 'session/bannerCleared: id is missing');
    assert.deepEqual(parseBannerCleared({ id: 'b' }), { ok: true, value: { id: 'b' } });
  });

  it('session/expired, session/restored, session/update', () => {
    assert.equal(err(parseExpired({ previousSessionId: 'a' })), 'session/expired: sessionId is missing');
    assert.equal(err(parseRestored({ sessionId: 's', snapshot: [] })), 'session/restored: snapshot is not an object');
    assert.equal(err(parseUpdate({ sessionId: 's', update: {} })), 'session/update: update.sessionUpdate is missing');
    const u = parseUpdate({ sessionId: 's', update: { sessionUpdate: 'plan' } });
    assert.equal(u.ok && u.value.replay, false);
  });

  it('ResumeResult', () => {
    assert.match(err(parseResumeResult({ outcome: 'maybe' })), /^ResumeResult: outcome must be one of/);
    const r = parseResumeResult({
      outcome: 'needsChoice',
      sessionId: null,
      breaker: { status: 'open', attempts: 3, maxAttempts: 3, userRetries: 1 },
      recovery: { message: 'm', detail: 'd', actions: [{ id: 'retry', title: 'Try Again' }, { id: 7 }, 'x'] },
      stale: true,
    });
    assert.ok(r.ok);
    if (!r.ok) return;
    assert.equal(r.value.sessionId, null);
    assert.deepEqual(r.value.recovery?.actions, [{ id: 'retry', title: 'Try Again' }]);
    assert.deepEqual(r.value.breaker, { status: 'open', attempts: 3, maxAttempts: 3, userRetries: 1 });
  });

  it('session/requestPermission', () => {
    assert.equal(err(parsePermissionRequest({ options: 'x' })), 'session/requestPermission: options is not an array');
    assert.match(err(parsePermissionRequest({ options: [{ name: 'no id' }] })), /has no option with optionId and name/);
  });
});
