// End-to-end tests of the packaged extension in a real VS Code (code-server 4.100.3) with the
// real `tether serve` and the scripted failing agent. Run by `npm run test:e2e` (which packages
// the .vsix first). Prerequisites: scripts/install-e2e.sh; TETHER_BIN (default
// <repo>/target/debug/tether) and TETHER_SCRIPTED_AGENT (default
// <repo>/target/debug/tether-scripted-agent). A missing one fails the test, naming it.
// Screenshots go to editors/vscode/test-artifacts/ (gitignored).
// Functions passed to page.evaluate run in the browser, with its globals.
/* global document, window, requestAnimationFrame, performance, MessageEvent, MutationObserver */
import { strict as assert } from 'node:assert';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import {
  alive,
  daemonCli,
  findLog,
  findLogs,
  lspClient,
  notificationTexts,
  sessionViewFrame,
  lastSeenTexts,
  pidsWithArg,
  openBrowser,
  probeServer,
  quickInput,
  recordTexts,
  requireExecutable,
  repoRoot,
  requireHarness,
  restOnToast,
  runCommand,
  scriptedAgentBin,
  screenshot,
  startCodeServer,
  statusItem,
  tetherBin,
  textMark,
  waitForDialog,
  waitForNotification,
  waitForSeen,
  waitForStatus,
  waitGone,
} from './harness.mjs';


/**
 * The faults of the recovery test's scripted agent (see `scriptedAgent`), which starts new
 * sessions fine. Its first `session/load` answers
 * Claude's rate-limit error with "Please retry in 2.0s" (Tether waits 2 s and resumes); every
 * later `session/load` and `session/resume` answers the error a TypeScript agent gives for a
 * refused connection (-32603 "Internal error" with the cause in `data.details`: R-CLASS-2),
 * which Tether classifies as retryable, so each round makes all its attempts, then asks.
 */
function failingFaults() {
  const rateLimited = {
    kind: 'error',
    code: -32603,
    message: 'Internal error',
    data: {
      details:
        'API Error: 429 {"type":"error","error":{"type":"rate_limit_error","message":"Rate limited. Please retry in 2.0s"}}',
    },
  };
  const refused = {
    kind: 'error',
    code: -32603,
    message: 'Internal error',
    data: { details: 'connect ECONNREFUSED 127.0.0.1:443' },
  };
  return [
    { method: 'session/load', calls: [1], action: rateLimited },
    { method: 'session/load', calls: [], action: refused },
    { method: 'session/resume', calls: [], action: refused },
  ];
}

