import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { BannerStore, bannerView, DISMISS, SHOW_LOGS } from '../../src/core/banners';
import type { BannerParams } from '../../src/core/protocol';

const banner = (over: Partial<BannerParams> = {}): BannerParams => ({
  id: 'b1',
  kind: 'restoreFailed',
  message: 'Previous session could not be restored; start a new session.',
  dismissible: true,
  ...over,
});

describe('banner views', () => {
  it('gives every kind its severity and heading', () => {
    const cases: [BannerParams['kind'], string, string][] = [
      ['restoreFailed', 'warning', 'Restore failed'],
      ['staleSnapshot', 'info', 'Stale transcript'],
      ['streamError', 'error', 'Stream error'],
      ['persistenceDisabled', 'warning', 'Persistence disabled'],
      ['recoveredLive', 'info', 'Recovered'],
      ['cannotSave', 'error', 'Cannot save'],
      ['heldElsewhere', 'warning', 'On another machine'],
      ['notSynced', 'warning', 'Not synced'],
    ];
    for (const [kind, severity, title] of cases) {
      const v = bannerView(banner({ kind, message: 'x' }));
      assert.equal(v.severity, severity, kind);
      assert.equal(v.text, `Tether: ${title}. x`, kind);
    }
  });

  it('offers Dismiss only for dismissible banners', () => {
    assert.deepEqual(bannerView(banner()).actions, [SHOW_LOGS, DISMISS]);
    assert.deepEqual(bannerView(banner({ dismissible: false })).actions, [SHOW_LOGS]);
    assert.deepEqual(bannerView(banner({ kind: 'recoveredLive' })).actions, [DISMISS]);
    // A push that failed (R-SYNC-10): the logs say more; cleared by the server, not dismissed.
    assert.deepEqual(bannerView(banner({ kind: 'notSynced', dismissible: false })).actions, [SHOW_LOGS]);
  });

  it('makes the stale-transcript banner a transient notification without buttons', () => {
    const v = bannerView(banner({ kind: 'staleSnapshot' }));
    assert.equal(v.transient, true);
    assert.deepEqual(v.actions, []);
    assert.equal(bannerView(banner()).transient, undefined);
  });
});

describe('BannerStore lifecycle', () => {
  it('announces a banner once, and again only when its text changes', () => {
    const s = new BannerStore();
    assert.ok(s.show(banner()));
    assert.equal(s.show(banner()), undefined);
    assert.ok(s.show(banner({ message: 'other' })));
    assert.equal(s.active().length, 1);
  });

  it('removes a banner the server clears', () => {
    const s = new BannerStore();
    s.show(banner());
    assert.equal(s.clear('b1')?.id, 'b1');
    assert.equal(s.isActive('b1'), false);
    assert.equal(s.clear('b1'), undefined);
    assert.equal(s.indicator(), undefined);
  });

  it('lets the user dismiss dismissible banners only', () => {
    const s = new BannerStore();
    s.show(banner({ id: 'a' }));
    s.show(banner({ id: 'b', dismissible: false }));
    assert.equal(s.dismiss('a')?.id, 'a');
    assert.equal(s.dismiss('b'), undefined);
    assert.deepEqual(s.active().map((b) => b.id), ['b']);
  });

  it('ignores a dismissal of a banner the server already cleared', () => {
    const s = new BannerStore();
    s.show(banner());
    s.clear('b1');
    assert.equal(s.dismiss('b1'), undefined);
  });

  it('keeps an indicator with the count and texts of active banners', () => {
    const s = new BannerStore();
    s.show(banner({ id: 'a', kind: 'staleSnapshot', message: 'Showing the cached transcript.' }));
    s.show(banner({ id: 'b', kind: 'streamError', message: 'Stream dropped.' }));
    assert.deepEqual(s.indicator(), {
      text: '$(bell-dot) 2',
      tooltip: 'Tether: Stale transcript. Showing the cached transcript.\nTether: Stream error. Stream dropped.',
    });
  });

  it('ends the banners of a session that was replaced, and only those', () => {
    const s = new BannerStore();
    s.show(banner({ id: 'old', sessionId: 's1' }));
    s.show(banner({ id: 'other', sessionId: 's2' }));
    s.show(banner({ id: 'global' }));
    assert.deepEqual(s.clearSession('s1').map((b) => b.id), ['old']);
    assert.deepEqual(s.active().map((b) => b.id), ['other', 'global']);
  });

  it('reports whether a stream error is visible', () => {
    const s = new BannerStore();
    assert.deepEqual(s.streamError(), { visible: false });
    s.show(banner({ id: 'e', kind: 'streamError', message: 'Stream dropped.' }));
    assert.deepEqual(s.streamError(), { visible: true, text: 'Stream dropped.' });
  });
});
