/**
 * The session controller: turns the server's messages into UI intents and the user's answers
 * into requests. It holds no `vscode` import; `src/vscodeUi.ts` implements `UiPort` with the
 * VS Code API and `src/extension.ts` wires `ServerPort` to the language client.
 *
 * It decides nothing about recovery: which dialog, which texts, when to retry, what a choice
 * does are all the server's. It only keeps what rendering needs: the result waiting for the
 * user's choice (so a dismissed dialog can be offered again), the active session (for
 * persistence), the banners, the status, and the snapshot model.
 */
import { BannerStore, bannerView, CONTINUE_HERE, DISMISS, SHOW_LOGS, type BannerView } from './banners';
import {
  parseBanner,
  parseBannerCleared,
  parseExpired,
  parsePermissionRequest,
  parseReattached,
  parseRestored,
  parseResumeResult,
  parseStatus,
  parseTurnEnded,
  parseUpdate,
} from './guards';
import { handoffOfferView, handoffParams, KEEP_WAITING } from './handoff';
import { permissionAnswer, permissionPick, type PermissionPick } from './permission';
import { PersistScheduler, realTimers, type Timers } from './persist';
import {
  Methods,
  type ClearResult,
  type ContinueHereParams,
  type HandoffOffer,
  type PermissionResponse,
  type PersistParams,
  type PersistResult,
  type PersistTrigger,
  type RecoveryChoice,
  type ResumeParams,
  type ResumeResult,
  type StatusParams,
} from './protocol';
import { choiceForClick, outcomeIntent, REOFFER, type DialogIntent } from './recovery';
import { SnapshotModel } from './snapshot';
import { LocalStatus, shortId, StatusTracker, type ProgressIntent, type StatusView } from './status';
import { historyPage, isConnectionLost, isMethodNotFound, listedSession, SEARCH_LIMIT, searchPicks, sessionPicks, type SessionPick } from './sessions';
import { continuedText, continueFailedText, heldElsewhereOffer, heldElsewhereRefusal } from './sync';
import { TranscriptModel, type ViewOp } from './transcript';

/** What the controller asks of the editor. Every method must not throw. */
export interface UiPort {
  /** Shows the modal; resolves to the clicked button title, `undefined` when dismissed. */
  showDialog(d: DialogIntent): Promise<string | undefined>;
  /** Shows a notification; resolves to the clicked action, `undefined` when closed. */
  showNotification(v: BannerView): Promise<string | undefined>;
  /** Shows a notification that stays until `until` resolves, then closes it. */
  showTransient(v: BannerView, until: Promise<void>): void;
  /**
   * Shows a notification whose answer counts only until `withdrawn` resolves: resolves to the
   * clicked action, `undefined` when closed or withdrawn first (a later click does nothing).
   */
  showOffer(v: BannerView, withdrawn: Promise<void>): Promise<string | undefined>;
  setStatus(v: StatusView): void;
  setBannerIndicator(v: { text: string; tooltip: string } | undefined): void;
  progress(p: ProgressIntent): void;
  /** Shows a quick pick; resolves to the picked option id, `undefined` when closed or cancelled. */
  pick(p: PermissionPick, cancelled: Promise<void>): Promise<string | undefined>;
  showLogs(): void;
  log(line: string): void;
}

/** What the controller asks of the server connection. */
export interface ServerPort {
  request(method: string, params: unknown): Promise<unknown>;
  /** A notification (`session/cancel`). */
  notify?(method: string, params: unknown): void;
}

/**
 * Where the session the view shows is remembered across window reloads (VS Code's
 * `workspaceState`): a reloaded window resumes that session, not the workspace's most recent
 * one, which may be another editor's. Only the id is kept: a reloaded view has drawn
 * nothing, so no `afterSeq` would mean anything.
 */
export interface SessionMemory {
  /** What was stored (checked here: `{sessionId}`), `undefined` when nothing is. */
  get(): unknown;
  /** Stores `{sessionId}`; `undefined` forgets it. Must not throw. */
  set(value: { sessionId: string } | undefined): void;
}

/** The session view (a webview panel): the transcript model's ops, and opening it. */
export interface ViewPort {
  post(op: ViewOp): void;
  /** Shows the view (creating it when closed), without taking focus from the editor. */
  reveal(): void;
}

/** What older turns say when the server has no `session/history` (-32601). */
export const OLDER_UNAVAILABLE = 'Older turns are not available: this Tether server does not send them.';

export interface ControllerOptions {
  workspaceRoot: string | undefined;
  persistenceEnabled: boolean;
  now?: () => number;
  timers?: Timers;
  persistIntervalMs?: number;
  /** The session view; without one the transcript is kept but not drawn. */
  view?: ViewPort;
  /**
   * The server forwards to the per-user daemon (`tether.server.remote` is `auto`): a prompt
   * turn goes on there when this window's connection to the server is lost, and the
   * restarted server re-attaches to it.
   */
  daemon?: boolean;
  /** Where the view's session is remembered across reloads; without one nothing is. */
  memory?: SessionMemory;
}

/**
 * `prompt` lost its server connection while the turn runs in the daemon: the turn stays open
 * in the view and the re-attach after the server's restart brings its rest and its end.
 * Not a failure of the prompt: callers log it instead of showing an error.
 */
export class TurnDetachedError extends Error {
  constructor(
    readonly sessionId: string,
    cause: string,
  ) {
    super(`the connection to tether serve was lost (${cause}); the turn goes on in the Tether daemon and is re-attached`);
    this.name = 'TurnDetachedError';
  }
}

/**
 * `prompt` was refused because another of the user's machines holds the session (R-SYNC-7:
 * `data.kind` `heldElsewhere`). The controller has already shown the server's message with
 * "Continue Here": callers log it instead of showing an error.
 */
export class HeldElsewhereError extends Error {
  constructor(
    readonly sessionId: string,
    /** The machine that holds the session, when the server named it. */
    readonly machine: string | undefined,
    message: string,
  ) {
    super(message);
    this.name = 'HeldElsewhereError';
  }
}

/** What the view says when a turn that lost its connection did not survive. */
export const TURN_LOST =
  'the connection to the Tether server was lost and the turn is no longer running in the Tether daemon; its end was not received';

interface PendingChoice {
  result: ResumeResult;
  sessionId: string | undefined;
}

/** The handoff offer of a rate-limit or quota wait, from its first `session/status.handoff` until the wait ends. */
interface StandingOffer {
  sessionId: string;
  offer: HandoffOffer;
  /** Withdraws the notification's buttons. */
  withdraw: () => void;
}

