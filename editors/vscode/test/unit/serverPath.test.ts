import { strict as assert } from 'node:assert';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { isExecutableFile, resolveServer } from '../../src/core/serverPath';

// Real files on disk: the resolver's file checks run for real.
describe('server path resolution (setting, else bundled server/, else PATH)', () => {
  let dir: string;
  let ext: string;
  let onPath: string;
  let exe: string;
  before(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'tether-serverpath-'));
    ext = path.join(dir, 'ext');
    onPath = path.join(dir, 'path-bin');
    mkdirSync(path.join(ext, 'server'), { recursive: true });
    mkdirSync(onPath);
    exe = path.join(dir, 'custom-tether');
    writeFileSync(exe, '#!/bin/sh\n');
    chmodSync(exe, 0o755);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const input = (configured: string) => ({ configured, extensionPath: ext, platform: 'linux' as const, envPath: `${onPath}:/nonexistent` });

  it('uses the configured path when it is executable', () => {
    assert.deepEqual(resolveServer(input(exe)), { ok: true, command: exe, source: 'setting' });
  });

  it('rejects a configured path that is relative, missing or not executable, naming it', () => {
    const rel = resolveServer(input('bin/tether'));
    assert.equal(rel.ok, false);
    assert.match(!rel.ok ? rel.error : '', /absolute path, got "bin\/tether"/);
    const missing = resolveServer(input(path.join(dir, 'nope')));
    assert.match(!missing.ok ? missing.error : '', /nope", which is not an executable file/);
    const plain = path.join(dir, 'plain');
    writeFileSync(plain, 'x');
    chmodSync(plain, 0o644);
    assert.equal(resolveServer(input(plain)).ok, false);
    assert.equal(resolveServer(input(dir)).ok, false, 'a directory is not an executable file');
  });

  it('falls back to PATH, then prefers the bundled binary once it exists', () => {
    const none = resolveServer(input(''));
    assert.equal(none.ok, false);
    assert.match(!none.ok ? none.error : '', /no tether server found/);

    const pathExe = path.join(onPath, 'tether');
    writeFileSync(pathExe, '#!/bin/sh\n');
    chmodSync(pathExe, 0o755);
    assert.deepEqual(resolveServer(input('')), { ok: true, command: pathExe, source: 'path' });

    const bundled = path.join(ext, 'server', 'tether');
    writeFileSync(bundled, '#!/bin/sh\n');
    chmodSync(bundled, 0o755);
    assert.deepEqual(resolveServer(input('')), { ok: true, command: bundled, source: 'bundled' });
  });

  it('looks for tether.exe on Windows', () => {
    const seen: string[] = [];
    const r = resolveServer(
      { configured: '', extensionPath: 'C:\\ext', platform: 'win32', envPath: 'C:\\a;C:\\b' },
      (f) => {
        seen.push(f);
        return false;
      },
    );
    assert.equal(r.ok, false);
    assert.ok(seen.every((f) => f.endsWith('tether.exe')), seen.join(', '));
    assert.equal(seen.length, 3);
  });

  it('isExecutableFile is false for what does not exist', () => {
    assert.equal(isExecutableFile(path.join(dir, 'missing')), false);
  });
});
