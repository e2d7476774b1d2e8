// The e2e harness: a real VS Code (code-server 4.100.3 from npm) on 127.0.0.1 with the packaged
// extension installed from its .vsix, driven by playwright-core through Debian's Chromium.
// Recipe: verified offline on Debian (code-server 4.100.3, the last release whose engines accept
// Node 20); written up in README.md.
//
// Nothing here is skipped quietly: every missing piece (code-server, chromium, the .vsix, the
// tether binary, the scripted agent) throws an Error naming it and how to get it.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const here = path.dirname(fileURLToPath(import.meta.url));
export const extensionRoot = path.resolve(here, '..', '..');
export const repoRoot = path.resolve(extensionRoot, '..', '..');
export const artifacts = path.join(extensionRoot, 'test-artifacts');

const pkg = JSON.parse(readFileSync(path.join(extensionRoot, 'package.json'), 'utf8'));
export const extensionId = `${pkg.publisher}.${pkg.name}`;
export const vsixPath = path.join(extensionRoot, `${pkg.name}-${pkg.version}.vsix`);
export const codeServerBin = path.join(here, 'node_modules', '.bin', 'code-server');
export const chromiumBin = process.env.CHROMIUM ?? '/usr/bin/chromium';
export const tetherBin = process.env.TETHER_BIN ?? path.join(repoRoot, 'target', 'debug', 'tether');
export const scriptedAgentBin =
  process.env.TETHER_SCRIPTED_AGENT ?? path.join(repoRoot, 'target', 'debug', 'tether-scripted-agent');

const INSTALL_HINT = 'run editors/vscode/scripts/install-e2e.sh';

/** Throws a clear error unless `file` is an executable file. */
export function requireExecutable(file, what, hint) {
  let ok;
  try {
    ok = statSync(file).isFile() && (statSync(file).mode & 0o111) !== 0;
  } catch {
    ok = false;
  }
  if (!ok) throw new Error(`${what} is missing: ${file} is not an executable file (${hint})`);
}

/** The harness's own prerequisites: code-server, chromium, playwright-core, the .vsix. */
export async function requireHarness(vsix = vsixPath) {
  requireExecutable(codeServerBin, 'code-server 4.100.3', INSTALL_HINT);
  requireExecutable(chromiumBin, 'Debian chromium', INSTALL_HINT);
  try {
    await import('playwright-core');
  } catch (err) {
    throw new Error(`playwright-core cannot be loaded from ${here}/node_modules (${INSTALL_HINT}): ${err}`, { cause: err });
  }
  if (!existsSync(vsix)) throw new Error(`the packaged extension ${vsix} is missing (run npm run package, or cargo xtask dist for the per-platform ones)`);
}

/** A free TCP port on 127.0.0.1. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Starts code-server with a fresh user-data and extensions folder, the .vsix installed, the
 * given settings (as the remote machine's settings), and `workspace` open. `env` changes the
 * environment code-server (and so the extension host and `tether serve`) gets: a key set to
 * `undefined` is removed, e.g.
 * `{TETHER_REMOTE: undefined}` for the default, a daemon in this run's own XDG_RUNTIME_DIR.
 * `vsix` is the package installed (default: the one `npm run package` builds).
 * `trust: true` keeps VS Code's workspace trust on (the other tests turn it off), so the
 * folder opens in Restricted Mode until the test trusts it.
 * Returns `{url, root, dirs, env, logs, kill, stop}`: `kill` ends code-server's process group,
 * `stop` does that and removes the temp folder.
 */
