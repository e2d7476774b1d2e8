import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import type { ResumeResult } from '../../src/core/protocol';
import { choiceForClick, DEFAULT_ACTIONS, outcomeIntent } from '../../src/core/recovery';

const needsChoice = (over: Partial<ResumeResult> = {}): ResumeResult => ({
  outcome: 'needsChoice',
  sessionId: null,
  breaker: { status: 'open', attempts: 3, maxAttempts: 3, userRetries: 0 },
  error: { kind: 'network', message: 'connection refused', retryable: true, source: 'process' },
  recovery: {
    message: 'Cannot connect to claude',
    detail: 'Network error after 3 attempts: connection refused',
    actions: [
      { id: 'retry', title: 'Try Again' },
      { id: 'new', title: 'Start New Session' },
    ],
  },
  stale: true,
  ...over,
});

describe('recovery dialog (R-RESUME-6, R-UI-1, docs/protocol.md ResumeResult.recovery)', () => {
  it("shows the server's message, detail and buttons as they are", () => {
    const intent = outcomeIntent(needsChoice(), 'sess-1');
    assert.equal(intent.kind, 'dialog');
    if (intent.kind !== 'dialog') return;
    assert.deepEqual(intent.dialog, {
      message: 'Cannot connect to claude',
      detail: 'Network error after 3 attempts: connection refused',
      buttons: ['Try Again', 'Start New Session'],
    });
    // needsChoice carries no live session: the choice is about the session being resumed.
    assert.equal(intent.sessionId, 'sess-1');
  });

  it('prefers the result\'s own session ids over the fallback', () => {
    const a = outcomeIntent(needsChoice({ sessionId: 'live' }), 'sess-1');
    const b = outcomeIntent(needsChoice({ previousSessionId: 'prev' }), 'sess-1');
    assert.equal(a.kind === 'dialog' && a.sessionId, 'live');
    assert.equal(b.kind === 'dialog' && b.sessionId, 'prev');
  });

  it('maps each button to its choice and anything else to no choice', () => {
    const r = needsChoice();
    assert.equal(choiceForClick(r, 'Try Again'), 'retry');
    assert.equal(choiceForClick(r, 'Start New Session'), 'new');
    assert.equal(choiceForClick(r, undefined), undefined);
    assert.equal(choiceForClick(r, 'Cancel'), undefined);
  });

  it('offers "Continue in a New Session" and a handoff when the server does (R-CARRY-1, R-CARRY-5)', () => {
    const r = needsChoice({
      recovery: {
        message: 'Previous session not found',
        detail: 'd',
        actions: [
          { id: 'retry', title: 'Try Again' },
          { id: 'handoff:codex', title: 'Continue with Codex' },
          { id: 'newWithHistory', title: 'Continue in a New Session' },
          { id: 'new', title: 'Start New Session' },
          { id: 'login', title: 'Log In' },
        ],
      },
    });
    const intent = outcomeIntent(r);
    assert.deepEqual(intent.kind === 'dialog' && intent.dialog.buttons, [
      'Try Again',
      'Continue with Codex',
      'Continue in a New Session',
      'Start New Session',
    ]);
    assert.equal(choiceForClick(r, 'Continue in a New Session'), 'newWithHistory');
    assert.equal(choiceForClick(r, 'Continue with Codex'), 'handoff:codex');
    assert.equal(choiceForClick(r, 'Log In'), undefined);
  });

  it('follows the titles the server sends', () => {
    const r = needsChoice({
      recovery: {
        message: 'm',
        detail: 'd',
        actions: [
          { id: 'new', title: 'Neue Sitzung' },
          { id: 'retry', title: 'Nochmal' },
        ],
      },
    });
    const intent = outcomeIntent(r);
    assert.deepEqual(intent.kind === 'dialog' && intent.dialog.buttons, ['Neue Sitzung', 'Nochmal']);
    assert.equal(choiceForClick(r, 'Nochmal'), 'retry');
  });

  it('falls back to the default texts and states attempts and error when recovery is missing', () => {
    const { recovery: _omit, ...rest } = needsChoice();
    void _omit;
    const intent = outcomeIntent(rest);
    assert.equal(intent.kind, 'dialog');
    if (intent.kind !== 'dialog') return;
    assert.equal(intent.dialog.message, 'Failed to resume session');
    assert.equal(intent.dialog.detail, 'Resume failed after 3 of 3 attempts: network: connection refused');
    assert.deepEqual(intent.dialog.buttons, DEFAULT_ACTIONS.map((a) => a.title));
  });

  it('renders resumed and started results as a live session', () => {
    const r: ResumeResult = { ...needsChoice(), outcome: 'started', sessionId: 'new-1', previousSessionId: 'old-1', stale: false };
    assert.deepEqual(outcomeIntent(r), { kind: 'live', sessionId: 'new-1', stale: false, replaced: 'old-1' });
  });

  it('treats a live outcome without a session id as a failure to report', () => {
    const r: ResumeResult = { ...needsChoice(), outcome: 'resumed', sessionId: null };
    assert.equal(outcomeIntent(r).kind, 'failed');
  });

  it('renders failed with the server texts', () => {
    const r: ResumeResult = {
      ...needsChoice(),
      outcome: 'failed',
      recovery: { message: 'Login required', detail: 'Run claude /login', actions: [] },
    };
    assert.deepEqual(outcomeIntent(r), { kind: 'failed', message: 'Login required', detail: 'Run claude /login' });
  });
});
