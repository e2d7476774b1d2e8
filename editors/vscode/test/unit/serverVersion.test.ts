import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { PROTOCOL_VERSION } from '../../src/core/protocol';
import { checkServer } from '../../src/core/serverVersion';

describe('server version check at initialize', () => {
  it('accepts the matching server without a note', () => {
    assert.deepEqual(checkServer({ version: '0.1.0', protocolVersion: PROTOCOL_VERSION }, '0.1.0', 'bundled'), { ok: true });
  });

  it('accepts another version of the same protocol, noting both versions', () => {
    const v = checkServer({ version: '0.2.0', protocolVersion: PROTOCOL_VERSION }, '0.1.0', 'path');
    assert.equal(v.ok, true);
    assert.match(v.ok ? (v.note ?? '') : '', /tether 0\.2\.0 differs from this extension's version 0\.1\.0; both speak protocol 1/);
  });

  it('rejects an older protocol and says to update the server where it came from', () => {
    const v = checkServer({ version: '0.0.9', protocolVersion: PROTOCOL_VERSION - 1 }, '0.1.0', 'path');
    assert.equal(v.ok, false);
    const error = !v.ok ? v.error : '';
    assert.match(error, /speaks Tether protocol 0; this extension \(0\.1\.0\) speaks 1/);
    assert.match(error, /older than this extension: update the tether on PATH/);
  });

  it('rejects a newer protocol and says to update the extension', () => {
    const v = checkServer({ version: '9.0.0', protocolVersion: PROTOCOL_VERSION + 1 }, '0.1.0', 'setting');
    assert.match(!v.ok ? v.error : '', /newer than this extension: update the Tether extension/);
  });

  it('rejects a server that names no protocol (pre-protocol builds), pointing at the setting it came from', () => {
    const v = checkServer({ version: undefined, protocolVersion: undefined }, '0.1.0', 'setting');
    const error = !v.ok ? v.error : '';
    assert.match(error, /tether \(no version\) does not say which Tether protocol it speaks/);
    assert.match(error, /point tether\.server\.path at a matching tether/);
  });

  it('tells a broken bundle to reinstall', () => {
    const v = checkServer({ version: '0.1.0', protocolVersion: '1' }, '0.1.0', 'bundled');
    assert.match(!v.ok ? v.error : '', /reinstall the extension/);
  });
});
