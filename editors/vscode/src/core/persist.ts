/**
 * When the extension sends `session/persist` (R-UI-4, R-STORE-10).
 *
 * - `timer`: every `intervalMs` (30 s) while a session is active, and only when the snapshot
 *   changed since the last acknowledged save (R-UI-4: a periodic save every 30
 *   seconds while the session is active). The server coalesces `timer` writes to one per 5 s.
 * - milestones (`execCompleted`, `bannerChanged`, …): at once.
 * - `shutdown`: once, on deactivation, after any save in flight; the timer stops first.
 *
 * At most one save is in flight: a timer tick that finds one running is skipped (the next tick
 * picks the change up); a milestone waits for the running save and then goes out. A failed save
 * is reported through `onError` and leaves the snapshot dirty, so the next tick retries it.
 * Time comes from an injected `Timers` so tests drive it without waiting.
 */
import type { PersistTrigger } from './protocol';

export const PERSIST_INTERVAL_MS = 30_000;

/** setInterval/clearInterval, injectable. */
export interface Timers {
  setInterval(cb: () => void, ms: number): unknown;
  clearInterval(handle: unknown): void;
}

export const realTimers: Timers = {
  setInterval: (cb, ms) => setInterval(cb, ms),
  clearInterval: (h) => clearInterval(h as ReturnType<typeof setInterval>),
};

export interface PersistHooks {
  /** Sends `session/persist` with this trigger and the snapshot of `revision`. */
  save(trigger: PersistTrigger): Promise<void>;
  /** The snapshot's current revision (see `SnapshotModel.revision`). */
  revision(): number;
  onError(trigger: PersistTrigger, err: unknown): void;
}

export class PersistScheduler {
  private handle: unknown;
  private inFlight: Promise<void> | undefined;
  private savedRevision = -1;
  private closed = false;

  constructor(
    private readonly hooks: PersistHooks,
    private readonly timers: Timers = realTimers,
    private readonly intervalMs: number = PERSIST_INTERVAL_MS,
  ) {}

  /** Whether the 30 s timer runs (a session is active). */
  get running(): boolean {
    return this.handle !== undefined;
  }

  /** A session became active: start the timer (idempotent). */
  start(): void {
    if (this.closed || this.handle !== undefined) return;
    this.handle = this.timers.setInterval(() => void this.tick(), this.intervalMs);
  }

  /** No session is active any more: stop the timer. */
  stop(): void {
    if (this.handle !== undefined) this.timers.clearInterval(this.handle);
    this.handle = undefined;
  }

  /** A milestone: save now (after any save in flight). */
  async milestone(trigger: PersistTrigger): Promise<void> {
    if (this.closed) return;
    await this.settle();
    await this.run(trigger);
  }

  /** Deactivation: stop the timer, wait for a save in flight, then send `shutdown` once. */
  async shutdown(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.stop();
    await this.settle();
    await this.run('shutdown');
  }

  private async tick(): Promise<void> {
    if (this.inFlight || this.hooks.revision() === this.savedRevision) return;
    await this.run('timer');
  }

  private async settle(): Promise<void> {
    while (this.inFlight) await this.inFlight;
  }

  private run(trigger: PersistTrigger): Promise<void> {
    const revision = this.hooks.revision();
    const p = this.hooks
      .save(trigger)
      .then(() => {
        this.savedRevision = revision;
      })
      .catch((err: unknown) => this.hooks.onError(trigger, err))
      .finally(() => {
        if (this.inFlight === p) this.inFlight = undefined;
      });
    this.inFlight = p;
    return p;
  }
}
