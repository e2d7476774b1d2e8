/**
 * `ResumeResult` → the recovery dialog, and the user's click → `session/recoveryChoice`.
 *
 * The server decides everything: it sends the dialog's message, detail and actions in
 * `ResumeResult.recovery` (R-RESUME-6: "Previous session not found", "Cannot connect to <agent>",
 * "Failed to resume session", the attempt count and error in the detail). The extension only
 * shows them as a modal and maps the clicked title back to the action id. Closing the dialog
 * (Escape, "Cancel") is no choice: nothing is sent, the server's breaker stays open, and the
 * extension offers the dialog again from a notification and the status bar item.
 */
import { isRecoveryChoice, type RecoveryAction, type RecoveryChoice, type ResumeResult } from './protocol';

/** The two actions docs/protocol.md fixes, used when the server sends no `actions`. */
export const DEFAULT_ACTIONS: readonly RecoveryAction[] = [
  { id: 'retry', title: 'Try Again' },
  { id: 'new', title: 'Start New Session' },
];

/** A modal: `window.showWarningMessage(message, {modal: true, detail}, ...buttons)`. */
export interface DialogIntent {
  message: string;
  detail: string;
  /** Button titles in the server's order. */
  buttons: string[];
}

/** What to render for a result. */
export type OutcomeIntent =
  | { kind: 'dialog'; dialog: DialogIntent; sessionId: string | undefined }
  | { kind: 'live'; sessionId: string; stale: boolean; replaced?: string }
  | { kind: 'failed'; message: string; detail: string }
  /** `nothingToResume` (a resume with `create: false`): no session, no agent, nothing failed. */
  | { kind: 'none' };

function knownActions(result: ResumeResult): RecoveryAction[] {
  const actions = (result.recovery?.actions ?? []).filter((a) => isRecoveryChoice(a.id));
  return actions.length > 0 ? actions : [...DEFAULT_ACTIONS];
}

/** The detail line to show when the server sent none: the attempt count and the error. */
function fallbackDetail(result: ResumeResult): string {
  const { attempts, maxAttempts } = result.breaker;
  const count = maxAttempts > 0 ? ` after ${attempts} of ${maxAttempts} attempts` : '';
  const err = result.error ? `${result.error.kind}: ${result.error.message}` : 'no error reported';
  return `Resume failed${count}: ${err}`;
}

/**
 * The intent for a resume result. `fallbackSessionId` is the session the resume was about
 * (from `session/restored` or `session/status`), used when a `needsChoice` result carries no
 * `sessionId` because no agent session is live.
 */
export function outcomeIntent(result: ResumeResult, fallbackSessionId?: string): OutcomeIntent {
  switch (result.outcome) {
    case 'needsChoice':
      return {
        kind: 'dialog',
        sessionId: result.sessionId ?? result.previousSessionId ?? fallbackSessionId,
        dialog: {
          message: result.recovery?.message || 'Failed to resume session',
          detail: result.recovery?.detail || fallbackDetail(result),
          buttons: knownActions(result).map((a) => a.title),
        },
      };
    case 'resumed':
    case 'started':
      if (result.sessionId) {
        return {
          kind: 'live',
          sessionId: result.sessionId,
          stale: result.stale,
          ...(result.previousSessionId ? { replaced: result.previousSessionId } : {}),
        };
      }
      return {
        kind: 'failed',
        message: 'Tether reported a live session without an id',
        detail: `outcome ${result.outcome} came with sessionId null`,
      };
    case 'failed':
      return {
        kind: 'failed',
        message: result.recovery?.message || result.error?.message || 'Failed to resume session',
        detail: result.recovery?.detail || fallbackDetail(result),
      };
    case 'nothingToResume':
      return { kind: 'none' };
  }
}

/**
 * The choice for a clicked button title; `undefined` for a dismissal (no title, "Cancel", or a
 * title that is not one of the dialog's actions).
 */
export function choiceForClick(result: ResumeResult, clicked: string | undefined): RecoveryChoice | undefined {
  if (clicked === undefined) return undefined;
  const action = knownActions(result).find((a) => a.title === clicked);
  return action ? (action.id as RecoveryChoice) : undefined;
}

/** The notification that offers the dialog again after a dismissal. */
export const REOFFER = {
  id: 'tether.recoveryPending',
  text: (message: string): string => `Tether: ${message}. The session is waiting for your choice.`,
  action: 'Show Options',
} as const;