export class SessionController {
  readonly banners = new BannerStore();
  readonly snapshot: SnapshotModel;
  readonly persist: PersistScheduler;
  /** What the session view shows. */
  readonly transcript: TranscriptModel;
  private readonly status: StatusTracker;
  /** Inline permission questions waiting for the view's answer, by request id. */
  private readonly permissionWaiters = new Map<number, (optionId: string | undefined) => void>();
  private permissionSeq = 0;
  private pending: PendingChoice | undefined;
  private dialogOpen = false;
  private activeSessionId: string | undefined;
  /** The session the last `session/restored` / `session/status` was about. */
  private currentSessionId: string | undefined;
  private resumeInFlight: Promise<void> | undefined;
  /** Whether the resume in flight may start a session (it was sent without `create: false`). */
  private resumeInFlightCreates = false;
  private lastPersist: PersistOutcome | undefined;
  /** Closers of the transient notifications on screen, by banner id. */
  private readonly transients = new Map<string, () => void>();
  /**
   * The `seq` of the last event of the view's session this controller drew
   * (`session/update`, `session/turnEnded`), for `afterSeq` when it resumes that session
   * again; `undefined` when it has drawn none since the view last changed session.
   */
  private lastSeqValue: number | undefined;
  /** The session of this controller's own `session/prompt` in flight (its answer ends the turn). */
  private promptInFlight: string | undefined;
  /**
   * The session of this controller's own turn whose `session/prompt` lost the server
   * connection (daemon only): the turn stays open until its `session/turnEnded` arrives
   * after the re-attach, or the re-attach finds it gone.
   */
  private detachedTurn: string | undefined;
  /** How many times the server was restarted (`serverRestarted`). */
  private restarts = 0;
  /** The session id last given to `opts.memory`. */
  private remembered: string | undefined;
  /**
   * The handoff offer of the current wait (shown once per wait; "Keep Waiting" keeps it here
   * so the same wait does not ask again), `undefined` when no wait with an offer stands.
   */
  private handoffOffer: StandingOffer | undefined;

  constructor(
    private readonly ui: UiPort,
    private readonly server: ServerPort,
    private readonly opts: ControllerOptions,
  ) {
    const now = opts.now ?? Date.now;
    this.status = new StatusTracker(now);
    this.snapshot = new SnapshotModel(opts.workspaceRoot ?? '', () => new Date(now()));
    this.transcript = new TranscriptModel((op) => this.opts.view?.post(op), now);
    this.persist = new PersistScheduler(
      {
        save: (trigger) => this.sendPersist(trigger),
        revision: () => this.snapshot.revision,
        onError: (trigger, err) => this.ui.log(`session/persist (${trigger}) failed: ${errText(err)}`),
      },
      opts.timers ?? realTimers,
      opts.persistIntervalMs,
    );
  }

  /** The live session, if any. */
  get sessionId(): string | undefined {
    return this.activeSessionId;
  }

  /** The `seq` of the last event of the view's session drawn here (see `resumeParams`). */
  get lastSeq(): number | undefined {
    return this.lastSeqValue;
  }

  /** Whether a recovery choice is outstanding (the dialog was dismissed). */
  get awaitingChoice(): boolean {
    return this.pending !== undefined;
  }

  /**
   * "Tether: Resume Session": offers the dialog again when a choice is outstanding, else sends
   * `session/resume` for the workspace. A resume already in flight is joined, not repeated,
   * unless it was sent with `create: false` and this one may start a session: then this one
   * follows it when it found nothing.
   *
   * `create: false` (the window's start-up, a restarted server's re-attach) is sent only when
   * there is no session id to resume: the server then answers `nothingToResume` when the
   * workspace has nothing cached, and starts no agent (R-RESUME-11). Without it (the command,
   * a prompt with no session), the server starts a session when there is none to resume.
   */
  resume(opts: { create?: boolean } = {}): Promise<void> {
    const create = opts.create ?? true;
    if (this.pending) return this.offerChoice();
    if (this.resumeInFlight) {
      if (!create || this.resumeInFlightCreates) return this.resumeInFlight;
      return this.resumeInFlight.then(() => (this.activeSessionId || this.pending ? undefined : this.resume(opts)));
    }
    const root = this.opts.workspaceRoot;
    if (!root) {
      this.ui.log('resume: no workspace folder is open');
      void this.ui.showNotification({
        id: 'tether.noWorkspace',
        severity: 'info',
        text: 'Tether: open a folder to resume its agent session.',
        actions: [],
      });
      return Promise.resolve();
    }
    const params = this.resumeParams(root);
    if (!create && !params.sessionId) params.create = false;
    this.resumeInFlightCreates = params.create !== false;
    this.resumeInFlight = (async () => {
      try {
        this.ui.log(
          `session/resume ${root}${params.sessionId ? ` ${params.sessionId}` : ''}${params.afterSeq !== undefined ? ` afterSeq=${params.afterSeq}` : ''}` +
            `${params.create === false ? ' create=false' : ''}`,
        );
        const raw = await this.server.request(Methods.resume, params);
        await this.handleResult(raw);
      } catch (err) {
        this.ui.progress(this.status.close());
        this.ui.setStatus(LocalStatus.failed(errText(err)));
        this.ui.log(`session/resume failed: ${errText(err)}`);
      } finally {
        this.resumeInFlight = undefined;
      }
    })();
    return this.resumeInFlight;
  }

  /**
   * The params of a `session/resume` of the workspace. When the view shows a session this
   * controller has drawn events of, that session is resumed and `afterSeq` names the last
   * event drawn: through the daemon, where it may still be live, only what came after it is
   * replayed (no gap, no duplicate). Otherwise the workspace's most recent session, without
   * `afterSeq`: a session live in the daemon then replays its running turn from its prompt.
   * Recovery stays the server's: a session that is not live is resumed from the cache as usual.
   */
  resumeParams(root: string): ResumeParams {
    const sessionId = this.transcript.sessionId;
    if (!sessionId) {
      // A view with nothing drawn (a reloaded window): the session it showed before, by id
      // and without `afterSeq`, so the daemon sends its transcript and then its running turn.
      const remembered = this.rememberedSession();
      return remembered ? { workspace: { root }, sessionId: remembered } : { workspace: { root } };
    }
    return { workspace: { root }, sessionId, ...(this.lastSeqValue !== undefined ? { afterSeq: this.lastSeqValue } : {}) };
  }

