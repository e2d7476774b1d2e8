import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { permissionAnswer, permissionPick } from '../../src/core/permission';
import type { PermissionRequestParams } from '../../src/core/protocol';

const req: PermissionRequestParams = {
  sessionId: 's',
  toolCall: { toolCallId: 't1', title: 'Run npm test' },
  options: [
    { optionId: 'allow', name: 'Allow', kind: 'allow_once' },
    { optionId: 'always', name: 'Always Allow', kind: 'allow_always' },
    { optionId: 'reject', name: 'Reject', kind: 'reject_once' },
    { optionId: 'odd', name: 'Odd', kind: 'something_new' },
  ],
};

describe('permission pick (ACP session/request_permission)', () => {
  it("lists the agent's options in order with their kinds", () => {
    const p = permissionPick(req);
    assert.equal(p.placeholder, 'Allow "Run npm test"? (Escape cancels)');
    assert.deepEqual(
      p.items.map((i) => [i.label, i.description, i.optionId]),
      [
        ['Allow', 'allow once', 'allow'],
        ['Always Allow', 'always allow', 'always'],
        ['Reject', 'reject once', 'reject'],
        ['Odd', 'something_new', 'odd'],
      ],
    );
  });

  it('answers the picked option id', () => {
    assert.deepEqual(permissionAnswer(req, 'always'), { outcome: { outcome: 'selected', optionId: 'always' } });
  });

  it('answers cancelled when nothing (or an unknown id) was picked', () => {
    assert.deepEqual(permissionAnswer(req, undefined), { outcome: { outcome: 'cancelled' } });
    assert.deepEqual(permissionAnswer(req, 'forged'), { outcome: { outcome: 'cancelled' } });
  });

  it('names a tool call without a title generically', () => {
    const { toolCall: _t, ...noTool } = req;
    void _t;
    assert.equal(permissionPick(noTool).placeholder, 'Allow a tool call? (Escape cancels)');
  });
});