export async function startCodeServer({ name, settings, workspace, env: envChanges = {}, vsix = vsixPath, trust = false }) {
  const root = mkdtempSync(path.join(tmpdir(), `tether-e2e-${name}-`));
  const dirs = {
    extensions: path.join(root, 'extensions'),
    userData: path.join(root, 'user-data'),
    xdg: path.join(root, 'xdg'),
  };
  for (const d of Object.values(dirs)) mkdirSync(d, { recursive: true });
  const env = {
    ...process.env,
    HOME: path.join(dirs.xdg, 'home'),
    XDG_CONFIG_HOME: path.join(dirs.xdg, 'config'),
    XDG_DATA_HOME: path.join(dirs.xdg, 'data'),
    XDG_CACHE_HOME: path.join(dirs.xdg, 'cache'),
    XDG_RUNTIME_DIR: path.join(dirs.xdg, 'runtime'),
    // These tests exercise the in-process server unless `env` says otherwise.
    TETHER_REMOTE: 'off',
  };
  // The daemon's folder is XDG_RUNTIME_DIR's (below): never one from the caller's environment.
  delete env.TETHER_RUNTIME_DIR;
  for (const [k, v] of Object.entries(envChanges)) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  for (const k of ['HOME', 'XDG_CONFIG_HOME', 'XDG_DATA_HOME', 'XDG_CACHE_HOME', 'XDG_RUNTIME_DIR']) {
    mkdirSync(env[k], { recursive: true, mode: 0o700 });
  }
  const common = ['--extensions-dir', dirs.extensions, '--user-data-dir', dirs.userData];

  // The real install path: code-server's own --install-extension of the .vsix.
  const inst = spawnSync(codeServerBin, [...common, '--install-extension', vsix], { env, encoding: 'utf8', timeout: 120_000 });
  if (inst.status !== 0) {
    throw new Error(`code-server --install-extension ${vsix} failed (${inst.status}): ${inst.stdout}\n${inst.stderr}`);
  }
  const installed = readdirSync(dirs.extensions).filter((d) => d.startsWith(`${extensionId}-`));
  if (installed.length !== 1) throw new Error(`expected ${extensionId}-<version> in ${dirs.extensions}, found ${readdirSync(dirs.extensions)}`);

  // The workbench's own preferences go in the user settings. The test's `settings` go in the
  // remote machine's settings (<user-data>/Machine/settings.json), where a remote window reads
  // them: in code-server the extension host is remote, and VS Code ignores user (local)
  // values of machine-scoped settings there, such as tether.serverPath. Written to the user
  // settings, they reached the extension only while its schema was not yet registered: after a
  // window reload, now and then not at all.
  const write = (folder, values) => {
    mkdirSync(path.join(dirs.userData, folder), { recursive: true });
    writeFileSync(path.join(dirs.userData, folder, 'settings.json'), JSON.stringify(values, null, 2));
  };
  write('User', {
    'workbench.startupEditor': 'none',
    'workbench.tips.enabled': false,
    'workbench.welcomePage.walkthroughs.openOnInstall': false,
    'security.workspace.trust.enabled': trust,
    'extensions.autoCheckUpdates': false,
    'extensions.autoUpdate': false,
    'update.mode': 'none',
    'telemetry.telemetryLevel': 'off',
    'chat.disableAIFeatures': true,
  });
  write('Machine', settings);

  const port = await freePort();
  const logs = [];
  const proc = spawn(
    codeServerBin,
    [
      '--bind-addr', `127.0.0.1:${port}`,
      '--auth', 'none',
      '--disable-telemetry',
      '--disable-update-check',
      ...(trust ? [] : ['--disable-workspace-trust']),
      '--disable-getting-started-override',
      ...common,
      workspace,
    ],
    { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true },
  );
  proc.stdout.on('data', (d) => logs.push(String(d)));
  proc.stderr.on('data', (d) => logs.push(String(d)));
  let exited = null;
  proc.on('exit', (code, sig) => (exited = `code ${code} signal ${sig}`));

  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (exited) throw new Error(`code-server exited during start-up (${exited}):\n${logs.join('')}`);
    try {
      const res = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2_000) });
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`code-server did not answer /healthz within 60 s:\n${logs.join('')}`);
    await sleep(250);
  }

  const kill = async () => {
    if (!exited) {
      try {
        process.kill(-proc.pid, 'SIGTERM'); // its own process group: the extension host and tether too
      } catch {
        // already gone
      }
      for (let i = 0; i < 40 && !exited; i++) await sleep(100);
      if (!exited) {
        try {
          process.kill(-proc.pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    }
  };
  const stop = async () => {
    await kill();
    if (!process.env.TETHER_E2E_KEEP) rmSync(root, { recursive: true, force: true });
  };
  return {
    url,
    root,
    dirs,
    env,
    logs,
    kill,
    stop,
    folderUrl: `${url}/?folder=${encodeURIComponent(workspace)}`,
    // When `workspace` is a .code-workspace file (a multi-root workspace).
    workspaceUrl: `${url}/?workspace=${encodeURIComponent(workspace)}`,
  };
}

/**
 * Every text the watched elements showed, in order, across reloads: a MutationObserver in the
 * page reports each change of the Tether status item, notification messages and the dialog
 * message, so states that last only milliseconds (an attempt that fails at once) are seen, and
 * a notification VS Code has already hidden again (an information toast goes after 15 s) still
 * counts as shown. Each entry is `{kind, text}`, `kind` one of `status`, `notification`,
 * `dialog`.
 */
export const WATCHED = '[id$=".tether.status"], .notification-list-item-message, .monaco-dialog-box .dialog-message-text';
const textLog = [];
/** Called with each new entry of `textLog` (the waits of `waitForSeen`). */
const textListeners = new Set();

const observerScript = `(() => {
  const selector = ${JSON.stringify(WATCHED)};
  const last = new WeakMap();
  const kindOf = (el) => (el.matches('.notification-list-item-message') ? 'notification' : el.matches('.dialog-message-text') ? 'dialog' : 'status');
  const scan = () => {
    for (const el of document.querySelectorAll(selector)) {
      const text = (el.textContent || '').trim();
      if (text && last.get(el) !== text) {
        last.set(el, text);
        window.__tetherRecord(text, kindOf(el));
      }
    }
  };
  const start = () => new MutationObserver(scan).observe(document.body, { subtree: true, childList: true, characterData: true, attributes: true });
  if (document.body) start(); else document.addEventListener('DOMContentLoaded', start);
})();`;

/**
 * The last `n` texts the watched elements showed, one line each as `kind: text`: what a failed
 * test prints, so a toast VS Code hid again (an error of a command, say) is in its log.
 */
export function lastSeenTexts(n = 20) {
  return textLog.slice(-n).map((e) => `${e.kind}: ${e.text}`).join('\n') || '(none)';
}

/** Where the watched texts stand now: pass it to `waitForSeen` as `since`. */
export function textMark() {
  return textLog.length;
}

/**
 * Waits until a watched element of `kind` (`status`, `notification`, `dialog`; any when
 * `undefined`) has shown a text matching `re` since `since` (a `textMark()`); returns the
 * text. It waits on the record of the page's own mutations, so a state that came and went
 * between two looks (a retry attempt, a toast VS Code hid again) is not missed.
 */
export function waitForSeen(re, { kind, since = 0, timeout = 30_000 } = {}) {
  const hit = (e) => (kind === undefined || e.kind === kind) && re.test(e.text);
  const found = textLog.slice(since).find(hit);
  if (found) return Promise.resolve(found.text);
  return new Promise((resolve, reject) => {
    const listener = (e) => {
      if (!hit(e)) return;
      clearTimeout(timer);
      textListeners.delete(listener);
      resolve(e.text);
    };
    const timer = setTimeout(() => {
      textListeners.delete(listener);
      const shown = textLog.slice(since).filter((e) => kind === undefined || e.kind === kind).map((e) => e.text);
      reject(new Error(`no ${kind ?? 'watched'} text matched ${re} within ${timeout} ms; shown since: ${JSON.stringify(shown)}`));
    }, timeout);
    textListeners.add(listener);
  });
}

/** Launches Debian's Chromium through playwright-core (flags verified with code-server 4.100.3: no sandbox, no GPU, no QUIC, no background network) and opens `url`. */
export async function openBrowser(url) {
  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({
    executablePath: chromiumBin,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-dev-shm-usage',
    ],
  });
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  await context.exposeFunction('__tetherRecord', (text, kind) => {
    const entry = { text, kind };
    textLog.push(entry);
    for (const l of [...textListeners]) l(entry);
  });
  await context.addInitScript(observerScript);
  const page = await context.newPage();
  await page.goto(url);
  await page.locator('.monaco-workbench').waitFor({ timeout: 60_000 });
  return { browser, page };
}

/** Saves a full-page screenshot under editors/vscode/test-artifacts/ and returns its path. */
export async function screenshot(page, name) {
  mkdirSync(artifacts, { recursive: true });
  const file = path.join(artifacts, `${name}.png`);
  await page.screenshot({ path: file });
  return file;
}

/**
 * Runs a command by its palette title ("Tether: Show Logs"). Call it for an extension's
 * command once that extension is up (its status item, a log line): a palette opened before
 * the extension host has registered the extension lists none of its commands, and typing does
 * not list them later (seen: "Tether: Open Session" run right after the workbench loaded).
 */
export async function runCommand(page, title) {
  await page.keyboard.press('F1');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ timeout: 10_000 });
  await input.fill(`>${title}`);
  const row = page.locator('.quick-input-list .monaco-list-row', { hasText: title }).first();
  await row.waitFor({ timeout: 10_000 });
  // The row itself is clicked, not Enter pressed: Enter accepts the palette's active item,
  // which on a loaded machine can still be the one from before the filter applied, so the
  // command never ran (one loaded run in six of tests/long-run.sh vscode: "Tether: Show
  // Sessions" typed, its row shown, and no quick pick of it ever opened).
  await row.click();
}

