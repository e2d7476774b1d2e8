import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { escapeHtml, itemLabel, olderText, promptHint, renderItem, renderMarkdown, statusText } from '../../src/core/render';
import type { ViewItem } from '../../src/core/transcript';

const item = (over: Partial<ViewItem>): ViewItem => ({ id: 'i1', kind: 'agent', text: '', ...over });

describe('render: Markdown, safely', () => {
  it('renders Markdown: emphasis, code, lists, links', () => {
    const html = renderMarkdown('Hi **there**\n\n```\nnpm test\n```\n\n- a\n- b\n\n[docs](https://example.org/x)');
    assert.match(html, /<strong>there<\/strong>/);
    assert.match(html, /<pre><code>npm test\n<\/code><\/pre>/);
    assert.match(html, /<li>a<\/li>/);
    assert.match(html, /<a href="https:\/\/example.org\/x" rel="noreferrer noopener">docs<\/a>/);
  });

  it('never passes HTML through: script, handlers and iframes are text', () => {
    const html = renderMarkdown('<script>alert(1)</script> <img src=x onerror=alert(1)> <iframe src="https://evil"></iframe>');
    assert.doesNotMatch(html, /<script|<img|<iframe/);
    assert.match(html, /&lt;script&gt;alert\(1\)&lt;\/script&gt;/);
  });

  it('refuses javascript:, vbscript:, file: and data: links', () => {
    for (const url of ['javascript:alert(1)', 'vbscript:msgbox(1)', 'file:///etc/passwd', 'data:text/html;base64,PHNjcmlwdD4=']) {
      const html = renderMarkdown(`[x](${url})`);
      assert.doesNotMatch(html, /<a /, `${url} → ${html}`);
    }
  });

  it('loads nothing remote: images stay text', () => {
    const html = renderMarkdown('![logo](https://example.org/logo.png)');
    assert.doesNotMatch(html, /<img/);
  });

  it('escapes every other string', () => {
    assert.equal(escapeHtml(`<a href="x">'&'</a>`), '&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;');
  });
});

describe('render: one item', () => {
  it('a user turn and an agent turn, with who said it', () => {
    assert.equal(
      renderItem(item({ kind: 'user', text: 'hello' })),
      '<article class="turn user" data-id="i1" tabindex="-1" aria-label="You"><div class="who">You</div><div class="md"><p>hello</p>\n</div></article>',
    );
    const agent = renderItem(item({ text: 'Two *files*', open: true, restored: true }));
    assert.match(agent, /class="turn agent restored streaming"/);
    assert.match(agent, /aria-busy="true"/);
    assert.match(agent, /<em>files<\/em>/);
  });

  it('a thought is collapsed', () => {
    const html = renderItem(item({ kind: 'thought', text: 'hmm' }));
    assert.match(html, /<details><summary class="who">Thought<\/summary>/);
    assert.doesNotMatch(html, /<details open/);
  });

  it('a tool call: kind, title, status and output; a failed one shows its output open', () => {
    const tool = { toolCallId: 'c1', title: 'Run <tests>', kind: 'execute', status: 'in_progress', output: 'ok <b>', finishedByTether: false };
    const html = renderItem(item({ kind: 'tool', tool }));
    assert.match(html, /class="turn tool tool-in-progress"/);
    assert.match(html, /<span class="badge kind">execute<\/span> <span class="tool-title">Run &lt;tests&gt;<\/span>/);
    assert.match(html, /<span class="badge status status-in-progress">running<\/span>/);
    assert.match(html, /<details><summary>Output<\/summary><pre class="output">ok &lt;b&gt;<\/pre><\/details>/);
    assert.equal(itemLabel(item({ kind: 'tool', tool })), 'Tool call execute: Run <tests>, running');
    const failed = renderItem(item({ kind: 'tool', tool: { ...tool, status: 'failed', finishedByTether: true, output: 'Tool call interrupted' } }));
    assert.match(failed, /<details open><summary>Output/);
    assert.match(failed, /Tether finished this tool call as failed/);
  });

  it('a plan, with its entries and their status', () => {
    const html = renderItem(
      item({ kind: 'plan', plan: [{ content: 'Write <tests>', status: 'completed', priority: 'high' }, { content: 'b', status: 'pending', priority: 'low' }] }),
    );
    assert.match(html, /<li class="plan-completed"><span class="badge">done<\/span> Write &lt;tests&gt; <span class="badge prio">high<\/span><\/li>/);
    assert.match(html, /<li class="plan-pending"><span class="badge">pending<\/span> b<\/li>/);
  });

  it('a status note is plain text', () => {
    assert.match(renderItem(item({ kind: 'status', text: '<b>x</b>' })), /<p class="note">&lt;b&gt;x&lt;\/b&gt;<\/p>/);
  });

  it('ids are escaped in attributes', () => {
    assert.match(renderItem(item({ id: 'x"><script>' })), /data-id="x&quot;&gt;&lt;script&gt;"/);
  });
});

describe('render: the lines around the conversation', () => {
  it('older turns', () => {
    assert.equal(olderText({ state: 'none' }), '');
    assert.equal(olderText({ state: 'available', count: 1 }), '1 older turn: scroll up to load them');
    assert.equal(olderText({ state: 'loading', count: 3 }), 'Loading older turns…');
    assert.equal(olderText({ state: 'unavailable', message: 'Older turns are not available' }), 'Older turns are not available');
  });

  it('status and prompt hint', () => {
    assert.deepEqual(statusText({ state: 'rateLimited', text: 'Rate limited, resuming in 4 s' }), {
      text: 'Rate limited, resuming in 4 s',
      className: 'state-ratelimited',
    });
    assert.equal(promptHint({ canSend: true, canCancel: false, reason: '' }), 'Enter sends; Shift+Enter adds a line.');
    assert.equal(promptHint({ canSend: false, canCancel: false, reason: 'No session' }), 'No session');
  });
});
