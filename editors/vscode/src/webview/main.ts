/**
 * The session view's script, bundled by esbuild into `dist/webview.js` and loaded by the
 * webview under a Content-Security-Policy with a nonce (no inline script, no remote content).
 *
 * It decides nothing: it applies the `ViewOp`s the extension posts (see
 * `src/core/transcript.ts`) to the DOM, one item at a time, and posts the user's actions
 * back. Rendering is incremental: a streamed chunk re-renders only its own item (coalesced to
 * one render per animation frame), and a big transcript is drawn newest first (the last
 * turns at once, the older ones in chunks above them, frame by frame), so the view is usable
 * at once whatever the size.
 */
import { olderText, promptHint, renderItem, staleText, statusText } from '../core/render';
import type { OlderState, PermissionView, PromptState, ViewItem, ViewOp, WebviewMessage } from '../core/transcript';

interface VsCodeApi {
  postMessage(message: WebviewMessage): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

/** Timings of the last reset and the last streamed update, read by the end-to-end test. */
interface Perf {
  resetCount: number;
  resetStart: number;
  /** The newest turns are in the DOM and laid out (the next animation frame). */
  tailDone: number;
  /** Every turn of the reset is in the DOM. */
  allDone: number;
  replaceStart: number;
  replaceDone: number;
}

const api = acquireVsCodeApi();
const $ = (id: string): HTMLElement => {
  const el = document.getElementById(id);
  if (!el) throw new Error(`#${id} missing`);
  return el;
};
const root = document.body;
const log = $('log');
const list = $('items');
const olderEl = $('older');
const staleEl = $('stale');
const statusEl = $('status');
const permEl = $('permission');
const form = $('composer') as HTMLFormElement;
const input = $('prompt') as HTMLTextAreaElement;
const sendBtn = $('send') as HTMLButtonElement;
const cancelBtn = $('cancel') as HTMLButtonElement;
const reasonEl = $('prompt-reason');

/**
 * Turns drawn at once on a reset; the rest follow above them, frame by frame, as many as fit
 * in `FRAME_BUDGET_MS` (at least `MIN_CHUNK`), so scrolling and typing stay smooth meanwhile.
 */
const TAIL = 60;
const FRAME_BUDGET_MS = 12;
const MIN_CHUNK = 20;

const els = new Map<string, HTMLElement>();
const pendingReplace = new Map<string, ViewItem>();
let backlog: ViewItem[] = [];
let frameQueued = false;
/** The view follows the newest turn until the user scrolls away from the bottom. */
let pinned = true;
let older: OlderState = { state: 'none' };
let olderAsked = false;
let prompt: PromptState = { canSend: false, canCancel: false, reason: '' };
const perf: Perf = { resetCount: 0, resetStart: 0, tailDone: 0, allDone: 0, replaceStart: 0, replaceDone: 0 };
(window as unknown as { __tetherPerf: Perf }).__tetherPerf = perf;

const template = document.createElement('template');
function build(item: ViewItem): HTMLElement {
  template.innerHTML = renderItem(item);
  const el = template.content.firstElementChild as HTMLElement;
  els.set(item.id, el);
  return el;
}

function fragmentOf(items: ViewItem[]): DocumentFragment {
  const frag = document.createDocumentFragment();
  for (const item of items) frag.appendChild(build(item));
  return frag;
}

function atBottom(): boolean {
  return log.scrollHeight - log.scrollTop - log.clientHeight < 40;
}

function scrollToBottom(): void {
  log.scrollTop = log.scrollHeight;
}

/** Inserts `frag` above everything, keeping what the user looks at in place. */
function insertAtTop(frag: DocumentFragment): void {
  if (pinned) {
    list.insertBefore(frag, list.firstChild);
    scrollToBottom();
    return;
  }
  const before = log.scrollHeight;
  const top = log.scrollTop;
  list.insertBefore(frag, list.firstChild);
  log.scrollTop = top + (log.scrollHeight - before);
}

function schedule(): void {
  if (frameQueued) return;
  frameQueued = true;
  requestAnimationFrame(frame);
}

function frame(): void {
  frameQueued = false;
  if (pendingReplace.size > 0) {
    const stick = atBottom();
    for (const item of pendingReplace.values()) {
      const old = els.get(item.id);
      if (!old) continue;
      const wasOpen = old.querySelector('details')?.open;
      const el = build(item);
      const details = el.querySelector('details');
      if (details && wasOpen !== undefined) details.open = wasOpen;
      old.replaceWith(el);
    }
    pendingReplace.clear();
    if (stick || pinned) scrollToBottom();
    perf.replaceDone = performance.now();
  }
  if (perf.tailDone === 0 && perf.resetStart > 0) perf.tailDone = performance.now();
  if (backlog.length > 0) {
    const start = performance.now();
    const frag = document.createDocumentFragment();
    let n = 0;
    while (backlog.length > 0 && (n < MIN_CHUNK || performance.now() - start < FRAME_BUDGET_MS)) {
      const item = backlog.pop();
      if (!item) break;
      frag.insertBefore(build(item), frag.firstChild);
      n++;
    }
    insertAtTop(frag);
    if (backlog.length > 0) schedule();
  }
  if (backlog.length === 0 && perf.allDone === 0 && perf.resetStart > 0) {
    perf.allDone = performance.now();
    list.setAttribute('aria-busy', 'false');
    maybeLoadOlder();
  }
}

function reset(items: ViewItem[], stale: boolean): void {
  perf.resetCount = items.length;
  perf.resetStart = performance.now();
  perf.tailDone = 0;
  perf.allDone = 0;
  list.textContent = '';
  els.clear();
  pendingReplace.clear();
  // A screen reader is not read the whole transcript as it is drawn: the log is busy meanwhile.
  list.setAttribute('aria-busy', 'true');
  const tail = items.slice(Math.max(0, items.length - TAIL));
  backlog = items.slice(0, items.length - tail.length);
  list.appendChild(fragmentOf(tail));
  setStale(stale);
  pinned = true;
  scrollToBottom();
  olderAsked = false;
  schedule();
}

function setStale(stale: boolean): void {
  root.classList.toggle('is-stale', stale);
  staleEl.hidden = !stale;
}

function setOlder(o: OlderState): void {
  older = o;
  olderEl.textContent = olderText(o);
  olderEl.dataset.state = o.state;
  olderEl.hidden = o.state === 'none';
  if (o.state !== 'loading') olderAsked = false;
}

function setPrompt(p: PromptState): void {
  prompt = p;
  sendBtn.disabled = !p.canSend;
  cancelBtn.disabled = !p.canCancel;
  input.readOnly = !p.canSend;
  input.setAttribute('aria-disabled', String(!p.canSend));
  reasonEl.textContent = promptHint(p);
  reasonEl.classList.toggle('blocked', !p.canSend);
}

function setPermission(p: PermissionView | null): void {
  permEl.textContent = '';
  permEl.hidden = p === null;
  if (!p) return;
  const heading = document.createElement('p');
  heading.className = 'perm-title';
  heading.id = 'perm-title';
  heading.textContent = `The agent asks for permission: ${p.title}`;
  permEl.appendChild(heading);
  const row = document.createElement('div');
  row.className = 'perm-options';
  for (const o of p.options) {
    const b = document.createElement('button');
    b.type = 'button';
    b.textContent = o.name;
    b.dataset.optionId = o.optionId;
    b.className = o.kind.startsWith('reject') ? 'secondary' : '';
    b.title = o.kind;
    b.addEventListener('click', () => {
      api.postMessage({ type: 'permission', requestId: p.requestId, optionId: o.optionId });
      permEl.querySelectorAll('button').forEach((x) => (x.disabled = true));
    });
    row.appendChild(b);
  }
  permEl.appendChild(row);
  permEl.querySelector('button')?.focus();
}

function apply(op: ViewOp): void {
  switch (op.op) {
    case 'reset':
      staleEl.textContent = staleText(op.source);
      staleEl.title = op.source ? op.source.path : '';
      return reset(op.items, op.stale);
    case 'append': {
      // The user's own prompt brings the view back to the bottom.
      if (op.item.kind === 'user' && !op.item.restored) pinned = true;
      const stick = pinned || atBottom();
      list.appendChild(build(op.item));
      if (stick) scrollToBottom();
      return;
    }
    case 'replace':
      perf.replaceStart = performance.now();
      pendingReplace.set(op.item.id, op.item);
      return schedule();
    case 'prepend':
      insertAtTop(fragmentOf(op.items));
      return;
    case 'stale':
      return setStale(op.stale);
    case 'older':
      return setOlder(op.older);
    case 'status': {
      const s = statusText(op.status);
      statusEl.textContent = s.text;
      statusEl.className = s.className;
      return;
    }
    case 'prompt':
      return setPrompt(op.prompt);
    case 'permission':
      return setPermission(op.permission);
  }
}

function maybeLoadOlder(): void {
  if (olderAsked || backlog.length > 0 || older.state !== 'available') return;
  if (log.scrollTop > 40) return;
  olderAsked = true;
  api.postMessage({ type: 'loadOlder' });
}

window.addEventListener('message', (e: MessageEvent<unknown>) => {
  const data = e.data as { ops?: unknown } | null;
  if (!data || !Array.isArray(data.ops)) return;
  for (const op of data.ops as ViewOp[]) apply(op);
});

// Only the user unpins the view (wheel, keys, the scrollbar, touch): the view's own scrolling
// and turns growing as they are drawn must not.
let userScrollAt = -Infinity;
const userScrolls = (): void => {
  userScrollAt = performance.now();
};
log.addEventListener(
  'wheel',
  (e) => {
    userScrolls();
    // At the top a wheel up scrolls nothing, so no scroll event comes: ask here too.
    if (e.deltaY < 0 && log.scrollTop <= 40) maybeLoadOlder();
  },
  { passive: true },
);
log.addEventListener('touchstart', userScrolls, { passive: true });
log.addEventListener('pointerdown', userScrolls);
log.addEventListener('keydown', userScrolls);
log.addEventListener('scroll', () => {
  if (atBottom()) pinned = true;
  else if (performance.now() - userScrollAt < 1000) pinned = false;
  if (log.scrollTop <= 40) maybeLoadOlder();
});
// Turns off screen are laid out at an estimated height (`content-visibility: auto`) and take
// their real one when drawn, and the conversation's own height changes with the status line,
// the permission question and the prompt box: a view that follows the newest turn stays at
// the bottom through all of it.
const follow = new ResizeObserver(() => {
  if (pinned) scrollToBottom();
});
for (const el of [list, log, olderEl]) follow.observe(el);

function send(): void {
  const text = input.value.trim();
  if (!prompt.canSend || text === '') return;
  api.postMessage({ type: 'send', text });
  input.value = '';
}

form.addEventListener('submit', (e) => {
  e.preventDefault();
  send();
});
input.addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    send();
  } else if (e.key === 'Escape' && prompt.canCancel) {
    e.preventDefault();
    api.postMessage({ type: 'cancel' });
  }
});
cancelBtn.addEventListener('click', () => api.postMessage({ type: 'cancel' }));

api.postMessage({ type: 'ready' });