/** The Tether status bar item (created with id `tether.status`). */
export function statusItem(page) {
  return page.locator(`[id="${extensionId}.tether.status"]`);
}

/** Waits until the Tether status bar item's text matches `re`; returns the text. */
export async function waitForStatus(page, re, timeout = 30_000) {
  const item = statusItem(page);
  const deadline = Date.now() + timeout;
  let last = '';
  while (Date.now() < deadline) {
    last = (await item.textContent({ timeout: 1_000 }).catch(() => '')) ?? '';
    if (re.test(last)) return last;
    await sleep(100);
  }
  throw new Error(`status bar item never matched ${re}; last text: "${last}"`);
}

/**
 * The quick input (palette, input box or quick pick) whose title is `title`. Matched by its
 * title bar, not by any text in it: the command palette that ran "Tether: Show Sessions" holds
 * that text too, in the row clicked, until the command's own quick pick replaces it.
 */
export function quickInput(page, title) {
  const exact = new RegExp(`^${title.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`);
  return page.locator('.quick-input-widget').filter({ has: page.locator('.quick-input-title', { hasText: exact }) });
}

/**
 * The notification toast holding `text`, once it has slid in (VS Code marks it
 * `notification-fade-in-done` at the end of its transition), with the mouse resting on it: VS
 * Code hides a toast that is not an error with actions 15 to 20 s after it appeared unless the
 * mouse is over it, so a loaded machine must not lose it between finding it and clicking it.
 */