  /**
   * The server process was restarted (after a crash): it knows no live session and no open
   * dialog, so forget both, then resume the view's session again (after the last event drawn).
   */
  async serverRestarted(): Promise<void> {
    this.ui.log('tether serve restarted: forgetting the live session and any outstanding choice, resuming again');
    this.restarts++;
    // This window's own turn whose answer was lost with the old connection goes on in the
    // daemon: the re-attach brings the rest of it and its `session/turnEnded`.
    if (this.promptInFlight && this.opts.daemon) this.detach(this.promptInFlight);
    this.promptInFlight = undefined;
    this.pending = undefined;
    this.withdrawOffer(undefined, 'tether serve restarted');
    this.activeSessionId = undefined;
    this.persist.stop();
    this.ui.progress(this.status.close());
    const detached = this.openDetachedTurn();
    if (detached) {
      this.ui.setStatus(LocalStatus.reconnecting(detached));
      this.transcript.reconnecting();
    } else {
      this.ui.setStatus(LocalStatus.idle());
      this.transcript.setLive(undefined);
    }
    if (!this.opts.workspaceRoot) return;
    // Like start-up: a window that showed no session starts none (R-RESUME-11).
    await this.resume({ create: false });
    await this.settleDetachedTurn();
  }

  /** Marks `sessionId`'s running turn (this window's own) as going on in the daemon. */
  private detach(sessionId: string): void {
    if (this.detachedTurn === sessionId) return;
    this.detachedTurn = sessionId;
    this.ui.log(`the turn of ${sessionId} goes on in the Tether daemon; it is re-attached when tether serve is back`);
  }

  /** The session whose detached turn the view still shows running, if any. */
  private openDetachedTurn(): string | undefined {
    const sid = this.detachedTurn;
    if (sid && this.transcript.turnRunning && this.transcript.sessionId === sid) return sid;
    this.detachedTurn = undefined;
    return undefined;
  }

  /**
   * After the re-attach of a restarted server: a detached turn still open is kept only when
   * the daemon says the session is live and runs a turn (its end then arrives as
   * `session/turnEnded`); otherwise it is closed, saying the turn was lost. Notifications
   * are handled in the order they come, so a `session/turnEnded` sent before the
   * `session/list` answer has already ended the turn here.
   */
  private async settleDetachedTurn(): Promise<void> {
    const sid = this.openDetachedTurn();
    const root = this.opts.workspaceRoot;
    if (!sid || !root) return;
    if (this.activeSessionId !== sid) return this.endDetachedTurn(sid, `${TURN_LOST} (the session was not re-attached)`);
    let entry: { live: boolean; turnRunning: boolean } | undefined;
    try {
      entry = listedSession(await this.server.request(Methods.list, { workspace: { root } }), sid);
    } catch (err) {
      this.ui.log(`session/list after the re-attach failed: ${errText(err)}`);
      return this.endDetachedTurn(sid, `${TURN_LOST} (the Tether server could not say whether it still runs: ${errText(err)})`);
    }
    if (this.openDetachedTurn() !== sid) return;
    if (entry?.live && entry.turnRunning) {
      this.ui.log(`re-attached to ${sid}: its turn still runs in the daemon`);
      return;
    }
    this.endDetachedTurn(sid, TURN_LOST);
  }

  /** Closes the detached turn, if one is open (a resume that ended without the session live). */
  private endAnyDetachedTurn(message: string): void {
    const sid = this.openDetachedTurn();
    if (sid) this.endDetachedTurn(sid, message);
  }

  /** Closes the detached turn of `sid` (if the view still shows it running) with `message`. */
  private endDetachedTurn(sid: string, message: string): void {
    if (this.openDetachedTurn() !== sid) return;
    this.detachedTurn = undefined;
    this.ui.log(`the detached turn of ${sid} is closed: ${message}`);
    this.snapshot.finishTurn();
    this.transcript.turnEnded(undefined, message);
  }

  /** The server is up and no session is live yet (start-up, before any resume). */
  setLiveIdle(): void {
    if (!this.activeSessionId) this.transcript.setLive(undefined);
  }

  /** The server stopped (or never started): the view says so and the prompt box closes. */
  serverStopped(): void {
    this.transcript.serverStopped();
  }

  /**
   * "Tether: Send Prompt": one prompt turn on the live session (`session/prompt`), for trying
   * the session from the editor. Streams arrive as `session/update`s into the snapshot; a
   * permission question arrives as `session/requestPermission` meanwhile. Resolves to the stop
   * reason and the agent's reply text, then persists with trigger `turnFinalized`.
   *
   * With no live session (the start-up resume found nothing: R-RESUME-11), the prompt first
   * sends `session/resume` without `create: false`, which resumes or starts one (the server
   * decides which), then prompts that session.
   *
   * @throws when no session is live (after that resume), or the server rejects the prompt;
   * `TurnDetachedError` when the server connection was lost while the turn runs in the daemon
   * (the turn stays open in the view and the re-attach ends it); `HeldElsewhereError` when
   * another of the user's machines holds the session (its message with "Continue Here" is
   * already shown).
   */
  async prompt(text: string): Promise<{ stopReason: string; reply: string; stale: boolean }> {
    if (!this.activeSessionId) await this.sessionForPrompt();
    const sessionId = this.activeSessionId;
    if (!sessionId) throw new Error('no session is live: run "Tether: Resume Session" first');
    const mark = this.snapshot.beginPromptTurn(text);
    this.transcript.userPrompt(text);
    this.ui.log(`session/prompt ${sessionId} (${text.length} characters)`);
    let raw: Record<string, unknown> | null;
    this.promptInFlight = sessionId;
    const restarts = this.restarts;
    try {
      raw = (await this.server.request(Methods.prompt, { sessionId, prompt: [{ type: 'text', text }] })) as Record<
        string,
        unknown
      > | null;
    } catch (err) {
      if (this.promptInFlight === sessionId) this.promptInFlight = undefined;
      this.withdrawOffer(sessionId, 'the turn ended');
      if (this.opts.daemon && isConnectionLost(err)) {
        // Not the server's answer: the connection went (the forwarder died). The daemon
        // still runs the turn; the restarted server re-attaches and its end arrives then.
        this.ui.log(`session/prompt ${sessionId}: the connection was lost (${errText(err)}); not ending the turn`);
        if (this.transcript.turnRunning && this.transcript.sessionId === sessionId) {
          this.detach(sessionId);
          if (restarts === this.restarts) {
            this.ui.setStatus(LocalStatus.reconnecting(sessionId));
            this.transcript.reconnecting();
          } else {
            // The restarted server's re-attach came first: check the turn once it is done.
            void Promise.resolve(this.resumeInFlight).then(() => this.settleDetachedTurn());
          }
        }
        throw new TurnDetachedError(sessionId, errText(err));
      }
      if (this.viewMovedOn(sessionId)) {
        this.ui.log(`session/prompt ${sessionId} failed after the view moved to ${this.transcript.sessionId}: ${errText(err)}`);
        throw err;
      }
      this.snapshot.finishTurn();
      this.transcript.turnEnded(undefined, errText(err));
      const held = heldElsewhereRefusal(err, sessionId);
      if (held) {
        // Not a generic failure: the server's message, with "Continue Here" (R-SYNC-7).
        this.ui.log(`session/prompt ${sessionId}: refused, ${held.machine ?? 'another machine'} holds the session`);
        this.announce(heldElsewhereOffer(held));
        throw new HeldElsewhereError(sessionId, held.machine, held.message);
      }
      throw err;
    }
    this.promptInFlight = undefined;
    this.withdrawOffer(sessionId, 'the turn ended');
    const stopReason = typeof raw?.stopReason === 'string' ? raw.stopReason : 'unknown';
    if (this.viewMovedOn(sessionId)) {
      // A handoff (or a new session) replaced the session during the turn: the old turn
      // ended (`cancelled`, its wait abandoned) and is not the new session's to show.
      this.ui.log(`session/prompt of ${sessionId} ended (${stopReason}) after the view moved to ${this.transcript.sessionId}`);
      return { stopReason, reply: '', stale: raw?.stale === true };
    }
    this.snapshot.finishTurn();
    this.transcript.turnEnded(stopReason);
    this.ui.log(`session/prompt ended: ${stopReason}`);
    if (this.opts.persistenceEnabled) void this.persist.milestone('turnFinalized');
    return { stopReason, reply: this.snapshot.replySince(mark), stale: raw?.stale === true };
  }

