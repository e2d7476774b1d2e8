import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { PERSIST_INTERVAL_MS, PersistScheduler, type Timers } from '../../src/core/persist';
import type { PersistTrigger } from '../../src/core/protocol';

/** A manual clock: `advance(ms)` fires due interval callbacks in order. */
class ManualTimers implements Timers {
  now = 0;
  private next = 1;
  private readonly intervals = new Map<number, { cb: () => void; ms: number; due: number }>();
  setInterval(cb: () => void, ms: number): unknown {
    const id = this.next++;
    this.intervals.set(id, { cb, ms, due: this.now + ms });
    return id;
  }
  clearInterval(handle: unknown): void {
    this.intervals.delete(handle as number);
  }
  get active(): number {
    return this.intervals.size;
  }
  async advance(ms: number): Promise<void> {
    const end = this.now + ms;
    for (;;) {
      const due = [...this.intervals.values()].filter((i) => i.due <= end).sort((a, b) => a.due - b.due)[0];
      if (!due) break;
      this.now = due.due;
      due.due += due.ms;
      due.cb();
      await flush();
    }
    this.now = end;
  }
}

const flush = () => new Promise<void>((r) => setImmediate(r));

function harness() {
  const timers = new ManualTimers();
  const saves: { trigger: PersistTrigger; at: number }[] = [];
  const errors: PersistTrigger[] = [];
  const state = { revision: 0, fail: false, gate: undefined as Promise<void> | undefined };
  const scheduler = new PersistScheduler(
    {
      save: async (trigger) => {
        saves.push({ trigger, at: timers.now });
        if (state.gate) await state.gate;
        if (state.fail) throw new Error('disk full');
      },
      revision: () => state.revision,
      onError: (trigger) => errors.push(trigger),
    },
    timers,
  );
  return { timers, saves, errors, state, scheduler };
}

describe('PersistScheduler (R-UI-4)', () => {
  it('saves with trigger timer every 30 s while a session is active, and only when something changed', async () => {
    const { timers, saves, state, scheduler } = harness();
    scheduler.start();
    await timers.advance(PERSIST_INTERVAL_MS - 1);
    assert.equal(saves.length, 0);
    await timers.advance(1);
    assert.deepEqual(saves, [{ trigger: 'timer', at: 30_000 }]);
    await timers.advance(PERSIST_INTERVAL_MS);
    assert.equal(saves.length, 1, 'unchanged snapshot: no second save');
    state.revision++;
    await timers.advance(PERSIST_INTERVAL_MS);
    assert.deepEqual(saves.map((s) => s.at), [30_000, 90_000]);
  });

  it('stops saving when the session ends', async () => {
    const { timers, saves, state, scheduler } = harness();
    scheduler.start();
    scheduler.start();
    assert.equal(timers.active, 1, 'start is idempotent');
    scheduler.stop();
    state.revision++;
    await timers.advance(5 * PERSIST_INTERVAL_MS);
    assert.equal(saves.length, 0);
    assert.equal(scheduler.running, false);
  });

  it('skips a tick while a save is in flight', async () => {
    const { timers, saves, state, scheduler } = harness();
    let release!: () => void;
    state.gate = new Promise((r) => (release = r));
    scheduler.start();
    await timers.advance(PERSIST_INTERVAL_MS);
    state.revision++;
    await timers.advance(PERSIST_INTERVAL_MS);
    assert.equal(saves.length, 1);
    release();
    state.gate = undefined;
    await flush();
    await timers.advance(PERSIST_INTERVAL_MS);
    assert.equal(saves.length, 2, 'the change is saved on the next tick');
  });

  it('keeps a failed save dirty so the next tick retries it', async () => {
    const { timers, saves, errors, state, scheduler } = harness();
    state.fail = true;
    scheduler.start();
    await timers.advance(PERSIST_INTERVAL_MS);
    assert.deepEqual(errors, ['timer']);
    state.fail = false;
    await timers.advance(PERSIST_INTERVAL_MS);
    assert.equal(saves.length, 2);
  });

  it('sends a milestone at once, after the save in flight', async () => {
    const { timers, saves, state, scheduler } = harness();
    let release!: () => void;
    state.gate = new Promise((r) => (release = r));
    scheduler.start();
    await timers.advance(PERSIST_INTERVAL_MS);
    const m = scheduler.milestone('bannerChanged');
    await flush();
    assert.deepEqual(saves.map((s) => s.trigger), ['timer']);
    state.gate = undefined;
    release();
    await m;
    assert.deepEqual(saves.map((s) => s.trigger), ['timer', 'bannerChanged']);
  });

  it('on shutdown stops the timer, waits for the save in flight and sends shutdown once', async () => {
    const { timers, saves, state, scheduler } = harness();
    let release!: () => void;
    state.gate = new Promise((r) => (release = r));
    scheduler.start();
    await timers.advance(PERSIST_INTERVAL_MS);
    const done = scheduler.shutdown();
    await flush();
    assert.equal(saves.length, 1);
    state.gate = undefined;
    release();
    await done;
    await scheduler.shutdown();
    await scheduler.milestone('execCompleted');
    assert.deepEqual(saves.map((s) => s.trigger), ['timer', 'shutdown']);
    assert.equal(timers.active, 0);
    scheduler.start();
    assert.equal(timers.active, 0, 'no restart after shutdown');
  });

  it('sends shutdown even when nothing changed since the last save', async () => {
    const { saves, scheduler } = harness();
    await scheduler.shutdown();
    assert.deepEqual(saves.map((s) => s.trigger), ['shutdown']);
  });
});