export async function restOnToast(page, text, timeout = 30_000) {
  const toast = page.locator('.notification-toast.notification-fade-in-done', { hasText: text });
  await toast.waitFor({ state: 'visible', timeout });
  await toast.hover({ timeout });
  return toast;
}

/** Every notification toast text currently shown (the center included when open). */
export async function notificationTexts(page) {
  return page.locator('.notification-list-item-message').allTextContents();
}

/** Waits until some notification matches `re`; returns its text. */
export async function waitForNotification(page, re, timeout = 30_000) {
  const deadline = Date.now() + timeout;
  let seen = [];
  while (Date.now() < deadline) {
    seen = await notificationTexts(page);
    const hit = seen.find((t) => re.test(t));
    if (hit) return hit;
    await sleep(100);
  }
  throw new Error(`no notification matched ${re}; shown: ${JSON.stringify(seen)}`);
}

/**
 * Runs `fn` and returns its result with every watched text (see `WATCHED`) shown meanwhile.
 * Every text shown before `fn` returned is in `seen`: the page reports a mutation (a
 * MutationObserver callback, then the binding call) before it answers any later request, so
 * one round trip to `page` after `fn` brings the last of them.
 */
export async function recordTexts(page, fn) {
  const from = textLog.length;
  const result = await fn();
  await page.evaluate(() => 0);
  return { result, seen: textLog.slice(from).map((e) => e.text) };
}