  /**
   * A prompt with no live session: a resume in flight is waited for; when it leaves no
   * session either, `session/resume` is sent without `create: false`, so the server resumes
   * the workspace's session or starts one. An outstanding recovery choice is the user's to
   * make first: it is offered again instead.
   */
  private async sessionForPrompt(): Promise<void> {
    if (this.resumeInFlight) await this.resumeInFlight;
    if (this.activeSessionId) return;
    if (this.pending) {
      void this.offerChoice();
      throw new Error('Tether needs your choice first: Try Again or Start New Session');
    }
    if (!this.opts.workspaceRoot) throw new Error('no session is live: open a folder first; sessions belong to a workspace');
    this.ui.log('session/prompt: no session is live; resuming (a new session when there is none) first');
    this.ui.setStatus({ ...LocalStatus.starting(), text: 'Tether: starting a session…', tooltip: 'Starting a session for your prompt' });
    await this.resume();
  }

  /**
   * Whether the view shows another session than `sessionId` now (a handoff or a new session
   * replaced it meanwhile). The view's running-turn mark is cleared then, silently: the old
   * turn's end is not the new session's.
   */
  private viewMovedOn(sessionId: string): boolean {
    const shown = this.transcript.sessionId;
    if (shown === undefined || shown === sessionId) return false;
    this.transcript.turnEnded(undefined);
    return true;
  }

  /**
   * A `session/status` of the view's session: with `handoff`, the offer is shown once per wait
   * (a notification with the server's question, "Continue with <agent>" and "Keep Waiting");
   * without it, a standing offer of that session is withdrawn (the wait ended).
   */
  private followOffer(s: StatusParams): void {
    if (this.handoffOffer?.sessionId === s.sessionId && !s.handoff) {
      this.withdrawOffer(s.sessionId, `the wait ended (status ${s.state})`);
    }
    const offer = s.handoff;
    if (!offer || !s.sessionId) return;
    const shown = this.transcript.sessionId ?? this.activeSessionId;
    if (shown !== undefined && shown !== s.sessionId) {
      this.ui.log(`handoff offer for ${s.sessionId} not shown: the view shows ${shown}`);
      return;
    }
    if (this.handoffOffer?.sessionId === s.sessionId) return;
    this.withdrawOffer(undefined, `another session's wait (${s.sessionId}) offers a handoff`);
    let withdraw!: () => void;
    const withdrawn = new Promise<void>((resolve) => (withdraw = resolve));
    const entry: StandingOffer = { sessionId: s.sessionId, offer, withdraw };
    this.handoffOffer = entry;
    this.ui.log(`handoff offered for ${s.sessionId}: "${offer.title}" / "${KEEP_WAITING}" (${offer.question})`);
    void this.ui.showOffer(handoffOfferView(offer), withdrawn).then((action) => {
      if (this.handoffOffer !== entry) return;
      if (action === offer.title) void this.acceptHandoff();
      else if (action === KEEP_WAITING) this.declineHandoff();
      else this.ui.log(`handoff offer for ${s.sessionId} closed without a choice: nothing sent, the wait goes on`);
    });
  }

  /** Withdraws the standing handoff offer (of `sessionId`, or any when `undefined`), saying why in the log. */
  private withdrawOffer(sessionId: string | undefined, reason: string): void {
    const entry = this.handoffOffer;
    if (!entry || (sessionId !== undefined && entry.sessionId !== sessionId)) return;
    this.handoffOffer = undefined;
    entry.withdraw();
    this.ui.log(`handoff offer for ${entry.sessionId} withdrawn: ${reason}`);
  }

  /** Whether a handoff offer stands (shown, not taken, its wait not over). */
  get handoffOffered(): HandoffOffer | undefined {
    return this.handoffOffer?.offer;
  }

  /**
   * The handoff offer's accept button ("Continue with <agent>"): `session/handoff` of the
   * waiting session to the offered agent; the result is settled like a resume's (the server's
   * `session/expired` has already moved the view to the new session). A `failed` result leaves
   * the old session as it was (the server says its wait goes on): only the failure is shown.
   * Never rejects.
   */
  async acceptHandoff(): Promise<void> {
    const entry = this.handoffOffer;
    if (!entry) return this.ui.log('Continue with: no handoff offer stands (the wait is over)');
    this.handoffOffer = undefined;
    entry.withdraw();
    const { sessionId, offer } = entry;
    const root = this.opts.workspaceRoot;
    if (!root) return this.ui.log(`handoff offer: "${offer.title}" chosen, but no workspace folder is open: nothing sent`);
    this.ui.log(`handoff offer: user chose "${offer.title}"; session/handoff ${sessionId} to ${offer.agent}`);
    let raw: unknown;
    try {
      raw = await this.server.request(Methods.handoff, handoffParams(sessionId, root, offer));
    } catch (err) {
      this.ui.log(`session/handoff failed: ${errText(err)}`);
      this.handoffFailed(offer, errText(err));
      return;
    }
    const parsed = parseResumeResult(raw);
    if (parsed.ok && parsed.value.outcome === 'failed') {
      const message = parsed.value.error?.message ?? parsed.value.recovery?.message ?? 'the agent could not start';
      this.ui.log(`session/handoff to ${offer.agent}: failed (${message}); ${sessionId} goes on`);
      this.handoffFailed(offer, message);
      return;
    }
    await this.handleResult(raw);
  }

