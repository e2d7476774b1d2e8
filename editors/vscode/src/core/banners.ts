/**
 * `session/banner` / `session/bannerCleared` → notifications, and the banners' lifecycle.
 *
 * Kinds and their meaning come from docs/protocol.md and R-UI-3 / R-STORE-11 (restore failed: "Previous
 * session could not be restored; start a new session", dismissible), R-UI-3 (stream error banner
 * kept visible until dismissed or the retry succeeds). A banner lives from `session/banner`
 * until the user dismisses it (dismissible ones only) or the server clears it. VS Code cannot
 * close a notification toast programmatically, so the lasting form of an active banner is
 * the status bar's banner indicator (count and texts), which follows this store exactly; the
 * toast is the announcement. The stale-transcript banner is the exception: it describes a
 * state the server ends by itself, so it is a progress notification that closes with it. A second `session/banner` with the same id and text updates the
 * store without announcing it again. Banners tied to a session end when `session/expired`
 * says that session was replaced. A `heldElsewhere` banner (R-SYNC-7: another of the user's
 * machines holds the session, read-only here) offers "Continue Here", which the controller
 * forwards as `session/continueHere`; the server clears the banner when it is done. A
 * `notSynced` banner (R-SYNC-10: a push to the sync remote failed; the turns are kept here and
 * the server retries) is a warning the server clears with the first push that works.
 */
import type { BannerKind, BannerParams } from './protocol';

export type Severity = 'info' | 'warning' | 'error';

/**
 * A notification to show: `window.show{Information,Warning,Error}Message(text, ...actions)`,
 * or, when `transient`, a notification the extension closes itself when the banner ends.
 */
export interface BannerView {
  id: string;
  severity: Severity;
  text: string;
  actions: string[];
  /**
   * The banner describes a passing state the server ends itself (`staleSnapshot`: "the agent
   * has not confirmed the transcript yet", cleared when the resume succeeds). It is shown as
   * a progress notification, the one kind an extension can close, so it does not outlive
   * the state it describes.
   */
  transient?: boolean;
  /** The session the action `CONTINUE_HERE` takes over (`session/continueHere`); set only when it is offered. */
  continueHere?: string;
}

export const DISMISS = 'Dismiss';
export const SHOW_LOGS = 'Show Logs';
/** The action of a `heldElsewhere` banner (and of a prompt refused as `heldElsewhere`). */
export const CONTINUE_HERE = 'Continue Here';

/** The id prefix of a `heldElsewhere` banner: `held:<sessionId>` (docs/protocol.md). */
const HELD_PREFIX = 'held:';

const SEVERITY: Record<BannerKind, Severity> = {
  restoreFailed: 'warning',
  staleSnapshot: 'info',
  streamError: 'error',
  persistenceDisabled: 'warning',
  recoveredLive: 'info',
  cannotSave: 'error',
  movedHere: 'info',
  heldElsewhere: 'warning',
  notSynced: 'warning',
};

/** Heading per kind, shown before the server's message. */
const TITLE: Record<BannerKind, string> = {
  restoreFailed: 'Restore failed',
  staleSnapshot: 'Stale transcript',
  streamError: 'Stream error',
  persistenceDisabled: 'Persistence disabled',
  recoveredLive: 'Recovered',
  cannotSave: 'Cannot save',
  movedHere: 'Moved here',
  heldElsewhere: 'On another machine',
  notSynced: 'Not synced',
};

/**
 * The session a `heldElsewhere` banner is about: its `sessionId`, else the id after `held:`;
 * `undefined` for another kind, or when neither names one.
 */
export function heldSessionId(b: BannerParams): string | undefined {
  if (b.kind !== 'heldElsewhere') return undefined;
  if (b.sessionId) return b.sessionId;
  return b.id.startsWith(HELD_PREFIX) && b.id.length > HELD_PREFIX.length ? b.id.slice(HELD_PREFIX.length) : undefined;
}

/** The view of a banner: its severity, heading and actions (for `heldElsewhere`, "Continue Here" and its session). */
export function bannerView(b: BannerParams): BannerView {
  const actions: string[] = [];
  if (b.kind === 'restoreFailed' || b.kind === 'streamError' || b.kind === 'persistenceDisabled' || b.kind === 'cannotSave' || b.kind === 'notSynced') {
    actions.push(SHOW_LOGS);
  }
  const held = heldSessionId(b);
  if (held) actions.push(CONTINUE_HERE);
  const text = `Tether: ${TITLE[b.kind]}. ${b.message}`;
  if (b.kind === 'staleSnapshot') return { id: b.id, severity: SEVERITY[b.kind], text, actions: [], transient: true };
  if (b.dismissible) actions.push(DISMISS);
  return { id: b.id, severity: SEVERITY[b.kind], text, actions, ...(held ? { continueHere: held } : {}) };
}

export class BannerStore {
  private readonly banners = new Map<string, BannerParams>();

  /** Records a banner; returns the view to announce, or `undefined` if it is already shown unchanged. */
  show(b: BannerParams): BannerView | undefined {
    const prev = this.banners.get(b.id);
    this.banners.set(b.id, b);
    if (prev?.message === b.message && prev.kind === b.kind) return undefined;
    return bannerView(b);
  }

  /** `session/bannerCleared`: returns the banner removed, if it was active. */
  clear(id: string): BannerParams | undefined {
    const b = this.banners.get(id);
    this.banners.delete(id);
    return b;
  }

  /** Removes the banners of a session that ended (`session/expired`); returns them. */
  clearSession(sessionId: string): BannerParams[] {
    const gone = this.active().filter((b) => b.sessionId !== undefined && b.sessionId === sessionId);
    for (const b of gone) this.banners.delete(b.id);
    return gone;
  }

  /**
   * The user dismissed a banner (clicked "Dismiss"). Non-dismissible banners and banners the
   * server already cleared are left as they are; returns the banner removed.
   */
  dismiss(id: string): BannerParams | undefined {
    const b = this.banners.get(id);
    if (!b?.dismissible) return undefined;
    this.banners.delete(id);
    return b;
  }

  /** Whether a banner is still active (a click on a stale toast is then ignored). */
  isActive(id: string): boolean {
    return this.banners.has(id);
  }

  /** Active banners, oldest first. */
  active(): BannerParams[] {
    return [...this.banners.values()];
  }

  /** Whether a stream error banner is active, and its text (the snapshot's `uiState`). */
  streamError(): { visible: boolean; text?: string } {
    const b = this.active().find((x) => x.kind === 'streamError');
    return b ? { visible: true, text: b.message } : { visible: false };
  }

  /** The status bar indicator: `undefined` when no banner is active. */
  indicator(): { text: string; tooltip: string } | undefined {
    const all = this.active();
    if (all.length === 0) return undefined;
    return {
      text: `$(bell-dot) ${all.length}`,
      tooltip: all.map((b) => bannerView(b).text).join('\n'),
    };
  }
}