/** The modal dialog, once it is shown: `{message, detail, buttons, box}`. */
export async function waitForDialog(page, timeout = 60_000) {
  const box = page.locator('.monaco-dialog-box');
  await box.waitFor({ state: 'visible', timeout });
  const message = (await box.locator('.dialog-message-text').textContent())?.trim() ?? '';
  const detail = (await box.locator('.dialog-message-detail').textContent().catch(() => ''))?.trim() ?? '';
  const buttons = (await box.locator('.dialog-buttons a.monaco-button, .dialog-buttons .monaco-button').allTextContents()).map((t) => t.trim());
  return { box, message, detail, buttons: [...new Set(buttons)] };
}

/**
 * Finds a log file by name under code-server's logs folder: `Tether.log` (the extension's
 * LogOutputChannel) or `tether-serve.log` (the server's --log-file), both in the extension
 * host's per-extension log folder.
 */
export function findLog(userDataDir, fileName) {
  return findLogs(userDataDir, fileName)[0];
}

/** Every log file of that name, newest folder last (one per extension host run). */
export function findLogs(userDataDir, fileName) {
  const found = [];
  const stack = [path.join(userDataDir, 'logs')];
  while (stack.length) {
    const d = stack.pop();
    let entries;
    try {
      entries = readdirSync(d, { withFileTypes: true });
    } catch {
      continue;
    }
    for (const e of entries) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) stack.push(p);
      // `tether serve --log-file F` rotates daily: the file is `F.YYYY-MM-DD`.
      else if (e.name === fileName || e.name.startsWith(`${fileName}.`)) found.push(p);
    }
  }
  return found.sort();
}