  private handoffFailed(offer: HandoffOffer, message: string): void {
    void this.ui
      .showNotification({
        id: 'tether.handoffFailed',
        severity: 'error',
        text: `Tether: could not continue with ${offer.agent}: ${message}. The session goes on waiting.`,
        actions: [SHOW_LOGS],
      })
      .then((a) => {
        if (a === SHOW_LOGS) this.ui.showLogs();
      });
  }

  /** The handoff offer's "Keep Waiting": nothing is sent; the same wait does not ask again. */
  declineHandoff(): void {
    const entry = this.handoffOffer;
    if (!entry) return;
    entry.withdraw();
    this.ui.log(`handoff offer: user chose "${KEEP_WAITING}" for ${entry.sessionId}: nothing sent, the wait goes on`);
  }

  /** Cancel in the session view: `session/cancel` for the live session's running turn. */
  cancel(): void {
    const sessionId = this.activeSessionId;
    if (!sessionId) return;
    this.ui.log(`session/cancel ${sessionId}`);
    this.server.notify?.(Methods.cancel, { sessionId });
  }

  /**
   * The view was scrolled to the top: the next page of older turns (`session/history`).
   * A server without the method (-32601) gets "older turns are not available" instead.
   */
  async loadOlder(): Promise<void> {
    const ask = this.transcript.beginLoadOlder();
    const root = this.opts.workspaceRoot;
    if (!ask) return;
    if (!root) return this.transcript.olderUnavailable('Older turns need a workspace folder.');
    this.ui.log(`session/history ${ask.sessionId} before ${ask.beforeTurn} (${ask.limit})`);
    try {
      const raw = await this.server.request(Methods.history, { ...ask, workspace: { root } });
      const older = historyPage(raw);
      if (!older) {
        this.ui.log('session/history: the answer holds no turns');
        return this.transcript.olderUnavailable('Older turns could not be read from the server.');
      }
      this.transcript.olderLoaded(older.turns, older.base);
    } catch (err) {
      this.ui.log(`session/history failed: ${errText(err)}`);
      this.transcript.olderUnavailable(isMethodNotFound(err) ? OLDER_UNAVAILABLE : `Older turns could not be loaded: ${errText(err)}`);
    }
  }

  /** "Tether: Show Sessions": the workspace's cached sessions (`session/list`), as picks. */
  async listSessions(): Promise<SessionPick[]> {
    const root = this.opts.workspaceRoot;
    if (!root) return [];
    const raw = await this.server.request(Methods.list, { workspace: { root } });
    return sessionPicks(raw, this.opts.now?.() ?? Date.now());
  }

  /**
   * "Tether: Show Sessions" as the user types: the workspace's sessions whose text holds every
   * word of `query` (`session/search`, best match first), as picks with the snippet as detail.
   * Rejects as the request does (-32601 from a server without `session/search`).
   */
  async searchSessions(query: string): Promise<SessionPick[]> {
    const root = this.opts.workspaceRoot;
    if (!root || !query.trim()) return [];
    const raw = await this.server.request(Methods.search, { query, workspace: { root }, limit: SEARCH_LIMIT });
    return searchPicks(raw, this.opts.now?.() ?? Date.now());
  }

  /** Opens a cached session in the view: `session/resume` with its id (the server decides the rest). */
  async openSession(sessionId: string): Promise<void> {
    const root = this.opts.workspaceRoot;
    if (!root) return;
    this.opts.view?.reveal();
    if (sessionId === this.activeSessionId) return;
    if (this.resumeInFlight) await this.resumeInFlight;
    this.pending = undefined;
    this.resumeInFlight = (async () => {
      try {
        this.ui.log(`session/resume ${root} ${sessionId}`);
        const raw = await this.server.request(Methods.resume, { workspace: { root }, sessionId });
        await this.handleResult(raw);
      } catch (err) {
        this.ui.progress(this.status.close());
        this.ui.setStatus(LocalStatus.failed(errText(err)));
        this.transcript.failed(errText(err));
        this.ui.log(`session/resume failed: ${errText(err)}`);
      } finally {
        this.resumeInFlight = undefined;
      }
    })();
    return this.resumeInFlight;
  }

  /** An answer to an inline permission question from the view (`null`: dismissed). */
  answerPermission(requestId: number, optionId: string | null): void {
    const waiter = this.permissionWaiters.get(requestId);
    if (!waiter) return this.ui.log(`permission answer for request ${requestId}, which is no longer open: ignored`);
    waiter(optionId ?? undefined);
  }

  /**
   * "Continue Here" (R-SYNC-7): the `heldElsewhere` banner's action, a refused prompt's, or
   * "Tether: Continue Session Here". Sends `session/continueHere` for `sessionId` (by default
   * the session the view shows, else the live one) and this controller's workspace, then says
   * what the server answered: the machine it was taken over from, or the server's error. The
   * server takes the lease and clears the banner; nothing is decided here. Never rejects.
   */
  async continueHere(sessionId?: string): Promise<void> {
    const root = this.opts.workspaceRoot;
    const sid = sessionId ?? this.transcript.sessionId ?? this.activeSessionId;
    if (!root || !sid) {
      this.ui.log(`Continue Here: ${!root ? 'no workspace folder is open' : 'no session is shown'}`);
      void this.ui.showNotification({
        id: 'tether.continueHereNothing',
        severity: 'info',
        text: !root
          ? 'Tether: open a folder first; sessions belong to a workspace.'
          : 'Tether: no session is shown to continue here; open one with Tether: Show Sessions.',
        actions: [],
      });
      return;
    }
    const params: ContinueHereParams = { workspace: { root }, sessionId: sid };
    this.ui.log(`session/continueHere ${root} ${sid}`);
    let text: string;
    try {
      text = continuedText(await this.server.request(Methods.continueHere, params));
      this.ui.log(`session/continueHere ${sid}: ${text}`);
    } catch (err) {
      this.ui.log(`session/continueHere ${sid} failed: ${errText(err)}`);
      void this.ui.showNotification({ id: 'tether.continueHereFailed', severity: 'error', text: continueFailedText(err), actions: [] });
      return;
    }
    void this.ui.showNotification({ id: 'tether.continuedHere', severity: 'info', text, actions: [] });
  }

  /** "Tether: Clear Saved Session": `session/clear` for the workspace; returns how many were removed. */
  async clear(): Promise<number | undefined> {
    const root = this.opts.workspaceRoot;
    if (!root) return undefined;
    const raw = (await this.server.request(Methods.clear, { workspace: { root } })) as Partial<ClearResult> | null;
    const removed = typeof raw?.removed === 'number' ? raw.removed : 0;
    this.ui.log(`session/clear removed ${removed}`);
    // The remembered session may be gone with them: a reload resumes the most recent again.
    if (removed > 0) this.forgetSession();
    return removed;
  }