const cleanups = [];
after(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

function tempDir(name) {
  const d = mkdtempSync(path.join(tmpdir(), `tether-e2e-${name}-`));
  cleanups.push(async () => rmSync(d, { recursive: true, force: true }));
  return d;
}

/** Waits until `selector` (the last match) is inside the session view's scrolled conversation. */
async function waitInView(view, selector, timeout = 30_000) {
  await view.waitForFunction(
    (sel) => {
      const all = document.querySelectorAll(sel);
      const el = all[all.length - 1];
      if (!el) return false;
      const box = el.getBoundingClientRect();
      const area = document.getElementById('log').getBoundingClientRect();
      return box.bottom <= area.bottom + 1 && box.bottom > area.top;
    },
    selector,
    { timeout },
  ).catch(async (err) => {
    const geometry = await view.evaluate((sel) => {
      const all = document.querySelectorAll(sel);
      const box = all[all.length - 1]?.getBoundingClientRect();
      const log = document.getElementById('log');
      const area = log.getBoundingClientRect();
      return { sel, box: box && [box.top, box.bottom], area: [area.top, area.bottom], scrollTop: log.scrollTop, scrollHeight: log.scrollHeight, clientHeight: log.clientHeight };
    }, selector);
    throw new Error(`${selector} is not in view: ${JSON.stringify(geometry)}`, { cause: err });
  });
}

/** The code-server and page of the test running now, for the failure diagnostics. */
let current;

/**
 * Wheels the session view up until it asks for older turns (the #older line says it is
 * loading) or already shows `want` saved turns, then waits for those turns to be drawn.
 */
async function scrollUpForOlder(page, view, want) {
  const shown = 'document.querySelectorAll(".turn.restored.user, .turn.restored.agent").length';
  for (let i = 0; i < 60; i++) {
    if ((await view.evaluate(shown)) >= want) break;
    if ((await view.locator('#older[data-state="loading"]').count()) > 0) break;
    await page.mouse.wheel(0, -5000);
  }
  await view.waitForFunction((n) => document.querySelectorAll('.turn.restored.user, .turn.restored.agent').length >= n, want, {
    timeout: 60_000,
  });
}

async function launch(name, settings, workspace = tempDir(`${name}-ws`), env = {}) {
  const cs = await startCodeServer({ name, settings, workspace, env });
  cleanups.push(cs.stop);
  const { browser, page } = await openBrowser(cs.folderUrl);
  cleanups.push(() => browser.close());
  current = { name, cs, page };
  return { cs, page, workspace };
}

/**
 * A test that, when it fails, leaves what is needed to see why: a screenshot
 * `FAILED-<name>.png` and the tails of the extension's and the server's logs in the output.
 */
/** Fails naming what is missing when the tether server or the scripted agent is not built. */
function requireServerAndAgent() {
  requireExecutable(tetherBin, 'the tether server (env TETHER_BIN)', 'build it with `cargo build -p tether --bin tether`, or point TETHER_BIN at it');
  requireExecutable(
    scriptedAgentBin,
    'the scripted agent (env TETHER_SCRIPTED_AGENT)',
    'build it with `cargo build -p tether-host --bin tether-scripted-agent`, or point TETHER_SCRIPTED_AGENT at it',
  );
}

/**
 * A folder of its own for a scripted agent, and its script there (crates/tether-host
 * `Script`): it advertises `loadSession` and `resume`, keeps its state in the folder, and
 * `fields` (`faults`, `reply`) say what else it does.
 */
function scriptedAgent(name, fields = {}) {
  const agentDir = tempDir(name);
  const script = path.join(agentDir, 'script.json');
  writeFileSync(script, JSON.stringify({ loadSession: true, resume: true, stateDir: path.join(agentDir, 'state'), faults: [], ...fields }, null, 2));
  return { agentDir, script };
}

/**
 * A scripted agent whose first prompt streams `total` numbered chunks ("1\n", "2\n", …) at
 * `rate` a second, then replies "the end" (no digits): its script and folder. With
 * `holdAfter`, the stream pauses once that many chunks are sent until `release()` is called
 * (the scripted agent's `hold`, which gives up after 120 s): the turn outlasts whatever the
 * test does meanwhile however slow the machine, and ends as soon as the test lets it.
 */
function streamingAgent(name, total, rate, holdAfter) {
  const until = path.join(tempDir(`${name}-gate`), 'release');
  const hold = holdAfter === undefined ? {} : { hold: { after: holdAfter, until } };
  const agent = scriptedAgent(name, {
    reply: 'the end',
    faults: [{ method: 'session/prompt', calls: [1], action: { kind: 'stream', count: total, perSecond: rate, ...hold } }],
  });
  return { ...agent, release: () => writeFileSync(until, '') };
}

/**
 * Waits until `read()` (a log's text) matches `re`, reading it again every 100 ms, for at most
 * `timeout` ms; returns the text, and the error gives the text last read.
 *
 * A log line is in the file only some time after what it records happened: VS Code's
 * extension host writes an extension's log channel from a background thread (spdlog's
 * asynchronous logger), and the Rust server's log is written asynchronously too, so the view
 * or the status bar can show an event before its line is in the file, the more so on a
 * loaded machine. A test that has seen an event on screen therefore waits for its log line;
 * it never reads the log once and expects it there.
 */
async function waitForText(what, read, re, timeout = 60_000) {
  const deadline = Date.now() + timeout;
  let text = read();
  while (!re.test(text)) {
    if (Date.now() > deadline) throw new Error(`${what}: ${re} never appeared in:\n${text}`);
    await new Promise((r) => setTimeout(r, 100));
    text = read();
  }
  return text;
}

/** Offset just past each of `order` matched in turn in `text`, or where the first missing one failed. */
function inOrder(text, order) {
  let at = 0;
  for (const re of order) {
    const m = re.exec(text.slice(at));
    if (!m) return { missing: re, at };
    at += m.index + m[0].length;
  }
  return { missing: undefined, at };
}

/**
 * Waits until `read()` (a log's text) holds every one of `order`, in that order (see
 * `waitForText`); returns the text. The error names the first one missing.
 */
async function waitForOrder(what, read, order, timeout = 60_000) {
  const deadline = Date.now() + timeout;
  let text = read();
  for (;;) {
    const { missing, at } = inOrder(text, order);
    if (!missing) return text;
    if (Date.now() > deadline) throw new Error(`${what}: lacks ${missing} after offset ${at}:\n${text}`);
    await new Promise((r) => setTimeout(r, 100));
    text = read();
  }
}

/**
 * code-server with the extension running `script`'s agent through a daemon: no
 * TETHER_REMOTE=off, so `tether serve --stdio` forwards to a daemon in this code-server's own
 * XDG_RUNTIME_DIR (the harness's private folder), started by the first forwarder. Whatever
 * happens, code-server goes first at cleanup (else languageclient would restart the
 * forwarder, which would start a new daemon), then the daemon is stopped.
 */
async function launchWithDaemon(name, script) {
  const launched = await launch(
    name,
    {
      'tether.serverPath': tetherBin,
      'tether.persistence.directory': tempDir(`storage-${name}`),
      'tether.agent.name': 'scripted',
      'tether.agent.command': scriptedAgentBin,
      'tether.agent.args': [script],
    },
    undefined,
    { TETHER_REMOTE: undefined },
  );
  const daemonEnv = launched.cs.env;
  cleanups.push(async () => {
    await launched.cs.kill();
    daemonCli(['stop'], daemonEnv);
  });
  const status = () => {
    const r = daemonCli(['status', '--json'], daemonEnv);
    assert.equal(r.status, 0, `tether daemon status: ${r.stderr}`);
    return JSON.parse(r.stdout);
  };
  return { ...launched, daemonEnv, status };
}

/** The numbers of the streamed chunks the view draws, in order. */
function numbersShown(frame) {
  return frame.evaluate(() =>
    [...document.querySelectorAll('#items .turn.agent .md')].flatMap((el) => (el.textContent ?? '').match(/\d+/g) ?? []).map(Number),
  );
}

/** Waits until the view draws at least 20 streamed chunks: the turn is under way. */
function streaming(view) {
  return view.waitForFunction(
    () => ((document.querySelector('#items .turn.agent .md')?.textContent ?? '').match(/\d+/g) ?? []).length >= 20,
    undefined,
    { timeout: 60_000 },
  );
}

/**
 * Waits until the view draws chunk `total` and the reply, then the turn's end opens the
 * prompt box; on a timeout the error lists what the view shows.
 */
async function streamEnded(view, total) {
  await view
    .waitForFunction(
      (n) => new RegExp(`(^|\\D)${n}\\s+the end\\s*$`).test([...document.querySelectorAll('#items .turn.agent .md')].at(-1)?.textContent ?? ''),
      total,
      { timeout: 120_000 },
    )
    .catch(async (err) => {
      const tail = await view.evaluate(() => [...document.querySelectorAll('#items .turn')].map((el) => `${el.className}: …${(el.textContent ?? '').slice(-80)}`));
      throw new Error(`the turn's end never reached the view; items: ${JSON.stringify(tail)}`, { cause: err });
    });
  await view.locator('#send:not([disabled])').waitFor({ timeout: 30_000 });
  assert.equal(await view.locator('#cancel').isDisabled(), true, 'no turn runs any more');
}

/** The view shows the prompt `prompt` once and chunks 1..`total` exactly once, in order. */
async function assertStreamedOnce(view, prompt, total) {
  const users = await view.locator('#items .turn.user').allTextContents();
  assert.deepEqual(users.map((t) => t.replace(/^You/, '').trim()), [prompt], 'the prompt once');
  const shown = await numbersShown(view);
  const expected = Array.from({ length: total }, (_, i) => i + 1);
  const firstBad = shown.findIndex((n, i) => n !== expected[i]);
  assert.ok(
    shown.length === total && firstBad === -1,
    `chunks 1..${total} exactly once, in order: got ${shown.length}, first difference at index ${firstBad} (${shown.slice(Math.max(0, firstBad - 3), firstBad + 3)})`,
  );
}

/**
 * Stops everything of a daemon run: code-server (its forwarder detaches), then the daemon;
 * then nothing of the run is left: `pids`, code-server's processes, the agent's.
 */
async function stopDaemonRun(page, cs, daemonEnv, agentDir, pids) {
  await page.context().browser()?.close();
  await cs.kill();
  const stopped = daemonCli(['stop'], daemonEnv);
  assert.equal(stopped.status, 0, `tether daemon stop: ${stopped.stdout}${stopped.stderr}`);
  const left = await waitGone([...pids, ...pidsWithArg(`${cs.root}/`), ...pidsWithArg(agentDir)]);
  assert.deepEqual(left, [], `processes of this run still alive: ${left.map((p) => `${p}: ${readFileSync(`/proc/${p}/cmdline`, 'utf8').replace(/\0/g, ' ')}`)}`);
  assert.equal(daemonCli(['status'], daemonEnv).status, 1, 'no daemon answers any more');
}

/**
 * Each test's own budget: it bounds a hang, never a wait. (A `describe` budget covers the sum
 * of its tests, which grows with the machine's load: beside two CPU-bound processes the first
 * suite took 229 s and 251 s of its 300 s, and a test still running when a suite's budget ran
 * out was cancelled, and every test after it.)
 */
const TEST_BUDGET_MS = 240_000;

function e2e(title, fn) {
  it(title, { timeout: TEST_BUDGET_MS }, async () => {
    current = undefined;
    try {
      await fn();
    } catch (err) {
      if (current) {
        const { name, cs, page } = current;
        const shot = await screenshot(page, `FAILED-${name}`).catch((e) => `no screenshot: ${e}`);
        const tail = (file) => (file ? readFileSync(file, 'utf8').split('\n').slice(-60).join('\n') : '(none)');
        console.log(`--- ${title} failed; screenshot ${shot}`);
        console.log(`--- Tether.log (last 60 lines)\n${tail(findLogs(cs.dirs.userData, 'Tether.log').at(-1))}`);
        console.log(`--- tether-serve.log (last 60 lines)\n${tail(findLogs(cs.dirs.userData, 'tether-serve.log').at(-1))}`);
        console.log(`--- the status item's, notifications' and dialogs' last texts\n${lastSeenTexts(20)}`);
      }
      throw err;
    }
  });
}

describe('Tether in a real VS Code (code-server 4.100.3)', () => {
  e2e('installs from the .vsix, activates on start-up, shows its status item and its logs', async () => {
    await requireHarness();
    const { cs, page } = await launch('activate', {
      'tether.server.path': tetherBin,
      'tether.resumeOnStartup': false,
    });
    // The status bar item exists whatever the server's state: activation happened.
    const item = statusItem(page);
    await item.waitFor({ timeout: 60_000 });
    const text = await waitForStatus(page, /Tether/);
    await runCommand(page, 'Tether: Show Logs');
    // The Output panel opens on the extension's channel.
    const channel = page.locator('.part.panel select.monaco-select-box').first();
    await channel.waitFor({ timeout: 20_000 });
    assert.equal(await channel.inputValue(), 'Tether');
    await page.locator('.part.panel .view-lines').first().waitFor({ timeout: 20_000 });
    const shot = await screenshot(page, '01-activated');
    // The channel's log file, written by the extension host, holds the activation lines.
    const logFile = findLog(cs.dirs.userData, 'Tether.log');
    assert.ok(logFile, 'Tether.log exists under the extension host logs');
    const lines = readFileSync(logFile, 'utf8');
    assert.match(lines, /Tether 0\.1\.0 activating \(VS Code 1\.100\.3\)/);
    // Either the server started, or the extension said exactly why not.
    assert.match(lines, /server: .*tether \(from setting\)|tether\.server\.path is ".*", which is not an executable file/);
    // Set by its new name: no deprecation note.
    assert.doesNotMatch(lines, /is deprecated/);
    console.log(`status item: "${text.trim()}"; screenshot ${shot}`);
  });

  e2e('opening a folder with no Tether history starts no agent and shows no error; the first prompt starts the session (R-RESUME-11)', async () => {
    await requireHarness();
    requireServerAndAgent();
    const { agentDir, script } = scriptedAgent('agent-none', { reply: 'hello from the first session' });
    const stateDir = path.join(agentDir, 'state');
    // The new names: several agents (the built-in claude stays, the scripted one is the default).
    const { cs, page } = await launch('no-history', {
      'tether.server.path': tetherBin,
      'tether.persistence.directory': tempDir('storage-none'),
      'tether.agents': { scripted: { command: scriptedAgentBin, args: [script] } },
      'tether.defaultAgent': 'scripted',
      'tether.resumeOnStartup': true,
    });
    const extLog = () => readFileSync(findLog(cs.dirs.userData, 'Tether.log') ?? '/dev/null', 'utf8');
    // Both agents go to the server, which accepts them (initialize succeeded).
    await waitForText('the initializationOptions', extLog, /initializationOptions: .*"agents":\{"claude":\{"command":"claude-agent-acp".*"scripted":\{"command":"[^"]*tether-scripted-agent","args":\[.*"defaultAgent":"scripted"/, 60_000);
    assert.doesNotMatch(extLog(), /is deprecated/);

    // 1. The start-up resume asks with create: false and the server has nothing to resume.
    await waitForText('the start-up resume', extLog, /result: nothingToResume session=null /, 60_000);
    assert.match(extLog(), /session\/resume \S+ create=false\n/, 'the start-up resume sent create: false');
    await waitForStatus(page, /^\s*Tether\s*$/, 30_000);
    const serverLog = () => readFileSync(findLogs(cs.dirs.userData, 'tether-serve.log').at(-1) ?? '/dev/null', 'utf8');
    await waitForText('the server log', serverLog, /nothing to resume in .*no session started \(create: false\)/, 30_000);

    // 2. No agent ran: no process of the scripted agent, and no state folder (it makes one
    //    when it starts); no error anywhere on screen, no session view opened.
    assert.deepEqual(pidsWithArg(script), [], 'no agent process');
    assert.equal(existsSync(stateDir), false, `the scripted agent never started (${stateDir})`);
    assert.deepEqual((await notificationTexts(page)).filter((t) => /Tether|agent|error|fail/i.test(t)), [], 'no notification of Tether, no error');
    // claude-agent-acp is configured (the built-in agent, in the initializationOptions line) but never started.
    assert.doesNotMatch(extLog().replace(/^.*initializationOptions: .*$/m, ''), /result: (started|failed)|resume failed|claude-agent-acp/);
    assert.equal(await page.locator('.monaco-dialog-box').count(), 0, 'no dialog');
    await screenshot(page, '24-no-history-idle');

    // 3. The session view, opened by the user, says how to start a session; Send is open.
    await runCommand(page, 'Tether: Open Session');
    const view = await sessionViewFrame(page, 60_000);
    await view.locator('#status', { hasText: 'No session yet. Send a prompt to start one' }).waitFor({ timeout: 30_000 });
    await view.locator('#send:not([disabled])').waitFor({ timeout: 30_000 });
    assert.deepEqual(pidsWithArg(script), [], 'still no agent process');

    // 4. The first prompt starts the session (session/resume without create: false), then
    //    runs its turn; the agent's answer reaches the view.
    await view.locator('#prompt').fill('hello');
    await view.locator('#prompt').press('Enter');
    await view.locator('.turn.agent', { hasText: 'hello from the first session' }).waitFor({ timeout: 60_000 });
    await view.locator('#status', { hasText: 'Session is live' }).waitFor({ timeout: 30_000 });
    await screenshot(page, '25-no-history-first-prompt');
    // The answer is drawn before the prompt's end reaches the log (see waitForText).
    await waitForOrder('Tether.log', extLog, [
      /result: nothingToResume session=null /,
      /session\/prompt: no session is live; resuming/,
      /session\/resume \S+\n/,
      /result: started session=(\S+) /,
      /session\/prompt \S+ \(5 characters\)/,
      /session\/prompt ended: end_turn/,
    ]);
    assert.equal(pidsWithArg(script).length, 1, 'one agent process, started by the prompt');
    assert.equal(existsSync(stateDir), true, 'the scripted agent ran');
    assert.deepEqual((await notificationTexts(page)).filter((t) => /Tether|error|failed/i.test(t)), [], 'no error shown');
  });

  e2e('shows the recovery modal; "Try Again" and "Start New Session" reach the server', async () => {
    await requireHarness();
    requireServerAndAgent();
    const init = await probeServer(tetherBin);
    assert.equal(init?.capabilities?.experimental?.tether?.protocolVersion, 1, 'initialize advertises protocolVersion 1');

    const storage = tempDir('storage');
    const { script } = scriptedAgent('agent', { faults: failingFaults() });
    const { cs, page } = await launch('recovery', {
      'tether.serverPath': tetherBin,
      'tether.persistence.directory': storage,
      'tether.agent.name': 'scripted',
      'tether.agent.command': scriptedAgentBin,
      'tether.agent.args': [script],
      'tether.resumeOnStartup': true,
    });

    // 1. Start-up resume: nothing cached for this workspace, so nothing is resumed and no
    //    agent starts (R-RESUME-11); the user starts a session with "Tether: Resume Session".
    const firstLog = () => readFileSync(findLog(cs.dirs.userData, 'Tether.log') ?? '/dev/null', 'utf8');
    await waitForText('the start-up resume', firstLog, /result: nothingToResume /, 60_000);
    // The old setting names still work; the log names each one's new key.
    for (const note of [
      'tether.serverPath is deprecated: use tether.server.path',
      'tether.agent.name is deprecated: use tether.defaultAgent',
      'tether.agent.command is deprecated: use tether.agents.scripted.command',
      'tether.agent.args is deprecated: use tether.agents.scripted.args',
    ]) {
      assert.ok(firstLog().includes(note), `Tether.log says "${note}"`);
    }
    await runCommand(page, 'Tether: Resume Session');
    await waitForText('Tether: Resume Session', firstLog, /result: started /, 60_000);
    await waitForStatus(page, /^\s*Tether\s*$/, 60_000);

    // 2. Reload the window: the extension host terminates (the extension deactivates and
    //    persists with trigger shutdown; tether serve exits and stops its agent), a new one
    //    starts, and its start-up resume finds the cached session. The new agent process
    //    refuses every load: three attempts (progress texts), then the modal.
    const { result: dialog, seen } = await recordTexts(page, async () => {
      const mark = textMark();
      await runCommand(page, 'Developer: Reload Window');
      // Attempt 2 lasts as long as its failure and one back-off (about 2 s): it is waited for
      // in the record of what the status item showed, not by looking at the item now and then.
      await waitForSeen(/Resuming… attempt 2 of 3/, { kind: 'status', since: mark, timeout: 90_000 });
      await screenshot(page, '02-resume-progress');
      return waitForDialog(page, 90_000);
    });
    // While the choice is outstanding the status item says so (even when the round's
    // `failed` status arrives after the result).
    await waitForStatus(page, /Tether: choose how to recover/, 30_000);
    // The session view came back with the reloaded window: the saved (empty) transcript,
    // marked stale, and the outstanding choice as its status.
    //    (The restored view's script can take many seconds to run on a loaded 2-core machine.)
    const view = await sessionViewFrame(page, 60_000);
    await view.locator('#stale').waitFor({ state: 'visible', timeout: 60_000 });
    await view.locator('#status', { hasText: 'choose Try Again or Start New Session' }).waitFor({ timeout: 30_000 });
    const shot = await screenshot(page, '03-recovery-dialog');
    console.log(`dialog: ${JSON.stringify({ message: dialog.message, detail: dialog.detail, buttons: dialog.buttons })}; ${shot}`);
    const texts = [...seen].join('\n');
    assert.match(texts, /Rate limited, resuming in 2 s/, `texts seen: ${texts}`);
    assert.match(texts, /Resuming… attempt 1 of 3/, `texts seen: ${texts}`);
    assert.match(texts, /Resuming… attempt 3 of 3/, `texts seen: ${texts}`);
    assert.match(texts, /Tether: Stale transcript\. /, `the stale-transcript banner was shown; texts: ${texts}`);
    assert.match(dialog.message, /^(Previous session not found|Cannot connect to .+|Failed to resume session)$/);
    assert.match(dialog.detail, /3/, 'the detail states the attempt count');
    assert.ok(dialog.buttons.includes('Try Again'), `buttons: ${dialog.buttons}`);
    assert.ok(dialog.buttons.includes('Start New Session'), `buttons: ${dialog.buttons}`);

    // The first extension host's deactivation recorded the shutdown persist and its answer
    // (synchronously: its output channel may lose its last lines at exit).
    const shutdownLog = findLogs(cs.dirs.userData, 'tether-shutdown.log')[0];
    assert.ok(shutdownLog, 'deactivation wrote tether-shutdown.log');
    const shutdownLine = readFileSync(shutdownLog, 'utf8').trim().split('\n')[0];
    const record = JSON.parse(shutdownLine);
    assert.equal(record.sent, true, shutdownLine);
    assert.equal(record.trigger, 'shutdown', shutdownLine);
    assert.equal(record.result?.saved, true, `the server saved the shutdown snapshot: ${shutdownLine}`);
    console.log(`shutdown record: ${shutdownLine}`);

    // 3. Dismissing the modal is no choice: nothing is sent, a notification offers the
    //    dialog again, and its "Show Options" reopens the same dialog.
    await dialog.box.getByRole('button', { name: 'Cancel' }).click();
    await dialog.box.waitFor({ state: 'hidden', timeout: 30_000 });
    const reoffer = await waitForNotification(page, /The session is waiting for your choice/, 30_000);
    // The toast once it has slid in, the mouse on it so that VS Code keeps it.
    const toast = await restOnToast(page, 'The session is waiting for your choice');
    const showOptions = toast.getByRole('button', { name: 'Show Options' });
    await showOptions.waitFor({ timeout: 30_000 });
    await screenshot(page, '04-dismissed-reoffer');
    await showOptions.click();
    const again = await waitForDialog(page, 30_000);
    assert.equal(again.message, dialog.message, `the same dialog is offered again after: ${reoffer}`);

    // 4. "Try Again": the server half-opens the breaker and runs another round, which fails
    //    again and asks again (a new round of progress, a second modal).
    const retry = await recordTexts(page, async () => {
      await again.box.getByRole('button', { name: 'Try Again' }).click();
      await again.box.waitFor({ state: 'hidden', timeout: 30_000 });
      return waitForDialog(page, 90_000);
    });
    assert.match([...retry.seen].join('\n'), /Resuming… attempt 1 of 3/, 'a new round of attempts ran');
    await screenshot(page, '05-recovery-dialog-after-retry');

    // 5. "Start New Session": the server starts a fresh session, archives the old cache and
    //    sends session/expired, shown as an information message; the status turns live.
    const fresh = await recordTexts(page, async () => {
      const mark = textMark();
      await retry.result.box.getByRole('button', { name: 'Start New Session' }).click();
      const notice = await waitForSeen(/has ended; started new session/, { kind: 'notification', since: mark, timeout: 60_000 });
      await waitForStatus(page, /^\s*Tether\s*$/, 60_000);
      return notice;
    });
    // The replaced session's banners ended with it: the banner indicator is gone, and so is
    // the stale-transcript notification.
    await page.locator('[id$=".tether.banners"]').waitFor({ state: 'hidden', timeout: 30_000 });
    await page
      .locator('.notification-list-item-message', { hasText: 'Stale transcript' })
      .waitFor({ state: 'detached', timeout: 30_000 });
    // The view shows the new, empty session, live.
    const fresh2 = await sessionViewFrame(page, 30_000);
    await fresh2.locator('#status', { hasText: 'Session is live' }).waitFor({ timeout: 30_000 });
    await fresh2.locator('#stale').waitFor({ state: 'hidden', timeout: 30_000 });
    await screenshot(page, '06-new-session');
    console.log(`expired notice: ${fresh.result}`);

    // 6. What the client sent and what the server answered, in order (the log of the
    //    extension host now running), and the server's own log file.
    await waitForOrder('Tether.log', () => readFileSync(findLogs(cs.dirs.userData, 'Tether.log').at(-1), 'utf8'), [
      /result: needsChoice .*userRetries=0/,
      /recovery dialog dismissed: no choice sent/,
      /session\/recoveryChoice retry for /,
      /result: needsChoice .*userRetries=1/,
      /session\/recoveryChoice new for /,
      /expired: /,
      /result: started /,
    ]);
    const serverLogs = findLogs(cs.dirs.userData, 'tether-serve.log');
    assert.equal(serverLogs.length, 2, `one tether serve log per extension host: ${serverLogs}`);
    const serverLog = () => readFileSync(serverLogs[1], 'utf8');
    // What the server logged (the capability, the retry choice, the new-session choice).
    await waitForText('the capability in tether-serve.log', serverLog, /recovery_dialog: true|recoveryDialog"?: ?true/, 30_000);
    await waitForText('the retry choice in tether-serve.log', serverLog, /Try Again/, 30_000);
    await waitForText('the new-session choice in tether-serve.log', serverLog, /Start New Session/, 30_000);

    // 7. "Tether: Clear Saved Session" asks first, then the server removes the workspace's
    //    cached sessions and the extension says how many.
    await runCommand(page, 'Tether: Clear Saved Session');
    const confirm = await waitForDialog(page, 30_000);
    assert.equal(confirm.message, 'Clear the saved Tether session of this workspace?');
    const clearMark = textMark();
    await confirm.box.getByRole('button', { name: 'Clear' }).click();
    const cleared = await waitForSeen(/^Tether: removed \d+ saved sessions?\.$/, { kind: 'notification', since: clearMark });
    assert.doesNotMatch(cleared, /removed 0 /, `the server removed the cached sessions: ${cleared}`);
    await screenshot(page, '07-cleared');
    console.log(`clear: ${cleared}`);
  });

  e2e('restarts a crashed server and resumes the session again', async () => {
    await requireHarness();
    requireServerAndAgent();
    const { script } = scriptedAgent('agent-ok');
    const { cs, page } = await launch('crash', {
      'tether.serverPath': tetherBin,
      'tether.persistence.directory': tempDir('storage-crash'),
      'tether.agent.name': 'scripted',
      'tether.agent.command': scriptedAgentBin,
      'tether.agent.args': [script],
    });
    // The start-up resume finds nothing to resume (R-RESUME-11); "Tether: Resume Session"
    // starts the session, which has its answer before the crash.
    const firstLog = () => readFileSync(findLog(cs.dirs.userData, 'Tether.log') ?? '/dev/null', 'utf8');
    await waitForText('the start-up resume', firstLog, /result: nothingToResume /, 60_000);
    await runCommand(page, 'Tether: Resume Session');
    await waitForText('Tether: Resume Session', firstLog, /result: started session=sess-1 /, 60_000);
    await waitForStatus(page, /^\s*Tether\s*$/, 60_000);
    // Only this run's server: its --log-file lies under this code-server's own temp folder.
    const pids = pidsWithArg(`${cs.root}/`).filter((pid) => {
      const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      return args.includes('serve') && args.includes('--log-file');
    });
    assert.equal(pids.length, 1, `one tether serve of this run: ${pids}`);
    process.kill(pids[0], 'SIGKILL');
    // vscode-languageclient restarts it; the extension resumes the cached session, which the
    // agent takes back (session/load), and the status is live again.
    await waitForText(
      'the restarted server',
      () => readFileSync(findLogs(cs.dirs.userData, 'Tether.log').at(-1), 'utf8'),
      /tether serve restarted[\s\S]*result: resumed session=sess-1 /,
      60_000,
    );
    await waitForStatus(page, /^\s*Tether\s*$/, 30_000);
    const after = pidsWithArg(`${cs.root}/`).filter((pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes('serve'));
    assert.equal(after.length, 1, 'one new tether serve runs');
    assert.notEqual(after[0], pids[0]);
    // The resume's progress notification and the stale-transcript notice close once the
    // session is live again.
    for (const text of ['Resuming…', 'Stale transcript']) {
      await page.locator('.notification-list-item-message', { hasText: text }).waitFor({ state: 'detached', timeout: 30_000 });
    }
    await screenshot(page, '08-after-server-crash');
  });

  e2e("asks the agent's permission question as a quick pick and answers it", async () => {
    await requireHarness();
    requireServerAndAgent();
    // Every prompt asks session/request_permission (options Allow / Reject) and replies
    // "permission: <optionId>", or ends the turn cancelled when the answer is cancelled.
    const { script } = scriptedAgent('agent-perm', { faults: [{ method: 'session/prompt', calls: [], action: { kind: 'permission' } }] });
    const { cs, page } = await launch('permission', {
      'tether.serverPath': tetherBin,
      'tether.persistence.directory': tempDir('storage-perm'),
      'tether.agent.name': 'scripted',
      'tether.agent.command': scriptedAgentBin,
      'tether.agent.args': [script],
    });
    // Nothing to resume at start-up (R-RESUME-11): the first prompt starts the session.
    await waitForText('the start-up resume', () => readFileSync(findLog(cs.dirs.userData, 'Tether.log') ?? '/dev/null', 'utf8'), /result: nothingToResume /, 60_000);

    const ask = async (prompt) => {
      await runCommand(page, 'Tether: Send Prompt');
      // The input box by its title (the palette that ran the command holds the same words).
      const box = quickInput(page, 'Tether: Send Prompt');
      await box.waitFor({ timeout: 30_000 });
      await box.locator('input').fill(prompt);
      await box.locator('input').press('Enter');
      const pick = quickInput(page, 'Tether: the agent asks for permission');
      await pick.waitFor({ timeout: 30_000 });
      return pick;
    };

    // Pick "Reject": the agent gets that option id and says so.
    const pick = await ask('run the tests');
    await pick.locator('.quick-input-list .monaco-list-row').nth(1).waitFor({ timeout: 30_000 });
    const rows = (await pick.locator('.quick-input-list .monaco-list-row .label-name').allTextContents()).map((t) => t.trim());
    assert.deepEqual(rows, ['Allow', 'Reject'], "the agent's options, in its order");
    // The request names no title; the agent reported the tool call as "Edit file" just before.
    assert.equal(await pick.locator('input').getAttribute('placeholder'), 'Allow "Edit file"? (Escape cancels)');
    await screenshot(page, '09-permission-pick');
    await pick.locator('.quick-input-list .monaco-list-row', { hasText: 'Reject' }).click();
    // The answer streams into the session view, which the command opened.
    const view = await sessionViewFrame(page, 60_000);
    await view.locator('.turn.agent', { hasText: 'permission: reject' }).waitFor({ timeout: 30_000 });
    await view.locator('#permission').waitFor({ state: 'hidden', timeout: 30_000 });

    // Escape: the answer is cancelled and the agent ends the turn cancelled.
    const again = await ask('run the tests again');
    await again.locator('input').press('Escape');
    await view.locator('.turn.status', { hasText: 'Turn cancelled.' }).waitFor({ timeout: 30_000 });
    await screenshot(page, '10-permission-cancelled');
  });
  e2e('Developer: Reload Window mid-turn through the daemon: re-attached, the rest of the turn and its end arrive, same agent process', async () => {
    await requireHarness();
    requireServerAndAgent();
    // The first prompt streams TOTAL numbered chunks at RATE a second, so chunks flow while
    // the window reloads; it holds at HOLD until the reloaded window has re-attached, so the
    // turn outlasts the reload however slow the machine.
    const TOTAL = 600;
    const RATE = 50;
    const HOLD = 550;
    const { agentDir, script, release } = streamingAgent('agent-daemon', TOTAL, RATE, HOLD);
    const { cs, page, daemonEnv, status } = await launchWithDaemon('daemon-reload', script);
    let daemonPid;
    const agentPids = () => pidsWithArg(script);
    const extLogs = () => findLogs(cs.dirs.userData, 'Tether.log').map((f) => readFileSync(f, 'utf8'));

    // 1. Start-up: nothing to resume, no session started (R-RESUME-11). The user opens the
    //    session view, which says how to start one, with Send open.
    await waitForText('the start-up resume', () => extLogs()[0] ?? '', /result: nothingToResume /, 60_000);
    await runCommand(page, 'Tether: Open Session');
    const view = await sessionViewFrame(page, 60_000);
    await view.locator('#status', { hasText: 'No session yet' }).waitFor({ timeout: 30_000 });
    await view.locator('#send:not([disabled])').waitFor({ timeout: 60_000 });

    // 2. The prompt, from the view: it starts a session in the daemon, then the turn streams.
    await view.locator('#prompt').fill('count');
    await view.locator('#prompt').press('Enter');
    await streaming(view);
    const first = await waitForText('the started session', () => extLogs()[0] ?? '', /result: started session=(\S+) /, 30_000);
    const sid = /result: started session=(\S+) /.exec(first)?.[1];
    assert.ok(sid, `the prompt started a session:\n${first}`);
    const running = status();
    daemonPid = running.pid;
    assert.ok(typeof daemonPid === 'number' && alive(daemonPid), `a daemon runs: ${JSON.stringify(running)}`);
    assert.equal(running.sessions.length, 1, JSON.stringify(running));
    assert.equal(running.sessions[0].sessionId, sid);
    assert.equal(running.sessions[0].turnRunning, true, `the turn runs: ${JSON.stringify(running)}`);
    const agentPgid = running.sessions[0].agentPgid;
    const agentsBefore = agentPids();
    assert.equal(agentsBefore.length, 1, `one agent process: ${agentsBefore}`);
    const seenBefore = await numbersShown(view);
    assert.ok(seenBefore.length < TOTAL, 'reloading mid-turn');

    // 3. Reload the window mid-turn: the extension host goes (the forwarder with it; the
    //    daemon keeps the session and its turn), a new one starts and resumes the session.
    const reloaded = page.waitForEvent('framenavigated', { predicate: (f) => f === page.mainFrame(), timeout: 60_000 });
    await runCommand(page, 'Developer: Reload Window');
    await reloaded;
    await page.locator('.monaco-workbench').waitFor({ timeout: 60_000 });
    const view2 = await sessionViewFrame(page, 90_000);
    // Once the new extension host has resumed the session, the rest of the turn: its last
    // chunk and its reply reach the reloaded view, then the turn's end opens the prompt box.
    await waitForText('the reloaded window', () => extLogs()[1] ?? '', new RegExp(`result: resumed session=${sid} `), 90_000);
    release();
    await streamEnded(view2, TOTAL);
    await screenshot(page, '21-daemon-reload-turn-ended');

    // 4. The reloaded view: the prompt once, every chunk exactly once, in order.
    await assertStreamedOnce(view2, 'count', TOTAL);

    // 5. The new extension host re-attached to the same session, live, before the turn
    //    ended, and the turn's end (its stop reason) reached it (drawn before it is logged).
    await waitForText('the turn\'s end', () => extLogs()[1] ?? '', new RegExp(`session/turnEnded ${sid} seq=\\d+: end_turn`), 30_000);
    const logs = extLogs();
    assert.equal(logs.length, 2, 'one Tether.log per extension host');
    const second = logs[1];
    assert.doesNotMatch(second, /no tether server found/, 'the reloaded window found its server at once');
    const resumedAt = second.search(new RegExp(`result: resumed session=${sid} `));
    const endedAt = second.search(new RegExp(`session/turnEnded ${sid} seq=\\d+: end_turn`));
    assert.ok(resumedAt >= 0, `the reloaded window resumed ${sid}:\n${second}`);
    assert.ok(endedAt > resumedAt, `the turn ended after the re-attach (end_turn):\n${second}`);
    // The session the view showed (remembered in workspaceState), by id; the reloaded view
    // has drawn nothing, so no afterSeq: the daemon sends the transcript, then the running turn.
    assert.match(second, new RegExp(`session/resume \\S+ ${sid}\n`), 'the reloaded window resumed its own session, without afterSeq');

    // 6. The same agent process, and no other.
    const after = status();
    assert.equal(after.sessions.length, 1, JSON.stringify(after));
    assert.equal(after.sessions[0].sessionId, sid);
    assert.equal(after.sessions[0].turnRunning, false);
    assert.equal(after.sessions[0].agentPgid, agentPgid, 'the same agent process group');
    assert.equal(after.pid, daemonPid, 'the same daemon');
    assert.deepEqual(agentPids(), agentsBefore, 'the same agent process, and none added');
    console.log(
      `daemon reload: ${seenBefore.length} chunks drawn before the reload, ${TOTAL} after; session ${sid}, agent pid ${agentsBefore[0]}, daemon pid ${daemonPid}`,
    );

    // 7. Stop everything; nothing of this run is left.
    await stopDaemonRun(page, cs, daemonEnv, agentDir, [daemonPid, ...agentsBefore]);
  });
  e2e('the forwarder alone is killed mid-turn: the turn goes on in the daemon, the restarted server re-attaches, every chunk once, no error', async () => {
    await requireHarness();
    requireServerAndAgent();
    // The first prompt streams TOTAL numbered chunks at RATE a second, and holds at HOLD
    // until the restarted server has re-attached: the turn outlasts the language client's
    // restart of the server however slow the machine.
    const TOTAL = 500;
    const RATE = 50;
    const HOLD = 450;
    const { agentDir, script, release } = streamingAgent('agent-fwd', TOTAL, RATE, HOLD);
    const { cs, page, workspace, daemonEnv, status } = await launchWithDaemon('fwd-kill', script);
    const extLog = () => readFileSync(findLogs(cs.dirs.userData, 'Tether.log').at(-1) ?? '/dev/null', 'utf8');
    // This window's forwarders: `tether serve --stdio` with its --log-file under this
    // code-server's temp folder, whose environment names this test's runtime folder.
    const forwarders = (daemonPid) =>
      pidsWithArg(`${cs.root}/`).filter((pid) => {
        if (pid === daemonPid) return false;
        try {
          const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
          const env = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
          return args.includes('serve') && args.includes('--stdio') && env.includes(`XDG_RUNTIME_DIR=${daemonEnv.XDG_RUNTIME_DIR}`);
        } catch {
          return false;
        }
      });

    // 1. Start-up: nothing to resume, no session started (R-RESUME-11).
    await waitForText('the start-up resume', extLog, /result: nothingToResume /, 60_000);
    let view;
    let sid;
    let daemonPid;

    const recorded = await recordTexts(page, async () => {
      // 2. "Tether: Send Prompt" starts a session in the daemon, then the turn streams into
      //    the view (which the command opens).
      await runCommand(page, 'Tether: Send Prompt');
      const box = quickInput(page, 'Tether: Send Prompt');
      await box.waitFor({ timeout: 30_000 });
      await box.locator('input').fill('count');
      await box.locator('input').press('Enter');
      view = await sessionViewFrame(page, 60_000);
      await streaming(view);
      sid = /result: started session=(\S+) /.exec(await waitForText('the started session', extLog, /result: started session=(\S+) /, 30_000))?.[1];
      assert.ok(sid, `the prompt started a session:\n${extLog()}`);
      const running = status();
      daemonPid = running.pid;
      assert.ok(typeof daemonPid === 'number' && alive(daemonPid), `a daemon runs: ${JSON.stringify(running)}`);
      assert.equal(running.sessions[0].turnRunning, true, `the turn runs: ${JSON.stringify(running)}`);
      const agentPgid = running.sessions[0].agentPgid;
      const agentsBefore = pidsWithArg(script);
      assert.equal(agentsBefore.length, 1, `one agent process: ${agentsBefore}`);
      const fwd = forwarders(daemonPid);
      assert.equal(fwd.length, 1, `one forwarder of this window: ${fwd}`);

      // 3. The forwarder alone dies (as the OOM killer would end it): the language client
      //    restarts it; the new one re-attaches after the last event drawn.
      process.kill(fwd[0], 'SIGKILL');
      const drawnAtKill = (await numbersShown(view)).length;
      //    Once it has resumed the session (the window started it, so this is the first
      //    resume in the log), the rest of the turn.
      await waitForText('the restarted server', extLog, new RegExp(`result: resumed session=${sid} `), 90_000);
      release();
      await streamEnded(view, TOTAL);
      await screenshot(page, '22-forwarder-killed-turn-ended');
      return { agentPgid, agentsBefore, fwd: fwd[0], drawnAtKill };
    });
    {
      // 4. The view: the prompt once, every chunk exactly once, in order, no failure.
      await assertStreamedOnce(view, 'count', TOTAL);
      assert.equal(await view.locator('.turn.status').count(), 0, `no status line in the conversation: ${await view.locator('.turn.status').allTextContents()}`);
      const { agentPgid, agentsBefore, fwd, drawnAtKill } = recorded.result;

      // 5. The extension: the lost answer did not end the turn, the restarted server resumed
      //    the session after the last event drawn, and the turn's end came after that.
      const log = await waitForText('the turn\'s end', extLog, new RegExp(`session/turnEnded ${sid} seq=\\d+: end_turn`), 30_000);
      const lostAt = log.search(new RegExp(`session/prompt ${sid}: the connection was lost \\(.*\\); not ending the turn`));
      const resumeAt = log.search(new RegExp(`session/resume ${workspace.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} ${sid} afterSeq=\\d+\\n`));
      const resumedAt = log.lastIndexOf(`result: resumed session=${sid} `);
      const endedAt = log.search(new RegExp(`session/turnEnded ${sid} seq=\\d+: end_turn`));
      assert.ok(lostAt >= 0, `the prompt's lost answer was not taken as its end:\n${log}`);
      assert.ok(resumeAt > lostAt && resumedAt > resumeAt, `re-attached with afterSeq:\n${log}`);
      assert.ok(endedAt > resumedAt, `the turn ended (end_turn) after the re-attach:\n${log}`);
      assert.doesNotMatch(log, /Send Prompt: the agent answered|prompt failed/i);
      const newFwd = forwarders(daemonPid);
      assert.equal(newFwd.length, 1, `one new forwarder: ${newFwd}`);
      assert.notEqual(newFwd[0], fwd);

      // 6. The daemon and the agent process are the ones from before.
      const after = status();
      assert.equal(after.pid, daemonPid, 'the same daemon');
      assert.equal(after.sessions.length, 1, JSON.stringify(after));
      assert.equal(after.sessions[0].sessionId, sid);
      assert.equal(after.sessions[0].turnRunning, false);
      assert.equal(after.sessions[0].agentPgid, agentPgid, 'the same agent process group');
      assert.deepEqual(pidsWithArg(script), agentsBefore, 'the same agent process, and none added');
      console.log(`forwarder killed: ${drawnAtKill} chunks drawn at the kill, ${TOTAL} after; forwarder ${fwd} -> ${newFwd[0]}, daemon ${daemonPid}, agent ${agentsBefore[0]}`);
    }
    // 7. No error notification, no "prompt failed" anywhere on screen meanwhile.
    const seen = recorded.seen;
    const failures = seen.filter((t) => /prompt failed|the prompt failed/i.test(t));
    assert.deepEqual(failures, [], `no failure was shown: ${JSON.stringify(seen)}`);
    assert.deepEqual((await notificationTexts(page)).filter((t) => /prompt|failed|error/i.test(t)), []);

    // 8. Stop everything; nothing of this run is left.
    await stopDaemonRun(page, cs, daemonEnv, agentDir, [daemonPid, ...pidsWithArg(script)]);
  });

  e2e("Show Sessions searches every agent's sessions as the user types; Developer: Reload Window resumes the session the view showed, not the workspace's newer one", async () => {
    await requireHarness();
    requireServerAndAgent();
    const { script } = scriptedAgent('agent-two');
    const storage = tempDir('storage-two');
    const workspace = tempDir('two-ws');
    const init = {
      processId: null,
      rootUri: null,
      capabilities: { experimental: { tether: { recoveryDialog: true, banners: true, status: true } } },
      initializationOptions: {
        storage: { dir: storage },
        agents: { scripted: { command: scriptedAgentBin, args: [script], protocol: 'acp' } },
        defaultAgent: 'scripted',
      },
    };
    const turns = (name, n = 1) =>
      Array.from({ length: n }, (_, i) => [
        { id: `${name}-u${i}`, role: 'user', text: `${name} session question ${i + 1}`, timestampUtc: new Date().toISOString(), complete: true },
        { id: `${name}-a${i}`, role: 'assistant', text: `${name} session answer ${i + 1}`, timestampUtc: new Date().toISOString(), complete: true },
      ]).flat();
    const snapshot = (chatTurns) => ({
      chatTurns,
      execTurns: [],
      diffSessions: [],
      approvals: { pending: [] },
      uiState: { isStreamErrorVisible: false },
      context: { workingDir: workspace },
    });
    const persist = (client, sessionId, chatTurns) =>
      client.request('session/persist', { sessionId, workspace: { root: workspace }, trigger: 'turnFinalized', snapshot: snapshot(chatTurns) });

    // 1. Two sessions of the workspace, made the way editors make them: Older, then Newer
    //    (a new session started by "Start New Session").
    const seed = lspClient(tetherBin);
    // Closed by the cleanups too when the test fails before it closes it (close runs once).
    cleanups.push(() => seed.close());
    await seed.request('initialize', init);
    seed.notify('initialized', {});
    const a = await seed.request('session/resume', { workspace: { root: workspace } });
    assert.equal(a.outcome, 'started', JSON.stringify(a));
    assert.equal((await persist(seed, a.sessionId, turns('Older'))).saved, true);
    const ask = await seed.request('session/resume', { workspace: { root: workspace }, sessionId: 'sess-404' });
    assert.equal(ask.outcome, 'needsChoice', JSON.stringify(ask));
    const b = await seed.request('session/recoveryChoice', { sessionId: 'sess-404', choice: 'new' });
    assert.equal(b.outcome, 'started', JSON.stringify(b));
    assert.notEqual(b.sessionId, a.sessionId);
    assert.equal((await persist(seed, b.sessionId, turns('Newer'))).saved, true);
    await seed.close();

    // 2. The window opens on the most recent, Newer; the user opens Older from "Show Sessions".
    const { cs, page } = await launch(
      'two-sessions',
      {
        'tether.serverPath': tetherBin,
        'tether.persistence.directory': storage,
        'tether.agent.name': 'scripted',
        'tether.agent.command': scriptedAgentBin,
        'tether.agent.args': [script],
      },
      workspace,
    );
    const view = await sessionViewFrame(page, 60_000);
    await view.locator('.turn.agent', { hasText: 'Newer session answer 1' }).waitFor({ timeout: 60_000 });
    //    Typing searches (session/search, R-INDEX-8) across agents: a Claude Code session of
    //    this folder, a file its store holds (the published fixture, placed under the
    //    project folder Claude Code names after the workspace), is found by what was said in
    //    it, its store named; then Older is found by words of its answer and opened from there.
    const claudeProject = path.join(cs.env.HOME, '.claude', 'projects', workspace.replace(/[^A-Za-z0-9]/g, '-'));
    mkdirSync(claudeProject, { recursive: true });
    const fixture = path.join(repoRoot, 'crates/tether-history/tests/fixtures/claude/projects/-home-user-work/011056c5-379b-4671-ae05-7da2d0635fdb.jsonl');
    writeFileSync(path.join(claudeProject, path.basename(fixture)), readFileSync(fixture));
    await runCommand(page, 'Tether: Show Sessions');
    // The quick pick by its title (the palette that ran the command holds the same words).
    const sessions = quickInput(page, 'Tether: Show Sessions');
    await sessions.waitFor({ timeout: 30_000 });
    const rows = sessions.locator('.quick-input-list .monaco-list-row');
    await sessions.locator('input').fill('fixture command');
    await rows.filter({ hasText: "Claude Code's store" }).filter({ hasText: 'please run the fixture command' }).waitFor({ timeout: 30_000 });
    assert.equal(await rows.filter({ hasText: /(Older|Newer) session/ }).count(), 0, 'only the sessions that hold the words');
    await screenshot(page, '22b-show-sessions-search');
    await sessions.locator('input').fill('Older answer');
    const olderHit = rows.filter({ hasText: 'Older session question 1' }).filter({ hasText: 'saved by Tether' });
    await olderHit.waitFor({ timeout: 30_000 });
    assert.equal(await rows.filter({ hasText: "Claude Code's store" }).count(), 0, 'the Claude session holds neither word');
    await olderHit.click();
    await view.locator('.turn.agent', { hasText: 'Older session answer 1' }).waitFor({ timeout: 60_000 });
    await view.locator('#send:not([disabled])').waitFor({ timeout: 60_000 });
    assert.equal(await view.locator('.turn', { hasText: 'Newer session' }).count(), 0);

    // 3. Another editor on the same folder saves a session of its own (the window's server
    //    holds Older and Newer): that one is the workspace's most recent now.
    const other = lspClient(tetherBin);
    cleanups.push(() => other.close());
    await other.request('initialize', init);
    other.notify('initialized', {});
    assert.equal((await persist(other, 'other-editor', turns('Newest'))).saved, true);
    const listed = await other.request('session/list', { workspace: { root: workspace } });
    assert.equal(listed.sessions[0]?.sessionId, 'other-editor', `the other editor's session is the most recent: ${JSON.stringify(listed)}`);
    await other.close();

    // 4. Reload: the new extension host resumes Older by its id (remembered in the
    //    workspace's state), without afterSeq (its view has drawn nothing). (The old host's
    //    shutdown persist of Older may make it the most recent again meanwhile, so what
    //    tells the fix is the id in the request, not which session the server would pick.)
    const reloaded = page.waitForEvent('framenavigated', { predicate: (f) => f === page.mainFrame(), timeout: 60_000 });
    await runCommand(page, 'Developer: Reload Window');
    await reloaded;
    await page.locator('.monaco-workbench').waitFor({ timeout: 60_000 });
    const view2 = await sessionViewFrame(page, 90_000);
    await view2.locator('.turn.agent', { hasText: 'Older session answer 1' }).waitFor({ timeout: 60_000 });
    await view2.locator('#send:not([disabled])').waitFor({ timeout: 60_000 });
    assert.equal(await view2.locator('.turn', { hasText: /Newe(r|st) session/ }).count(), 0, 'nothing of the other sessions is shown');
    // The resume's result is drawn before it is logged (see waitForText).
    await waitForText('the reloaded window', () => findLogs(cs.dirs.userData, 'Tether.log').map((f) => readFileSync(f, 'utf8'))[1] ?? '', new RegExp(`result: resumed session=${a.sessionId} `), 30_000);
    const logs = findLogs(cs.dirs.userData, 'Tether.log').map((f) => readFileSync(f, 'utf8'));
    assert.equal(logs.length, 2, 'one Tether.log per extension host');
    assert.match(logs[0], new RegExp(`remembered ${a.sessionId} as this window's session`));
    const second = logs[1];
    assert.doesNotMatch(second, /no tether server found/, 'the reloaded window found its server at once');
    const root = workspace.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    assert.match(second, new RegExp(`session/resume ${root} ${a.sessionId}\\n`), `resumed Older by id, without afterSeq:\n${second}`);
    assert.match(second, new RegExp(`result: resumed session=${a.sessionId} `), second);
    assert.doesNotMatch(second, new RegExp(`session=(${b.sessionId}|other-editor) `), second);
    await screenshot(page, '23-reload-resumes-its-own-session');
  });

  e2e('the session view: restored turns, the stale mark, live answers, an inline permission, older turns', async () => {
    await requireHarness();
    requireServerAndAgent();
    // The agent: its first session/load is rate limited (6 s), so the saved transcript is
    // shown stale meanwhile; its first prompt streams a chunk, then holds until the test has
    // seen the turn streaming (`release`), then streams another and replies; its second asks
    // permission; its third starts a tool call and dies. Replies are Markdown.
    const release = path.join(tempDir('view-gate'), 'release');
    const { script } = scriptedAgent('agent-view', {
      reply: 'Here is **{prompt}**:\n\n- first point\n- `inline code`\n\n```\nnpm test\n```',
      faults: [
        {
          method: 'session/load',
          calls: [1],
          action: {
            kind: 'error',
            code: -32603,
            message: 'Internal error',
            data: { details: 'API Error: 429 {"type":"error","error":{"type":"rate_limit_error","message":"Rate limited. Please retry in 6.0s"}}' },
          },
        },
        { method: 'session/prompt', calls: [1], action: { kind: 'stream', count: 2, perSecond: 10, hold: { after: 1, until: release } } },
        { method: 'session/prompt', calls: [2], action: { kind: 'permission' } },
        { method: 'session/prompt', calls: [3], action: { kind: 'crashMidPrompt' } },
      ],
    });
    const storage = tempDir('storage-view');
    const workspace = tempDir('view-ws');

    // 1. A session with 120 saved turns, made the way an editor makes one (the real server:
    //    session/resume, then session/persist of the transcript), before VS Code starts.
    const seed = lspClient(tetherBin);
    await seed.request('initialize', {
      processId: null,
      rootUri: null,
      capabilities: { experimental: { tether: { recoveryDialog: true, banners: true, status: true } } },
      initializationOptions: {
        storage: { dir: storage },
        agents: { scripted: { command: scriptedAgentBin, args: [script], protocol: 'acp' } },
        defaultAgent: 'scripted',
      },
    });
    seed.notify('initialized', {});
    const started = await seed.request('session/resume', { workspace: { root: workspace } });
    assert.equal(started.outcome, 'started', JSON.stringify(started));
    const chatTurns = [];
    for (let n = 1; n <= 60; n++) {
      const at = new Date(Date.UTC(2026, 10, 22, 0, n)).toISOString();
      chatTurns.push({ id: `seed-u${n}`, role: 'user', text: `Question ${n}: how does *module ${n}* work?`, timestampUtc: at, complete: true });
      chatTurns.push({
        id: `seed-a${n}`,
        role: 'assistant',
        text: `Answer ${n}: it **loads** the config.\n\n1. read \`config.json\`\n2. validate it\n\n\`\`\`js\nload(${n});\n\`\`\``,
        timestampUtc: at,
        complete: true,
        ...(n === 60 ? { linkedExecId: 'call-build' } : {}),
      });
    }
    const saved = await seed.request('session/persist', {
      sessionId: started.sessionId,
      workspace: { root: workspace },
      trigger: 'turnFinalized',
      snapshot: {
        chatTurns,
        execTurns: [
          { execId: 'call-build', header: 'Run npm run build', command: 'npm run build', status: 'completed', buffer: 'built in 2.1 s', truncatedBytes: 0 },
        ],
        diffSessions: [],
        approvals: { pending: [] },
        uiState: { isStreamErrorVisible: false },
        context: { workingDir: workspace },
      },
    });
    assert.equal(saved.saved, true, JSON.stringify(saved));
    await seed.close();

    // 2. "Tether: Resume Session" draws the saved turns at once in the session view, marked
    //    stale, while the agent is rate limited; Send waits meanwhile and says why.
    //    (The server's resume window is the newest 50 chat turns: 70 older ones stay on disk.)
    //    The view is opened and drawn first, the resume asked for then: the rate-limit wait
    //    (6 s, the server's) is then all the test's to see. At start-up the resume raced the
    //    view's first load, which on a loaded machine can outlast the wait: the view then
    //    never drew the stale state. (The start-up resume opening the view is the two-sessions
    //    test's.)
    const { page } = await launch(
      'view',
      {
        'tether.serverPath': tetherBin,
        'tether.persistence.directory': storage,
        'tether.agent.name': 'scripted',
        'tether.agent.command': scriptedAgentBin,
        'tether.agent.args': [script],
        'tether.resumeOnStartup': false,
        // The dark theme here (the other tests run the light one): the view takes the theme's colours.
        'workbench.colorTheme': 'Default Dark Modern',
      },
      workspace,
    );
    // The server is up (the palette lists the extension's commands only once its host has
    // registered it: a palette opened before then never offers them).
    await waitForStatus(page, /^\s*Tether\s*$/, 60_000);
    await runCommand(page, 'Tether: Open Session');
    const view = await sessionViewFrame(page, 60_000);
    await view.locator('#status', { hasText: 'No session yet' }).waitFor({ timeout: 60_000 });
    // Every status line the view shows from now on, for the error below.
    await view.evaluate(() => {
      const status = document.getElementById('status');
      const seen = [status.textContent];
      window.__statusSeen = seen;
      new MutationObserver(() => seen.push(status.textContent)).observe(status, { childList: true, characterData: true, subtree: true });
    });
    await runCommand(page, 'Tether: Resume Session');
    // The stale state, all of it at once: restored turns, the stale mark, the wait's status
    // line, Send closed with its reason.
    await view
      .waitForFunction(
        () =>
          document.querySelectorAll('.turn.restored').length > 0 &&
          !document.getElementById('stale').hidden &&
          document.body.classList.contains('is-stale') &&
          /Rate limited, resuming in \d s/.test(document.getElementById('status').textContent ?? '') &&
          document.getElementById('send').disabled &&
          /Rate limited, resuming in \d s\. The prompt box opens when the session is back\./.test(document.getElementById('prompt-reason').textContent ?? ''),
        undefined,
        { timeout: 60_000 },
      )
      .catch(async (err) => {
        const seen = await view.evaluate(() => window.__statusSeen);
        throw new Error(`the view never showed the stale, rate-limited state; its status lines: ${JSON.stringify(seen)}`, { cause: err });
      });
    await screenshot(page, '11-view-restored-stale');
    // The resume window of the cache: the newest 50 chat turns, and the linked tool call.
    assert.equal(await view.locator('.turn.restored.user, .turn.restored.agent').count(), 50);
    assert.equal(await view.locator('.turn.restored.agent').last().locator('strong').textContent(), 'loads');
    await view.locator('.turn.tool.restored', { hasText: 'Run npm run build' }).waitFor();
    // The view opens on the newest turn.
    await waitInView(view, '.turn.restored');

    // 3. The agent takes the session back: the stale mark clears and the prompt box opens.
    await view.locator('#stale').waitFor({ state: 'hidden', timeout: 30_000 });
    await view.waitForFunction(() => !document.body.classList.contains('is-stale'));
    await view.locator('#send:not([disabled])').waitFor({ timeout: 30_000 });
    await view.locator('#older', { hasText: '70 older turns: scroll up to load them' }).waitFor({ timeout: 30_000 });
    await screenshot(page, '12-view-confirmed');

    // 4. Scrolling to the top pages older turns in from the server's cache (session/history):
    //    the 50 before the window, then the first 20, oldest at the top.
    //    (A wheel event still in flight when the first page lands may already ask for the
    //    second: either state is right, and the turns are in order in both.)
    await view.locator('#log').hover();
    await scrollUpForOlder(page, view, 100);
    // The count and the first turn are read in one evaluation: a second page landing
    // between two separate reads made them disagree (seen in a full run under load).
    const { shown, first } = await view.evaluate(() => ({
      shown: document.querySelectorAll('.turn.restored.user, .turn.restored.agent').length,
      first: document.querySelector('.turn.restored.user')?.textContent ?? '',
    }));
    assert.ok(shown === 100 || shown === 120, `turns shown after one page: ${shown}`);
    assert.match(first, shown === 100 ? /Question 11:/ : /Question 1:/);
    await screenshot(page, '13-view-older-loaded');
    await scrollUpForOlder(page, view, 120);
    await view.locator('#older').waitFor({ state: 'hidden', timeout: 30_000 });
    assert.equal(await view.locator('.turn.restored.user, .turn.restored.agent').count(), 120);
    assert.match(await view.locator('.turn.restored.user').first().textContent(), /Question 1: how does module 1 work\?/);

    // 5. A prompt typed in the box: drawn at once, the answer streams in (its first chunk,
    //    then, once the test lets the agent go on, the whole), Send waits and Cancel is
    //    offered meanwhile; Markdown is rendered.
    await view.locator('#prompt').fill('the plan');
    await view.locator('#prompt').press('Enter');
    await view.locator('.turn.user:not(.restored)', { hasText: 'the plan' }).waitFor({ timeout: 30_000 });
    await view.locator('.turn.agent.streaming').waitFor({ timeout: 30_000 });
    // The agent holds after its first chunk: the turn runs until `release`.
    assert.equal(await view.locator('#send').isDisabled(), true);
    assert.equal(await view.locator('#cancel').isDisabled(), false);
    // Sending brought the view back to the bottom (it was scrolled to the top).
    await waitInView(view, '.turn.agent.streaming');
    await screenshot(page, '14-view-streaming');
    writeFileSync(release, '');
    const answer = view.locator('.turn.agent:not(.restored):not(.streaming)', { hasText: 'npm test' });
    await answer.waitFor({ timeout: 30_000 });
    assert.equal(await answer.locator('strong').textContent(), 'the plan');
    assert.equal(await answer.locator('pre code').textContent(), 'npm test\n');
    await view.locator('#send:not([disabled])').waitFor({ timeout: 30_000 });
    await screenshot(page, '15-view-answer');

    // 6. A permission question shown inline with exactly the agent's options (the quick pick
    //    is offered too); the view's answer reaches the agent and closes the quick pick.
    await view.locator('#prompt').fill('edit the notes');
    await view.locator('#send').click();
    await view.locator('#permission').waitFor({ state: 'visible', timeout: 20_000 });
    assert.deepEqual(await view.locator('#permission button').allTextContents(), ['Allow', 'Reject']);
    assert.match(await view.locator('#permission .perm-title').textContent(), /Edit file/);
    const pick = quickInput(page, 'Tether: the agent asks for permission');
    await pick.waitFor({ timeout: 30_000 });
    await screenshot(page, '16-view-permission');
    await view.locator('#permission button', { hasText: 'Allow' }).click();
    await view.locator('.turn.agent', { hasText: 'permission: allow' }).waitFor({ timeout: 20_000 });
    await pick.waitFor({ state: 'hidden', timeout: 30_000 });
    await view.locator('#permission').waitFor({ state: 'hidden', timeout: 30_000 });
    await view.locator('.turn.tool:not(.restored)', { hasText: 'Edit file' }).locator('.status-completed').waitFor({ timeout: 30_000 });
    await screenshot(page, '17-view-permission-answered');
    // The tool call completes before the turn ends: the box opens at the turn's end.
    await view.locator('#send:not([disabled])').waitFor({ timeout: 30_000 });

    // 7. The agent dies mid-turn with a tool call running: Tether restarts it, finishes the
    //    call as failed with its explanation, and the prompt fails; the view shows both.
    await view.locator('#prompt').fill('build it');
    await view.locator('#prompt').press('Enter');
    const crashed = view.locator('.turn.tool:not(.restored)', { hasText: 'Run build' });
    await crashed.locator('.status-failed').waitFor({ timeout: 60_000 });
    await crashed.locator('.tether-note', { hasText: 'Tether finished this tool call as failed' }).waitFor();
    assert.match(await crashed.locator('pre.output').textContent(), /Tool call interrupted/);
    await view.locator('.turn.status', { hasText: 'The prompt failed:' }).waitFor({ timeout: 30_000 });
    await view.locator('#send:not([disabled])').waitFor({ timeout: 30_000 });
    await screenshot(page, '18-view-tool-failed-by-tether');

    // 8. "Tether: Show Sessions": the workspace's saved sessions as a quick pick.
    await runCommand(page, 'Tether: Show Sessions');
    const sessions = quickInput(page, 'Tether: Show Sessions');
    await sessions.waitFor({ timeout: 30_000 });
    const row = sessions.locator('.quick-input-list .monaco-list-row').first();
    await row.waitFor({ timeout: 30_000 });
    const rowText = await row.textContent();
    assert.match(rowText, /scripted/);
    assert.match(rowText, /updated .* · \d+ turns · /);
    // Untitled, so labelled with its first prompt (the first saved user turn, on one line).
    assert.match(rowText, /^Question 1: how does \*module 1\* work\?/);
    await screenshot(page, '19-show-sessions');
    await sessions.locator('input').press('Enter');
    await sessions.waitFor({ state: 'hidden', timeout: 30_000 });

    // 9. A 5,000-turn transcript posted to the view (as the extension posts one), then one
    //    streamed update: how long until the newest turn is drawn, every turn is in the DOM,
    //    and the update is drawn.
    const perf = await view.evaluate(async () => {
      const items = Array.from({ length: 5000 }, (_, n) => ({
        id: `bench-${n}`,
        kind: n % 2 ? 'agent' : 'user',
        text: n % 2 ? `Answer ${n}: **bold**, \`code\` and a list:\n\n- one\n- two\n\n\`\`\`\nx = ${n}\n\`\`\`` : `Question ${n}?`,
      }));
      const frame = () => new Promise((r) => requestAnimationFrame(() => r()));
      const t0 = performance.now();
      window.dispatchEvent(new MessageEvent('message', { data: { ops: [{ op: 'reset', sessionId: 'bench', items, stale: false }] } }));
      await frame();
      const lastTurnMs = performance.now() - t0;
      const lastInDom = document.querySelector('[data-id="bench-4999"]') !== null;
      while (!window.__tetherPerf.allDone) await frame();
      const allMs = window.__tetherPerf.allDone - t0;
      const count = document.querySelectorAll('#items .turn').length;
      const t1 = performance.now();
      window.dispatchEvent(
        new MessageEvent('message', {
          data: { ops: [{ op: 'replace', item: { id: 'bench-4999', kind: 'agent', text: 'Answer 4999: **bold**, and one more streamed sentence.', open: true } }] },
        }),
      );
      await frame();
      await frame();
      const updateMs = window.__tetherPerf.replaceDone - t1;
      const updated = document.querySelector('[data-id="bench-4999"]')?.textContent ?? '';
      return { lastTurnMs, lastInDom, allMs, count, updateMs, updated };
    });
    console.log(`5,000-turn render: ${JSON.stringify(perf)}`);
    assert.equal(perf.lastInDom, true);
    assert.equal(perf.count, 5000);
    assert.match(perf.updated, /one more streamed sentence/);
    await waitInView(view, '[data-id="bench-4999"]');
    const shot = await screenshot(page, '20-view-5000-turns');
    writeFileSync(path.join(path.dirname(shot), 'render-5000.json'), `${JSON.stringify(perf, null, 2)}\n`);
  });
});

// Workspace trust and multi-root workspaces.
describe('Tether in a real VS Code: Restricted Mode and multi-root workspaces', () => {
  e2e('Restricted Mode starts no server and no agent, and the session view says why; trusting the folder starts them', async () => {
    await requireHarness();
    requireServerAndAgent();
    const { script } = scriptedAgent('agent-trust', { reply: 'hello from a trusted folder' });
    const workspace = tempDir('trust-ws');
    // Workspace trust on (the other tests turn it off): code-server asks at start-up.
    const cs = await startCodeServer({
      name: 'trust',
      workspace,
      trust: true,
      settings: {
        'tether.server.path': tetherBin,
        'tether.persistence.directory': tempDir('storage-trust'),
        'tether.agents': { scripted: { command: scriptedAgentBin, args: [script] } },
        'tether.defaultAgent': 'scripted',
        'tether.resumeOnStartup': true,
      },
    });
    cleanups.push(cs.stop);
    const { browser, page } = await openBrowser(cs.folderUrl);
    cleanups.push(() => browser.close());
    current = { name: 'trust', cs, page };
    const extLog = () => readFileSync(findLog(cs.dirs.userData, 'Tether.log') ?? '/dev/null', 'utf8');
    const servers = () => pidsWithArg(`${cs.root}/`).filter((pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes('serve'));

    // 1. The folder is not trusted: the user answers code-server's question with No.
    const dialog = await waitForDialog(page, 60_000);
    assert.match(dialog.message, /Do you trust the authors of the files in this folder\?/);
    await dialog.box.locator('.monaco-button', { hasText: "No, I don't trust the authors" }).click();
    await waitForStatus(page, /Tether: Restricted Mode/, 60_000);
    await waitForText('the Restricted Mode note', extLog, /Restricted Mode: Tether starts no agent in a folder you have not trusted.*\(no server started\)/, 30_000);
    assert.deepEqual(servers(), [], 'no tether serve runs');
    assert.deepEqual(pidsWithArg(script), [], 'no agent process');

    // 2. The session view says why and what to do; the prompt box stays closed.
    await runCommand(page, 'Tether: Open Session');
    const view = await sessionViewFrame(page, 60_000);
    await view.locator('#status', { hasText: 'Trust the folder ("Workspaces: Manage Workspace Trust") and the session starts' }).waitFor({ timeout: 30_000 });
    await view.locator('#send[disabled]').waitFor({ timeout: 30_000 });
    await screenshot(page, '26-restricted-mode');
    assert.deepEqual(servers(), [], 'still no tether serve');

    // 3. Trusting the folder (the Workspace Trust editor's Trust) starts the server; the
    //    start-up resume finds nothing (R-RESUME-11) and the first prompt starts the session.
    await runCommand(page, 'Workspaces: Manage Workspace Trust');
    await page.locator('.workspace-trust-editor .monaco-button', { hasText: /^Trust$/ }).click();
    await waitForText('the start after trust', extLog, /the workspace is trusted now: starting the Tether server/, 30_000);
    await waitForText('the start-up resume', extLog, /result: nothingToResume /, 60_000);
    assert.equal(servers().length, 1, 'tether serve runs once the folder is trusted');
    await page.locator('.tab', { hasText: 'Tether Session' }).first().click();
    const trusted = await sessionViewFrame(page, 60_000);
    await trusted.locator('#status', { hasText: 'No session yet. Send a prompt to start one' }).waitFor({ timeout: 30_000 });
    await trusted.locator('#prompt').fill('hello');
    await trusted.locator('#prompt').press('Enter');
    await trusted.locator('.turn.agent', { hasText: 'hello from a trusted folder' }).waitFor({ timeout: 60_000 });
    await screenshot(page, '27-trusted-first-prompt');
    assert.equal(pidsWithArg(script).length, 1, 'one agent process, started by the prompt after trust');
  });

  e2e('multi-root: the session view follows the folder of the active editor, and asks when no editor is active', async () => {
    await requireHarness();
    requireServerAndAgent();
    const { script } = scriptedAgent('agent-multi', { reply: 'hello from api' });
    const base = tempDir('multi-ws');
    const api = path.join(base, 'api');
    const web = path.join(base, 'web');
    for (const [dir, file] of [[api, 'api-notes.txt'], [web, 'web-notes.txt']]) {
      mkdirSync(dir, { recursive: true });
      writeFileSync(path.join(dir, file), `${file}\n`);
    }
    const workspaceFile = path.join(base, 'multi.code-workspace');
    writeFileSync(workspaceFile, JSON.stringify({ folders: [{ path: 'api' }, { path: 'web' }] }));
    const cs = await startCodeServer({
      name: 'multi',
      workspace: workspaceFile,
      settings: {
        'tether.server.path': tetherBin,
        'tether.persistence.directory': tempDir('storage-multi'),
        'tether.agents': { scripted: { command: scriptedAgentBin, args: [script] } },
        'tether.defaultAgent': 'scripted',
        'tether.resumeOnStartup': true,
      },
    });
    cleanups.push(cs.stop);
    const { browser, page } = await openBrowser(cs.workspaceUrl);
    cleanups.push(() => browser.close());
    current = { name: 'multi', cs, page };
    const extLog = () => readFileSync(findLog(cs.dirs.userData, 'Tether.log') ?? '/dev/null', 'utf8');
    const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    // Opens a file from the Explorer (a click: the active editor changes to it).
    const openFile = async (name) => {
      await page.locator('.explorer-folders-view .monaco-list-row', { hasText: name }).first().click();
      await page.locator('.tab.active', { hasText: name }).first().waitFor({ timeout: 30_000 });
    };
    const follows = (root) => extLog().split(`the session view follows ${root} (the active editor is in it)`).length - 1;

    // 1. Two folders and no editor: the extension asks which folder's session to show.
    const pick = quickInput(page, 'Tether: Choose Folder');
    await pick.waitFor({ timeout: 60_000 });
    await screenshot(page, '28-multi-root-pick');
    await pick.locator('.monaco-list-row', { hasText: web }).first().click();
    await waitForText('the followed folder', extLog, new RegExp(`the session view follows ${escape(web)}\n`), 60_000);
    await waitForText('the start-up resume of web', extLog, new RegExp(`session/resume ${escape(web)} create=false\n`), 60_000);

    // 2. An editor of the other folder: the view follows it; its start-up resume finds nothing.
    await openFile('api-notes.txt');
    await waitForText('following api', extLog, new RegExp(`the session view follows ${escape(api)} \\(the active editor is in it\\)`), 30_000);
    await waitForText('the start-up resume of api', extLog, new RegExp(`session/resume ${escape(api)} create=false\n`), 60_000);

    // 3. A prompt from the view starts api's session (the workspace root is api).
    await runCommand(page, 'Tether: Open Session');
    const view = await sessionViewFrame(page, 60_000);
    await view.locator('#status', { hasText: 'No session yet' }).waitFor({ timeout: 30_000 });
    await view.locator('#prompt').fill('hello');
    await view.locator('#prompt').press('Enter');
    await view.locator('.turn.agent', { hasText: 'hello from api' }).waitFor({ timeout: 60_000 });
    assert.match(extLog(), new RegExp(`session/resume ${escape(api)}\n`), 'the prompt started a session of api');

    // 4. Back to web: its own (empty) view; then api again: its conversation as it was.
    await openFile('web-notes.txt');
    await waitForText('following web again', extLog, new RegExp(`the session view follows ${escape(web)} \\(the active editor is in it\\)`), 30_000);
    const webView = await sessionViewFrame(page, 30_000);
    await webView.waitForFunction(() => !document.querySelector('.turn.agent'), undefined, { timeout: 30_000 });
    await openFile('api-notes.txt');
    await waitForText('following api again', () => String(follows(api)), /^2$/, 30_000);
    const apiView = await sessionViewFrame(page, 30_000);
    await apiView.locator('.turn.agent', { hasText: 'hello from api' }).waitFor({ timeout: 30_000 });
    await screenshot(page, '29-multi-root-follows-editor');
  });
});

describe('Tether in a real VS Code: the handoff offer of a long rate-limit wait', () => {
  e2e('a long rate-limit wait offers the other agent; "Continue with Beta" hands the session to it and its answer reaches the view', async () => {
    await requireHarness();
    requireServerAndAgent();
    // alpha's first prompt is refused with a quota error whose Retry-After (an hour) is longer
    // than handoff.offerAfterMs (2 minutes by default): the server waits (up to
    // rateLimit.maxDelayMs, 5 minutes) and offers beta, the first other agent by name.
    // Each agent names its sessions apart (two scripted agents would both say sess-1).
    const alpha = scriptedAgent('agent-alpha', {
      sessionPrefix: 'alpha-',
      reply: 'alpha answers',
      faults: [
        {
          method: 'session/prompt',
          calls: [1],
          action: { kind: 'error', code: 429, message: 'Resource has been exhausted (e.g. check quota). Please retry in 3600.0s.' },
        },
      ],
    });
    const beta = scriptedAgent('agent-beta', { sessionPrefix: 'beta-', reply: 'beta answers after the handoff' });
    const { cs, page } = await launch('handoff', {
      'tether.server.path': tetherBin,
      'tether.persistence.directory': tempDir('storage-handoff'),
      'tether.agents': {
        claude: null,
        alpha: { command: scriptedAgentBin, args: [alpha.script] },
        beta: { command: scriptedAgentBin, args: [beta.script] },
      },
      'tether.defaultAgent': 'alpha',
      'tether.resumeOnStartup': true,
    });
    const extLog = () => readFileSync(findLog(cs.dirs.userData, 'Tether.log') ?? '/dev/null', 'utf8');
    await waitForText('the start-up resume', extLog, /result: nothingToResume session=null /, 60_000);

    // 1. The first prompt starts alpha's session; its turn is rate limited for an hour.
    await runCommand(page, 'Tether: Open Session');
    const view = await sessionViewFrame(page, 60_000);
    await view.locator('#send:not([disabled])').waitFor({ timeout: 30_000 });
    await view.locator('#prompt').fill('go');
    await view.locator('#prompt').press('Enter');
    await waitForText('alpha started', extLog, /result: started session=\S+ /, 60_000);
    const alphaSession = /result: started session=(\S+) /.exec(extLog())[1];

    // 2. The offer: the server's question as a notification with "Continue with Beta" and
    //    "Keep Waiting"; the view's status line ends with the same question.
    const text = await waitForNotification(page, /continue with Beta now\?/, 60_000);
    assert.match(text, /^Tether: Alpha's (rate limit|quota) resets .*; continue with Beta now\?$/, text);
    // The toast once it has slid in, the mouse on it: VS Code hides an information toast
    // 15 s after it appeared unless the mouse is over it, and the offer is clicked below.
    const toast = await restOnToast(page, 'continue with Beta now?');
    await toast.getByRole('button', { name: 'Keep Waiting' }).waitFor({ timeout: 30_000 });
    const accept = toast.getByRole('button', { name: 'Continue with Beta' });
    await accept.waitFor({ timeout: 30_000 });
    await view.locator('#status', { hasText: /^Rate limited, resuming in .*continue with Beta now\?$/ }).waitFor({ timeout: 30_000 });
    // Logged before the offer was shown, but written out to the file later (see waitForText).
    await waitForOrder('Tether.log', extLog, [
      new RegExp(`status: rateLimited 1/\\d+ retryInMs=\\d+ errorKind=\\w+ handoff=beta\\n`),
      new RegExp(`handoff offered for ${alphaSession}: "Continue with Beta" / "Keep Waiting"`),
    ]);
    await screenshot(page, '30-handoff-offered');

    // 3. "Continue with Beta": session/handoff to beta; the view follows beta's new session.
    const acceptMark = textMark();
    await accept.click();
    await waitForText('the handoff', extLog, new RegExp(`handoff offer: user chose "Continue with Beta"; session/handoff ${alphaSession} to beta\\n`), 30_000);
    const expired = new RegExp(`expired: ${alphaSession} → (\\S+) \\(handoff:beta\\)\\n`);
    await waitForText('session/expired', extLog, expired, 60_000);
    const betaSession = expired.exec(extLog())[1];
    // Shown when session/expired arrived (an information toast, which VS Code hides after 15 s).
    await waitForSeen(new RegExp(`^Tether: continued session ${alphaSession} with beta in new session ${betaSession}\\.$`), {
      kind: 'notification',
      since: acceptMark,
    });
    await waitForText('the handoff result', extLog, new RegExp(`result: started session=${betaSession} `), 60_000);
    await view.locator('#status', { hasText: 'Session is live' }).waitFor({ timeout: 30_000 });
    await view.locator('#send:not([disabled])').waitFor({ timeout: 30_000 });
    // The wait's progress notification closes with it.
    await page.locator('.notification-list-item-message', { hasText: 'Rate limited, resuming' }).waitFor({ state: 'detached', timeout: 30_000 });
    await waitForText('the old prompt\'s end', extLog, new RegExp(`session/prompt of ${alphaSession} ended \\(cancelled\\) after the view moved to ${betaSession}`), 30_000);

    // 4. The next prompt goes to beta, whose answer reaches the view.
    await view.locator('#prompt').fill('carry on');
    await view.locator('#prompt').press('Enter');
    await view.locator('.turn.agent', { hasText: 'beta answers after the handoff' }).waitFor({ timeout: 60_000 });
    assert.match(extLog(), new RegExp(`session/prompt ${betaSession} \\(8 characters\\)`));
    assert.equal(await view.locator('.turn.agent', { hasText: 'alpha answers' }).count(), 0, 'alpha never answered');
    await screenshot(page, '31-handoff-beta-answers');
  });
});