/** Sends `initialize` to `tether serve --stdio --remote=off` and returns its result, or throws saying why not. */
export async function probeServer(bin) {
  // In process (--remote=off): a probe must not start a daemon in the user's own runtime folder.
  const child = spawn(bin, ['serve', '--stdio', '--remote=off'], { stdio: ['pipe', 'pipe', 'pipe'] });
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { processId: null, rootUri: null, capabilities: { experimental: { tether: { recoveryDialog: true, banners: true, status: true } } } },
  });
  let out = Buffer.alloc(0);
  let err = '';
  child.stdout.on('data', (d) => (out = Buffer.concat([out, d])));
  child.stderr.on('data', (d) => (err += String(d)));
  child.stdin.on('error', () => undefined);
  child.stdin.write(`Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
  const deadline = Date.now() + 10_000;
  try {
    while (Date.now() < deadline) {
      const text = out.toString('utf8');
      const at = text.indexOf('\r\n\r\n');
      if (at >= 0) {
        const len = Number(/Content-Length: (\d+)/i.exec(text)?.[1]);
        const payload = out.subarray(Buffer.byteLength(text.slice(0, at + 4)));
        if (payload.length >= len) {
          const msg = JSON.parse(payload.subarray(0, len).toString('utf8'));
          if (msg.error) throw new Error(`initialize answered an error: ${JSON.stringify(msg.error)}`);
          return msg.result;
        }
      }
      if (child.exitCode !== null) break;
      await sleep(50);
    }
    throw new Error(`${bin} serve --stdio did not answer initialize within 10 s (exit ${child.exitCode}); stderr: ${err.slice(-2000)}`);
  } finally {
    child.kill('SIGKILL');
  }
}

/**
 * Pids of the processes whose command line contains `marker` (read from /proc), e.g. the
 * `tether serve` started with a --log-file under this run's own temp folder.
 */
export function pidsWithArg(marker) {
  const pids = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let cmdline;
    try {
      cmdline = readFileSync(`/proc/${name}/cmdline`, 'utf8');
    } catch {
      continue;
    }
    if (cmdline.split('\0').some((a) => a.includes(marker))) pids.push(Number(name));
  }
  return pids;
}

/**
 * A minimal LSP client of `tether serve --stdio --remote=off` (Content-Length framing), for preparing a
 * cache the way an editor would before code-server starts. Server → client requests are
 * answered `null`. Returns `{request(method, params), close()}`.
 */
export function lspClient(bin, logFile) {
  // In process (--remote=off): the cache it prepares is released when it exits (a daemon in
  // the user's own runtime folder would keep it, and its agent, after the test).
  const child = spawn(bin, ['serve', '--stdio', '--remote=off', ...(logFile ? ['--log-file', logFile] : [])], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let buf = Buffer.alloc(0);
  let nextId = 1;
  const pending = new Map();
  let stderr = '';
  child.stderr.on('data', (d) => (stderr = (stderr + String(d)).slice(-4000)));
  const send = (msg) => {
    const body = Buffer.from(JSON.stringify({ jsonrpc: '2.0', ...msg }), 'utf8');
    child.stdin.write(`Content-Length: ${body.length}\r\n\r\n`);
    child.stdin.write(body);
  };
  child.stdout.on('data', (d) => {
    buf = Buffer.concat([buf, d]);
    for (;;) {
      const at = buf.indexOf('\r\n\r\n');
      if (at < 0) return;
      const len = Number(/Content-Length: (\d+)/i.exec(buf.subarray(0, at).toString('ascii'))?.[1]);
      if (buf.length < at + 4 + len) return;
      const msg = JSON.parse(buf.subarray(at + 4, at + 4 + len).toString('utf8'));
      buf = buf.subarray(at + 4 + len);
      if (msg.method && msg.id !== undefined) send({ id: msg.id, result: null });
      else if (msg.id !== undefined && pending.has(msg.id)) {
        const { resolve, reject, method } = pending.get(msg.id);
        pending.delete(msg.id);
        if (msg.error) reject(new Error(`${method}: ${JSON.stringify(msg.error)}`));
        else resolve(msg.result);
      }
    }
  });
  child.on('exit', (code) => {
    for (const { reject, method } of pending.values()) reject(new Error(`tether serve exited (${code}) during ${method}: ${stderr}`));
    pending.clear();
  });
  const request = (method, params) =>
    new Promise((resolve, reject) => {
      const id = nextId++;
      pending.set(id, { resolve, reject, method });
      send({ id, method, params });
    });
  // Once, however often it is called (a test's own close and its cleanup after a failure).
  let closing;
  const close = () =>
    (closing ??= (async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      await request('shutdown', null).catch(() => undefined);
      send({ method: 'exit' });
      child.stdin.end();
      for (let i = 0; i < 50 && child.exitCode === null; i++) await sleep(100);
      if (child.exitCode === null) child.kill('SIGKILL');
    })());
  return { request, notify: (method, params) => send({ method, params }), close };
}

/**
 * The session view's content frame (code-server draws a webview as an iframe holding an
 * `#active-frame` iframe); waits until its conversation list exists.
 */
export async function sessionViewFrame(page, timeout = 60_000) {
  const deadline = Date.now() + timeout;
  while (Date.now() < deadline) {
    for (const frame of page.frames()) {
      if (frame === page.mainFrame()) continue;
      const found = await frame.$('#items').catch(() => null);
      if (found) return frame;
    }
    await sleep(200);
  }
  throw new Error('the Tether session view did not appear');
}

/**
 * Runs `tether daemon <args>` (e.g. `status --json`, `stop`) in `env` (a code-server's, so
 * the same XDG_RUNTIME_DIR and the same daemon). Returns `{status, stdout, stderr}`.
 */
export function daemonCli(args, env) {
  const r = spawnSync(tetherBin, ['daemon', ...args], { env, encoding: 'utf8', timeout: 60_000 });
  return { status: r.status, stdout: r.stdout ?? '', stderr: r.stderr ?? '' };
}

/** Whether process `pid` still exists (and is not a zombie). */
export function alive(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^\d+ \(.*\) Z /.test(stat);
  } catch {
    return false;
  }
}

/** Waits until none of `pids` is alive; returns the ones still alive after `timeout` ms. */
export async function waitGone(pids, timeout = 60_000) {
  const deadline = Date.now() + timeout;
  let left = pids.filter(alive);
  while (left.length > 0 && Date.now() < deadline) {
    await sleep(100);
    left = left.filter(alive);
  }
  return left;
}