  /** Renders a `ResumeResult` (from `session/resume` or `session/recoveryChoice`). */
  async handleResult(raw: unknown): Promise<void> {
    const parsed = parseResumeResult(raw);
    if (!parsed.ok) {
      this.ui.log(`ignored: ${parsed.error}`);
      this.ui.progress(this.status.close());
      this.ui.setStatus(LocalStatus.failed(parsed.error));
      this.transcript.failed(parsed.error);
      return;
    }
    const result = parsed.value;
    this.ui.log(
      `result: ${result.outcome} session=${result.sessionId ?? 'null'} breaker=${result.breaker.status} ` +
        `${result.breaker.attempts}/${result.breaker.maxAttempts} userRetries=${result.breaker.userRetries}`,
    );
    const intent = outcomeIntent(result, this.currentSessionId);
    this.ui.progress(this.status.close());
    switch (intent.kind) {
      case 'dialog':
        this.pending = { result, sessionId: intent.sessionId };
        this.endAnyDetachedTurn(`${TURN_LOST} (the session could not be resumed: ${intent.dialog.message})`);
        this.ui.setStatus(LocalStatus.needsChoice(intent.dialog.message));
        this.transcript.needsChoice(intent.dialog.message);
        await this.offerChoice();
        return;
      case 'live':
        this.pending = undefined;
        if (this.activeSessionId !== intent.sessionId) {
          this.activeSessionId = intent.sessionId;
          this.currentSessionId = intent.sessionId;
        }
        this.ui.setStatus(LocalStatus.live(intent.sessionId, intent.stale));
        if (this.transcript.sessionId !== intent.sessionId) {
          this.lastSeqValue = undefined;
          this.transcript.startedSession(intent.sessionId);
        }
        this.transcript.setLive(intent.sessionId);
        this.rememberView();
        if (!intent.stale) this.transcript.confirmed();
        this.opts.view?.reveal();
        if (this.opts.persistenceEnabled) this.persist.start();
        return;
      case 'none':
        // `nothingToResume` (start-up with `create: false`): no session and no agent, and
        // nothing failed. The view says how to start one; no notification, no view opened.
        this.pending = undefined;
        this.endAnyDetachedTurn(`${TURN_LOST} (the Tether server has no session to resume)`);
        if (!this.activeSessionId) {
          this.ui.setStatus(LocalStatus.idle());
          this.transcript.setLive(undefined);
        }
        this.ui.log('no session yet: the workspace has none to resume and none was started; a prompt starts one');
        return;
      case 'failed':
        this.pending = undefined;
        this.endAnyDetachedTurn(`${TURN_LOST} (the session could not be resumed: ${intent.message})`);
        this.ui.setStatus(LocalStatus.failed(intent.message));
        this.transcript.failed(intent.message);
        void this.ui
          .showNotification({
            id: 'tether.failed',
            severity: 'error',
            text: `Tether: ${intent.message}. ${intent.detail}`,
            actions: [SHOW_LOGS],
          })
          .then((a) => {
            if (a === SHOW_LOGS) this.ui.showLogs();
          });
        return;
    }
  }

  /** Shows the recovery modal for the outstanding result and sends the user's choice. */
  async offerChoice(): Promise<void> {
    const pending = this.pending;
    if (!pending || this.dialogOpen) return;
    const intent = outcomeIntent(pending.result, pending.sessionId);
    if (intent.kind !== 'dialog') return;
    this.dialogOpen = true;
    let clicked: string | undefined;
    try {
      clicked = await this.ui.showDialog(intent.dialog);
    } finally {
      this.dialogOpen = false;
    }
    const choice = choiceForClick(pending.result, clicked);
    if (choice === undefined) {
      // Dismissed: no choice. The breaker stays open; offer the dialog again.
      this.ui.log('recovery dialog dismissed: no choice sent; the breaker stays open');
      void this.ui
        .showNotification({
          id: REOFFER.id,
          severity: 'warning',
          text: REOFFER.text(intent.dialog.message),
          actions: [REOFFER.action],
        })
        .then((a) => {
          if (a === REOFFER.action && this.pending === pending) void this.offerChoice();
        });
      return;
    }
    await this.choose(pending, choice);
  }

  private async choose(pending: PendingChoice, choice: RecoveryChoice): Promise<void> {
    if (!pending.sessionId) {
      this.ui.log('recovery choice: no session id is known for this result; resuming again instead');
      this.pending = undefined;
      return this.resume();
    }
    this.pending = undefined;
    this.ui.log(`session/recoveryChoice ${choice} for ${pending.sessionId}`);
    this.ui.setStatus(
      choice === 'retry'
        ? { ...LocalStatus.starting(), text: 'Resuming…', tooltip: 'Trying again' }
        : choice === 'new'
          ? { ...LocalStatus.starting(), text: 'Starting a new session…', tooltip: 'Starting a new session' }
          : {
              ...LocalStatus.starting(),
              text: 'Starting a new session…',
              tooltip: 'Starting a new session with the conversation carried over',
            },
    );
    try {
      const raw = await this.server.request(Methods.recoveryChoice, { sessionId: pending.sessionId, choice });
      await this.handleResult(raw);
    } catch (err) {
      // The server did not take the choice: the same choice is outstanding again.
      this.pending = pending;
      this.ui.setStatus(LocalStatus.needsChoice(`session/recoveryChoice failed: ${errText(err)}`));
      this.ui.log(`session/recoveryChoice failed: ${errText(err)}`);
    }
  }

  onStatus(raw: unknown): void {
    const p = parseStatus(raw);
    if (!p.ok) return this.ui.log(`ignored: ${p.error}`);
    if (p.value.sessionId) this.currentSessionId = p.value.sessionId;
    this.ui.log(
      `status: ${p.value.state} ${p.value.attempt}/${p.value.maxAttempts}` +
        `${p.value.retryInMs !== undefined ? ` retryInMs=${p.value.retryInMs}` : ''}` +
        `${p.value.errorKind ? ` errorKind=${p.value.errorKind}` : ''}` +
        `${p.value.handoff ? ` handoff=${p.value.handoff.agent}` : ''}`,
    );
    this.followOffer(p.value);
    const { view, progress } = this.status.apply(p.value);
    this.ui.progress(progress);
    if (!(p.value.state === 'failed' && this.pending)) this.transcript.onStatus(p.value);
    // Notifications and responses are not ordered with each other: the `failed` status of a
    // round that ended in needsChoice can arrive after the result. The outstanding choice is
    // the more specific state, so its status item stays.
    if (p.value.state === 'failed' && this.pending) return;
    this.ui.setStatus(view);
    if (p.value.state === 'ready' && p.value.sessionId) {
      this.activeSessionId = p.value.sessionId;
      if (this.opts.persistenceEnabled) this.persist.start();
    }
  }

