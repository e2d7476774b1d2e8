import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { LocalStatus } from '../../src/core/status';
import { TranscriptModel, type ViewOp } from '../../src/core/transcript';
import { chooseFolder, memoryKey, RESTRICTED_REASON, routeMessage, startGate } from '../../src/core/workspace';

describe('Restricted Mode (workspace trust): no agent starts until the folder is trusted', () => {
  it('a trusted workspace starts; an untrusted one does not, and says why and what to do', () => {
    assert.deepEqual(startGate(true), { start: true });
    const gate = startGate(false);
    assert.equal(gate.start, false);
    assert.ok(!gate.start && gate.reason === RESTRICTED_REASON);
    assert.match(RESTRICTED_REASON, /Restricted Mode/);
    assert.match(RESTRICTED_REASON, /agents run shell tools/);
    assert.match(RESTRICTED_REASON, /Trust the folder \("Workspaces: Manage Workspace Trust"\)/);
  });

  it('the session view shows the reason and keeps the prompt box closed, saying to trust the folder', () => {
    const ops: ViewOp[] = [];
    const t = new TranscriptModel((op) => ops.push(op), () => 0);
    t.restricted(RESTRICTED_REASON);
    const state = t.fullState();
    assert.deepEqual(
      state.find((o) => o.op === 'status'),
      { op: 'status', status: { state: 'restricted', text: RESTRICTED_REASON } },
    );
    const prompt = state.find((o) => o.op === 'prompt');
    assert.ok(prompt?.op === 'prompt');
    assert.equal(prompt.prompt.canSend, false);
    assert.match(prompt.prompt.reason, /trust this folder/);
    assert.ok(ops.some((o) => o.op === 'status'), 'the open view is told at once');
  });

  it('the status item says Restricted Mode and opens the trust editor', () => {
    const s = LocalStatus.restricted(RESTRICTED_REASON);
    assert.equal(s.text, 'Tether: Restricted Mode');
    assert.equal(s.tooltip, RESTRICTED_REASON);
    assert.equal(s.command, 'workbench.trust.manage');
  });
});

describe('multi-root: the session view follows the folder of the active editor', () => {
  const folders = ['/ws/api', '/ws/web'];

  it('no folder: nothing to follow', () => {
    assert.deepEqual(chooseFolder({ folders: [], activeEditorFolder: undefined, current: undefined }), { kind: 'none' });
  });

  it('the active editor\'s folder wins over the current one', () => {
    assert.deepEqual(chooseFolder({ folders, activeEditorFolder: '/ws/web', current: '/ws/api' }), {
      kind: 'folder',
      root: '/ws/web',
      why: 'activeEditor',
    });
  });

  it('no active editor (or one outside the workspace) keeps the current folder', () => {
    assert.deepEqual(chooseFolder({ folders, activeEditorFolder: undefined, current: '/ws/web' }), {
      kind: 'folder',
      root: '/ws/web',
      why: 'current',
    });
    assert.deepEqual(chooseFolder({ folders, activeEditorFolder: '/elsewhere', current: '/ws/web' }), {
      kind: 'folder',
      root: '/ws/web',
      why: 'current',
    });
  });

  it('no active editor and several folders, none chosen yet: ask (a quick pick of them, in order)', () => {
    assert.deepEqual(chooseFolder({ folders, activeEditorFolder: undefined, current: undefined }), { kind: 'ask', folders });
  });

  it('a current folder removed from the workspace is chosen again', () => {
    assert.deepEqual(chooseFolder({ folders, activeEditorFolder: undefined, current: '/ws/gone' }), { kind: 'ask', folders });
    assert.deepEqual(chooseFolder({ folders: ['/ws/api'], activeEditorFolder: undefined, current: '/ws/gone' }), {
      kind: 'folder',
      root: '/ws/api',
      why: 'only',
    });
  });

  it('a single folder is the session\'s without asking', () => {
    assert.deepEqual(chooseFolder({ folders: ['/ws'], activeEditorFolder: undefined, current: undefined }), {
      kind: 'folder',
      root: '/ws',
      why: 'only',
    });
  });

  it('each folder of a multi-root workspace remembers its own view session; a single folder keeps the old key', () => {
    assert.equal(memoryKey('tether.viewSession', '/ws', 1), 'tether.viewSession');
    assert.equal(memoryKey('tether.viewSession', '/ws/api', 2), 'tether.viewSession:/ws/api');
    assert.notEqual(memoryKey('k', '/ws/api', 2), memoryKey('k', '/ws/web', 2));
  });

  it('server messages go to the folder that knows their session, else to the current folder', () => {
    const known = [
      { root: '/ws/api', sessionIds: ['s-api', undefined] },
      { root: '/ws/web', sessionIds: [undefined, 's-web'] },
    ];
    assert.equal(routeMessage(known, { sessionId: 's-api' }, '/ws/web'), '/ws/api');
    assert.equal(routeMessage(known, { sessionId: 's-web' }, '/ws/api'), '/ws/web');
    assert.equal(routeMessage(known, { previousSessionId: 's-api', sessionId: 'new' }, '/ws/web'), '/ws/api');
    assert.equal(routeMessage(known, { sessionId: 'unknown' }, '/ws/web'), '/ws/web');
    assert.equal(routeMessage(known, null, '/ws/api'), '/ws/api');
  });
});
