import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import type { AcpSessionUpdate } from '../../src/core/protocol';
import { MAX_EXEC_BUFFER, SnapshotModel, stripAnsi } from '../../src/core/snapshot';

const clock = () => new Date('2026-11-22T01:00:00Z');
const upd = (update: AcpSessionUpdate, replay = false) => ({ sessionId: 's', update, replay });
const text = (t: string) => ({ type: 'text', text: t });

describe('SnapshotModel', () => {
  it('starts empty with the workspace as working dir', () => {
    const m = new SnapshotModel('/w', clock);
    const s = m.toSnapshot();
    assert.deepEqual(s.chatTurns, []);
    assert.deepEqual(s.context, { workingDir: '/w' });
    assert.deepEqual(s.uiState, { isStreamErrorVisible: false });
    assert.deepEqual(s.telemetry, { turnCount: 0, execCount: 0 });
  });

  it('joins message chunks into turns and completes a turn when another begins', () => {
    const m = new SnapshotModel('/w', clock);
    m.apply(upd({ sessionUpdate: 'user_message_chunk', content: text('Fix ') }));
    m.apply(upd({ sessionUpdate: 'user_message_chunk', content: text('the bug') }));
    m.apply(upd({ sessionUpdate: 'agent_message_chunk', content: text('Done.') }));
    const turns = m.toSnapshot().chatTurns;
    assert.deepEqual(
      turns.map((t) => [t.role, t.text, t.complete]),
      [
        ['user', 'Fix the bug', true],
        ['assistant', 'Done.', false],
      ],
    );
    assert.equal(turns[0]?.timestampUtc, '2026-11-22T01:00:00.000Z');
  });

  it('does not append replayed history (the restored snapshot holds it)', () => {
    const m = new SnapshotModel('/w', clock);
    const before = m.revision;
    m.apply(upd({ sessionUpdate: 'agent_message_chunk', content: text('old') }, true));
    assert.equal(m.revision, before);
    assert.deepEqual(m.toSnapshot().chatTurns, []);
  });

  it('tracks tool calls and reports execCompleted once when one ends', () => {
    const m = new SnapshotModel('/w', clock);
    assert.equal(m.apply(upd({ sessionUpdate: 'tool_call', toolCallId: 't1', title: 'npm test', status: 'pending' })), undefined);
    assert.equal(
      m.apply(
        upd({
          sessionUpdate: 'tool_call_update',
          toolCallId: 't1',
          status: 'in_progress',
          content: [{ type: 'content', content: text('\u001b[32mok\u001b[0m 1\n') }] as unknown as AcpSessionUpdate['content'],
        }),
      ),
      undefined,
    );
    assert.equal(m.apply(upd({ sessionUpdate: 'tool_call_update', toolCallId: 't1', status: 'completed' })), 'execCompleted');
    assert.equal(m.apply(upd({ sessionUpdate: 'tool_call_update', toolCallId: 't1', status: 'completed' })), undefined);
    const exec = m.toSnapshot().execTurns[0];
    assert.equal(exec?.status, 'completed');
    assert.equal(exec?.buffer, 'ok 1\n');
    assert.equal(m.toSnapshot().telemetry?.execCount, 1);
  });

  it('ignores updates of unknown tool calls and unknown update kinds', () => {
    const m = new SnapshotModel('/w', clock);
    const before = m.revision;
    assert.equal(m.apply(upd({ sessionUpdate: 'tool_call_update', toolCallId: 'nope', status: 'completed' })), undefined);
    assert.equal(m.apply(upd({ sessionUpdate: 'usage_update' })), undefined);
    assert.equal(m.revision, before);
  });

  it('keeps the tail of a long exec buffer and counts the dropped bytes', () => {
    const m = new SnapshotModel('/w', clock);
    m.apply(upd({ sessionUpdate: 'tool_call', toolCallId: 't', title: 't' }));
    const chunk = 'é'.repeat(MAX_EXEC_BUFFER); // 2 UTF-8 bytes per character
    const content = [{ type: 'content', content: text(chunk) }] as unknown as AcpSessionUpdate['content'];
    m.apply(upd({ sessionUpdate: 'tool_call_update', toolCallId: 't', content }));
    m.apply(upd({ sessionUpdate: 'tool_call_update', toolCallId: 't', content: [{ type: 'content', content: text('xyz') }] as unknown as AcpSessionUpdate['content'] }));
    const exec = m.toSnapshot().execTurns[0];
    assert.equal(exec?.buffer.length, MAX_EXEC_BUFFER);
    assert.ok(exec?.buffer.endsWith('éxyz'));
    assert.equal(exec?.truncatedBytes, 6);
  });

  it('restores a snapshot, tolerating missing parts, and continues after it', () => {
    const m = new SnapshotModel('/w', clock);
    m.restore({
      chatTurns: [{ id: 'turn-1', role: 'user', text: 'hi', timestampUtc: 'x', complete: true }],
      uiState: { isStreamErrorVisible: true, streamErrorText: 'boom' },
    });
    m.apply(upd({ sessionUpdate: 'agent_message_chunk', content: text('hello') }));
    const s = m.toSnapshot();
    assert.deepEqual(s.chatTurns.map((t) => t.id), ['turn-1', 'turn-2']);
    assert.deepEqual(s.execTurns, []);
    assert.equal(s.uiState.isStreamErrorVisible, true);
    assert.equal(s.context.workingDir, '/w');
  });

  it('records the stream error banner state and bumps the revision only on change', () => {
    const m = new SnapshotModel('/w', clock);
    const r0 = m.revision;
    m.setStreamError({ visible: false });
    assert.equal(m.revision, r0);
    m.setStreamError({ visible: true, text: 'dropped' });
    assert.deepEqual(m.toSnapshot().uiState, { isStreamErrorVisible: true, streamErrorText: 'dropped' });
    m.setStreamError({ visible: false });
    assert.deepEqual(m.toSnapshot().uiState, { isStreamErrorVisible: false });
    assert.equal(m.revision, r0 + 2);
  });

  it('hands out copies, not its own state', () => {
    const m = new SnapshotModel('/w', clock);
    m.apply(upd({ sessionUpdate: 'agent_message_chunk', content: text('a') }));
    const s = m.toSnapshot();
    s.chatTurns[0].text = 'changed';
    assert.equal(m.toSnapshot().chatTurns[0]?.text, 'a');
  });

  it('strips CSI and OSC escape sequences', () => {
    assert.equal(stripAnsi('\u001b[1;31mred\u001b[0m \u001b]0;title\u0007done'), 'red done');
  });
});