  /** Once-a-second refresh of a countdown; returns whether a countdown is still running. */
  tick(): boolean {
    const t = this.status.tick();
    this.transcript.tick();
    if (t) {
      this.ui.setStatus(t.view);
      this.ui.progress(t.progress);
    }
    return this.status.counting();
  }

  onBanner(raw: unknown): void {
    const p = parseBanner(raw);
    if (!p.ok) return this.ui.log(`ignored: ${p.error}`);
    this.ui.log(`banner ${p.value.id}: ${p.value.kind} "${p.value.message}"`);
    const view = this.banners.show(p.value);
    this.afterBannerChange();
    if (view) this.announce(view);
  }

  /** Shows every active banner again (the banner indicator in the status bar was clicked). */
  reannounceBanners(): void {
    for (const b of this.banners.active()) this.announce(bannerView(b));
  }

  private announce(view: BannerView): void {
    if (view.transient) {
      if (this.transients.has(view.id)) return;
      let close!: () => void;
      const until = new Promise<void>((resolve) => (close = resolve));
      this.transients.set(view.id, close);
      this.ui.showTransient(view, until);
      return;
    }
    void this.ui.showNotification(view).then((action) => {
      if (action === SHOW_LOGS) this.ui.showLogs();
      if (action === CONTINUE_HERE && view.continueHere) void this.continueHere(view.continueHere);
      if (action === DISMISS && this.banners.dismiss(view.id)) {
        this.ui.log(`banner ${view.id} dismissed`);
        const before = this.snapshot.revision;
        this.afterBannerChange();
        // The server cannot see a dismissal; a dismissed stream error changes the snapshot's uiState.
        if (this.snapshot.revision !== before && this.activeSessionId) void this.persist.milestone('bannerChanged');
      }
    });
  }

  onBannerCleared(raw: unknown): void {
    const p = parseBannerCleared(raw);
    if (!p.ok) return this.ui.log(`ignored: ${p.error}`);
    const cleared = this.banners.clear(p.value.id);
    if (cleared) this.ui.log(`banner ${p.value.id} cleared`);
    // The server clears the stale-transcript banner when the agent confirmed the session.
    if (cleared?.kind === 'staleSnapshot' && (!cleared.sessionId || cleared.sessionId === this.transcript.sessionId)) {
      this.transcript.confirmed();
    }
    this.afterBannerChange();
  }

  onExpired(raw: unknown): void {
    const p = parseExpired(raw);
    if (!p.ok) return this.ui.log(`ignored: ${p.error}`);
    const { previousSessionId, sessionId, choice, agent } = p.value;
    this.ui.log(`expired: ${previousSessionId} → ${sessionId}${choice ? ` (${choice})` : ''}`);
    this.withdrawOffer(previousSessionId, `the session was replaced by ${sessionId}`);
    this.activeSessionId = sessionId;
    this.currentSessionId = sessionId;
    this.lastSeqValue = undefined;
    this.snapshot.reset();
    this.transcript.startedSession(sessionId);
    this.rememberView();
    // Banners about the session that ended end with it.
    for (const b of this.banners.clearSession(previousSessionId)) this.ui.log(`banner ${b.id} ended with its session`);
    this.afterBannerChange();
    void this.ui.showNotification({
      id: 'tether.expired',
      severity: 'info',
      text:
        previousSessionId && choice?.startsWith('handoff:')
          ? // A handoff keeps the old session's cache: it can be resumed with its own agent later.
            `Tether: continued session ${shortId(previousSessionId)} with ${agent ?? choice.slice('handoff:'.length)} in new session ${shortId(sessionId)}.`
          : previousSessionId
            ? `Tether: session ${shortId(previousSessionId)} has ended; started new session ${shortId(sessionId)}. The old transcript is archived.`
            : `Tether: started new session ${shortId(sessionId)}.`,
      actions: [],
    });
  }

  onRestored(raw: unknown): void {
    const p = parseRestored(raw);
    if (!p.ok) return this.ui.log(`ignored: ${p.error}`);
    const source = p.value.source;
    const stale = p.value.stale;
    this.ui.log(
      source
        ? `restored: ${p.value.sessionId} from ${source.agent}'s own store, ${source.path}${source.complete ? '' : ' (latest turns only)'} (stale)`
        : stale
          ? `restored: cached snapshot of ${p.value.sessionId} (stale)`
          : `restored: transcript of ${p.value.sessionId}, live in the daemon`,
    );
    this.currentSessionId = p.value.sessionId;
    // A new transcript: the events drawn before it are no longer what the view shows.
    this.lastSeqValue = undefined;
    this.snapshot.restore(p.value.snapshot);
    this.transcript.restored(p.value.sessionId, p.value.snapshot, source, stale);
    this.rememberView();
    this.opts.view?.reveal();
    this.afterBannerChange();
    this.ui.setStatus(stale ? LocalStatus.restoredStale(p.value.sessionId, source) : LocalStatus.live(p.value.sessionId, false));
  }

  onUpdate(raw: unknown): void {
    const p = parseUpdate(raw);
    if (!p.ok) return this.ui.log(`ignored: ${p.error}`);
    this.noteSeq(p.value.sessionId, p.value.seq);
    this.transcript.update(p.value);
    this.rememberView();
    const milestone = this.snapshot.apply(p.value);
    if (milestone && this.activeSessionId) void this.persist.milestone(milestone);
  }

  /**
   * `session/turnEnded`: a prompt turn of the session ended. The answer of this window's own
   * `session/prompt` ends its turn (`prompt`); this ends a turn the view shows running that
   * this window did not send (another editor's, or its own from before a reload, replayed by
   * the daemon), with its stop reason, and persists as a finished turn does.
   */
  onTurnEnded(raw: unknown): void {
    const p = parseTurnEnded(raw);
    if (!p.ok) return this.ui.log(`ignored: ${p.error}`);
    const { sessionId, seq, stopReason, error } = p.value;
    this.ui.log(`session/turnEnded ${sessionId} seq=${seq}: ${stopReason ?? `error ${error ?? '?'}`}`);
    this.withdrawOffer(sessionId, 'the turn ended');
    if (this.transcript.sessionId !== undefined && sessionId !== this.transcript.sessionId) return;
    this.noteSeq(sessionId, seq);
    if (this.detachedTurn === sessionId) this.detachedTurn = undefined;
    if (this.promptInFlight === sessionId || !this.transcript.turnRunning) return;
    this.snapshot.finishTurn();
    this.transcript.turnEnded(stopReason, error);
    if (this.opts.persistenceEnabled && this.activeSessionId === sessionId) void this.persist.milestone('turnFinalized');
  }

  /**
   * `session/reattached` (from the forwarder): the daemon died and a new one took the session
   * back. Its `seq`s start again at 1, so the last one drawn no longer applies; the result is
   * drawn like the answer of a resume (a dialog on `needsChoice`).
   */
  onReattached(raw: unknown): Promise<void> {
    const p = parseReattached(raw);
    if (!p.ok) {
      this.ui.log(`ignored: ${p.error}`);
      return Promise.resolve();
    }
    this.ui.log(`session/reattached ${p.value.sessionId}${p.value.error ? `: refused (${p.value.error})` : ''}`);
    if (this.transcript.sessionId === undefined || this.transcript.sessionId === p.value.sessionId) this.lastSeqValue = undefined;
    if (this.promptInFlight === p.value.sessionId) this.promptInFlight = undefined;
    if (p.value.result) return this.handleResult(p.value.result);
    this.ui.setStatus(LocalStatus.failed(p.value.error ?? 'the new Tether daemon refused the session'));
    this.transcript.failed(p.value.error ?? 'the new Tether daemon refused the session');
    return Promise.resolve();
  }

  /** The remembered session of the view (see `SessionMemory`), if one is stored and well-formed. */
  private rememberedSession(): string | undefined {
    const v = this.opts.memory?.get();
    const id = typeof v === 'object' && v !== null && 'sessionId' in v ? v.sessionId : undefined;
    return typeof id === 'string' && id ? id : undefined;
  }

  /** Remembers the session the view shows (a new one replaces what was remembered). */
  private rememberView(): void {
    const sid = this.transcript.sessionId;
    if (!sid || !this.opts.memory || sid === this.remembered) return;
    this.remembered = sid;
    this.opts.memory.set({ sessionId: sid });
    this.ui.log(`remembered ${sid} as this window's session (resumed after a reload)`);
  }

  private forgetSession(): void {
    if (!this.opts.memory) return;
    this.remembered = undefined;
    this.opts.memory.set(undefined);
    this.ui.log("forgot this window's session");
  }

  /** Keeps `seq` as the last event drawn when it is about the view's session. */
  private noteSeq(sessionId: string, seq: number | undefined): void {
    if (seq === undefined) return;
    if (this.transcript.sessionId !== undefined && sessionId !== this.transcript.sessionId) return;
    this.lastSeqValue = seq;
  }

  /** `session/requestPermission`: resolves to the ACP answer; never rejects. */
  async onPermissionRequest(raw: unknown, cancelled: Promise<void>): Promise<PermissionResponse> {
    const p = parsePermissionRequest(raw);
    if (!p.ok) {
      this.ui.log(`permission request answered cancelled: ${p.error}`);
      return { outcome: { outcome: 'cancelled' } };
    }
    // ACP's request carries a ToolCallUpdate whose title may be left out when the agent
    // already reported the tool call (`tool_call`): name it from there.
    const request = p.value;
    const id = request.toolCall?.toolCallId;
    if (!request.toolCall?.title && id) {
      const title = this.snapshot.toolTitle(id);
      if (title) request.toolCall = { ...request.toolCall, title };
    }
    // Asked twice, in the session view (inline) and as a quick pick: the first answer wins
    // and closes the other; the turn's cancellation closes both.
    const requestId = ++this.permissionSeq;
    let closePick!: () => void;
    const pickClosed = new Promise<void>((resolve) => (closePick = resolve));
    const inline = new Promise<string | undefined>((resolve) => this.permissionWaiters.set(requestId, resolve));
    this.transcript.setPermission({
      requestId,
      title: request.toolCall?.title ?? 'a tool call',
      toolKind: typeof request.toolCall?.kind === 'string' ? request.toolCall.kind : 'other',
      options: request.options.map((o) => ({ optionId: o.optionId, name: o.name, kind: o.kind })),
    });
    const picked = await Promise.race([
      this.ui.pick(permissionPick(request), Promise.race([cancelled, pickClosed])),
      inline,
      cancelled.then(() => undefined),
    ]);
    closePick();
    this.permissionWaiters.delete(requestId);
    if (this.transcript.permission?.requestId === requestId) this.transcript.setPermission(null);
    const answer = permissionAnswer(p.value, picked);
    this.ui.log(
      `permission ${p.value.toolCall?.title ?? ''}: ${answer.outcome.outcome === 'selected' ? answer.outcome.optionId : 'cancelled'}`,
    );
    return answer;
  }

  /**
   * Deactivation: the `shutdown` persist (when a session is active and persistence is on).
   * Returns what happened, for the extension's shutdown record: the output channel's last
   * lines are written asynchronously and can be lost when the extension host exits.
   */
  async shutdown(): Promise<ShutdownReport> {
    if (!this.activeSessionId || !this.opts.persistenceEnabled) {
      this.persist.stop();
      return { sent: false, reason: !this.activeSessionId ? 'no active session' : 'persistence disabled' };
    }
    this.lastPersist = undefined;
    await this.persist.shutdown();
    const last = this.lastPersist as PersistOutcome | undefined;
    return { sent: true, sessionId: this.activeSessionId, ...(last ?? { error: 'no answer recorded' }) };
  }

  private afterBannerChange(): void {
    for (const [id, close] of this.transients) {
      if (!this.banners.isActive(id)) {
        close();
        this.transients.delete(id);
      }
    }
    this.snapshot.setStreamError(this.banners.streamError());
    this.ui.setBannerIndicator(this.banners.indicator());
  }

  private async sendPersist(trigger: PersistTrigger): Promise<void> {
    const sessionId = this.activeSessionId;
    const root = this.opts.workspaceRoot;
    if (!sessionId || !root) return;
    const params: PersistParams = { sessionId, workspace: { root }, trigger, snapshot: this.snapshot.toSnapshot() };
    this.ui.log(`session/persist ${trigger}: sending (revision ${this.snapshot.revision})`);
    try {
      const res = (await this.server.request(Methods.persist, params)) as Partial<PersistResult> | null;
      this.lastPersist = { trigger, result: res ?? {} };
      this.ui.log(
        `session/persist ${trigger}: saved=${String(res?.saved)} coalesced=${String(res?.coalesced)} bytes=${String(res?.bytes)}`,
      );
    } catch (err) {
      this.lastPersist = { trigger, error: errText(err) };
      throw err;
    }
  }
}

/** The last `session/persist` exchange. */
export type PersistOutcome = { trigger: PersistTrigger; result: Partial<PersistResult> } | { trigger: PersistTrigger; error: string };

/** What deactivation did about persistence. */
export type ShutdownReport =
  | { sent: false; reason: string }
  | ({ sent: true; sessionId: string } & (Partial<PersistOutcome> & { error?: string }));

function errText(err: unknown): string {
  if (err instanceof Error) return err.message;
  if (typeof err === 'object' && err !== null && 'message' in err) return String(err.message);
  return String(err);
}
