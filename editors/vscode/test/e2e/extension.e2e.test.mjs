// End-to-end tests of the packaged extension in a real VS Code (code-server 4.100.3) with the
// real `tether serve` and the scripted failing agent. Run by `npm run test:e2e` (which packages
// the .vsix first). Prerequisites: scripts/install-e2e.sh; TETHER_BIN (default
// <repo>/target/debug/tether) and TETHER_SCRIPTED_AGENT (default
// <repo>/target/debug/tether-scripted-agent). A missing one fails the test, naming it.
// Screenshots go to editors/vscode/test-artifacts/ (gitignored).
import { strict as assert } from 'node:assert';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import {
  findLog,
  findLogs,
  pidsWithArg,
  openBrowser,
  probeServer,
  recordTexts,
  requireExecutable,
  requireHarness,
  runCommand,
  scriptedAgentBin,
  screenshot,
  startCodeServer,
  statusItem,
  tetherBin,
  waitForDialog,
  waitForNotification,
  waitForStatus,
} from './harness.mjs';


/**
 * The scripted agent's script (crates/tether-host `Script`, JSON): it advertises
 * `loadSession` and `resume` and starts new sessions fine. Its first `session/load` answers
 * Claude's rate-limit error with "Please retry in 2.0s" (Tether waits 2 s and resumes); every
 * later `session/load` and `session/resume` answers the error a TypeScript agent gives for a
 * refused connection (-32603 "Internal error" with the cause in `data.details`: FIELD-NOTES),
 * which Tether classifies as retryable, so each round makes all its attempts, then asks.
 */
function failingScript(stateDir) {
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
  return {
    loadSession: true,
    resume: true,
    stateDir,
    faults: [
      { method: 'session/load', calls: [1], action: rateLimited },
      { method: 'session/load', calls: [], action: refused },
      { method: 'session/resume', calls: [], action: refused },
    ],
  };
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

/** The code-server and page of the test running now, for the failure diagnostics. */
let current;

async function launch(name, settings) {
  const workspace = tempDir(`${name}-ws`);
  const cs = await startCodeServer({ name, settings, workspace });
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
function e2e(title, fn) {
  it(title, async () => {
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
      }
      throw err;
    }
  });
}

describe('Tether in a real VS Code (code-server 4.100.3)', { timeout: 300_000 }, () => {
  e2e('installs from the .vsix, activates on start-up, shows its status item and its logs', async () => {
    await requireHarness();
    const { cs, page } = await launch('activate', {
      'tether.serverPath': tetherBin,
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
    assert.match(lines, /server: .*tether \(from setting\)|tether\.serverPath is ".*", which is not an executable file/);
    console.log(`status item: "${text.trim()}"; screenshot ${shot}`);
  });

  e2e('shows the recovery modal; "Try Again" and "Start New Session" reach the server', async () => {
    await requireHarness();
    requireExecutable(tetherBin, 'the tether server (env TETHER_BIN)', 'build it with `cargo build -p tether --bin tether`, or point TETHER_BIN at it');
    requireExecutable(
      scriptedAgentBin,
      'the scripted agent (env TETHER_SCRIPTED_AGENT)',
      'build it with `cargo build -p tether-host --bin tether-scripted-agent`, or point TETHER_SCRIPTED_AGENT at it',
    );
    const init = await probeServer(tetherBin);
    assert.equal(init?.capabilities?.experimental?.tether?.protocolVersion, 1, 'initialize advertises protocolVersion 1');

    const storage = tempDir('storage');
    const agentDir = tempDir('agent');
    const script = path.join(agentDir, 'script.json');
    writeFileSync(script, JSON.stringify(failingScript(path.join(agentDir, 'state')), null, 2));
    const { cs, page } = await launch('recovery', {
      'tether.serverPath': tetherBin,
      'tether.persistence.directory': storage,
      'tether.agent.name': 'scripted',
      'tether.agent.command': scriptedAgentBin,
      'tether.agent.args': [script],
      'tether.resumeOnStartup': true,
    });

    // 1. Start-up resume: nothing cached for this workspace, so a new session starts.
    await waitForStatus(page, /^\s*Tether\s*$/, 60_000);

    // 2. Reload the window: the extension host terminates (the extension deactivates and
    //    persists with trigger shutdown; tether serve exits and stops its agent), a new one
    //    starts, and its start-up resume finds the cached session. The new agent process
    //    refuses every load: three attempts (progress texts), then the modal.
    const { result: dialog, seen } = await recordTexts(async () => {
      await runCommand(page, 'Developer: Reload Window');
      await waitForStatus(page, /Resuming… attempt 2 of 3/, 90_000);
      await screenshot(page, '02-resume-progress');
      return waitForDialog(page, 90_000);
    });
    // While the choice is outstanding the status item says so (even when the round's
    // `failed` status arrives after the result).
    await waitForStatus(page, /Tether: choose how to recover/, 10_000);
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
    await dialog.box.waitFor({ state: 'hidden', timeout: 10_000 });
    const reoffer = await waitForNotification(page, /The session is waiting for your choice/, 10_000);
    const showOptions = page
      .locator('.notification-list-item', { hasText: 'The session is waiting for your choice' })
      .getByRole('button', { name: 'Show Options' });
    await showOptions.waitFor({ timeout: 10_000 });
    await page.waitForTimeout(500); // the toast fades in
    await screenshot(page, '04-dismissed-reoffer');
    await showOptions.click();
    const again = await waitForDialog(page, 10_000);
    assert.equal(again.message, dialog.message, `the same dialog is offered again after: ${reoffer}`);

    // 4. "Try Again": the server half-opens the breaker and runs another round, which fails
    //    again and asks again (a new round of progress, a second modal).
    const retry = await recordTexts(async () => {
      await again.box.getByRole('button', { name: 'Try Again' }).click();
      await again.box.waitFor({ state: 'hidden', timeout: 10_000 });
      return waitForDialog(page, 90_000);
    });
    assert.match([...retry.seen].join('\n'), /Resuming… attempt 1 of 3/, 'a new round of attempts ran');
    await screenshot(page, '05-recovery-dialog-after-retry');

    // 5. "Start New Session": the server starts a fresh session, archives the old cache and
    //    sends session/expired, shown as an information message; the status turns live.
    const fresh = await recordTexts(async () => {
      await retry.result.box.getByRole('button', { name: 'Start New Session' }).click();
      const notice = await waitForNotification(page, /has ended; started new session/, 60_000);
      await waitForStatus(page, /^\s*Tether\s*$/, 60_000);
      return notice;
    });
    // The replaced session's banners ended with it: the banner indicator is gone, and so is
    // the stale-transcript notification.
    await page.locator('[id$=".tether.banners"]').waitFor({ state: 'hidden', timeout: 10_000 });
    await page
      .locator('.notification-list-item-message', { hasText: 'Stale transcript' })
      .waitFor({ state: 'detached', timeout: 10_000 });
    await screenshot(page, '06-new-session');
    console.log(`expired notice: ${fresh.result}`);

    // 6. What the client sent and what the server answered, in order (the log of the
    //    extension host now running), and the server's own log file.
    const extLog = readFileSync(findLogs(cs.dirs.userData, 'Tether.log').at(-1), 'utf8');
    const order = [
      /result: needsChoice .*userRetries=0/,
      /recovery dialog dismissed: no choice sent/,
      /session\/recoveryChoice retry for /,
      /result: needsChoice .*userRetries=1/,
      /session\/recoveryChoice new for /,
      /expired: /,
      /result: started /,
    ];
    let at = 0;
    for (const re of order) {
      const m = re.exec(extLog.slice(at));
      assert.ok(m, `Tether.log lacks ${re} after offset ${at}:\n${extLog}`);
      at += m.index + m[0].length;
    }
    const serverLogs = findLogs(cs.dirs.userData, 'tether-serve.log');
    assert.equal(serverLogs.length, 2, `one tether serve log per extension host: ${serverLogs}`);
    const serverLog = readFileSync(serverLogs[1], 'utf8');
    assert.match(serverLog, /recovery_dialog: true|recoveryDialog"?: ?true/, 'the server saw experimental.tether.recoveryDialog');
    assert.match(serverLog, /Try Again/, 'the server logged the retry choice');
    assert.match(serverLog, /Start New Session/, 'the server logged the new-session choice');

    // 7. "Tether: Clear Saved Session" asks first, then the server removes the workspace's
    //    cached sessions and the extension says how many.
    await runCommand(page, 'Tether: Clear Saved Session');
    const confirm = await waitForDialog(page, 10_000);
    assert.equal(confirm.message, 'Clear the saved Tether session of this workspace?');
    await confirm.box.getByRole('button', { name: 'Clear' }).click();
    const cleared = await waitForNotification(page, /^Tether: removed \d+ saved sessions?\.$/, 20_000);
    assert.doesNotMatch(cleared, /removed 0 /, `the server removed the cached sessions: ${cleared}`);
    await screenshot(page, '07-cleared');
    console.log(`clear: ${cleared}`);
  });

  e2e('restarts a crashed server and resumes the session again', async () => {
    await requireHarness();
    requireExecutable(tetherBin, 'the tether server (env TETHER_BIN)', 'build it with `cargo build -p tether --bin tether`, or point TETHER_BIN at it');
    requireExecutable(
      scriptedAgentBin,
      'the scripted agent (env TETHER_SCRIPTED_AGENT)',
      'build it with `cargo build -p tether-host --bin tether-scripted-agent`, or point TETHER_SCRIPTED_AGENT at it',
    );
    const agentDir = tempDir('agent-ok');
    const script = path.join(agentDir, 'script.json');
    writeFileSync(script, JSON.stringify({ loadSession: true, resume: true, stateDir: path.join(agentDir, 'state'), faults: [] }));
    const { cs, page } = await launch('crash', {
      'tether.serverPath': tetherBin,
      'tether.persistence.directory': tempDir('storage-crash'),
      'tether.agent.name': 'scripted',
      'tether.agent.command': scriptedAgentBin,
      'tether.agent.args': [script],
    });
    await waitForStatus(page, /^\s*Tether\s*$/, 60_000);
    // The start-up resume has its answer before the crash.
    const started = Date.now() + 30_000;
    while (Date.now() < started && !/result: started session=sess-1 /.test(readFileSync(findLog(cs.dirs.userData, 'Tether.log') ?? '/dev/null', 'utf8'))) {
      await new Promise((r) => setTimeout(r, 100));
    }
    // Only this run's server: its --log-file lies under this code-server's own temp folder.
    const pids = pidsWithArg(`${cs.root}/`).filter((pid) => {
      const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      return args.includes('serve') && args.includes('--log-file');
    });
    assert.equal(pids.length, 1, `one tether serve of this run: ${pids}`);
    process.kill(pids[0], 'SIGKILL');
    // vscode-languageclient restarts it; the extension resumes the cached session, which the
    // agent takes back (session/load), and the status is live again.
    const deadline = Date.now() + 60_000;
    let log = '';
    while (Date.now() < deadline && !/tether serve restarted[\s\S]*result: resumed /.test(log)) {
      log = readFileSync(findLogs(cs.dirs.userData, 'Tether.log').at(-1), 'utf8');
      await new Promise((r) => setTimeout(r, 250));
    }
    assert.match(log, /tether serve restarted[\s\S]*result: resumed session=sess-1 /, log);
    await waitForStatus(page, /^\s*Tether\s*$/, 30_000);
    const after = pidsWithArg(`${cs.root}/`).filter((pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes('serve'));
    assert.equal(after.length, 1, 'one new tether serve runs');
    assert.notEqual(after[0], pids[0]);
    // The resume's progress notification and the stale-transcript notice close once the
    // session is live again.
    for (const text of ['Resuming…', 'Stale transcript']) {
      await page.locator('.notification-list-item-message', { hasText: text }).waitFor({ state: 'detached', timeout: 15_000 });
    }
    await screenshot(page, '08-after-server-crash');
  });

  e2e("asks the agent's permission question as a quick pick and answers it", async () => {
    await requireHarness();
    requireExecutable(tetherBin, 'the tether server (env TETHER_BIN)', 'build it with `cargo build -p tether --bin tether`, or point TETHER_BIN at it');
    requireExecutable(
      scriptedAgentBin,
      'the scripted agent (env TETHER_SCRIPTED_AGENT)',
      'build it with `cargo build -p tether-host --bin tether-scripted-agent`, or point TETHER_SCRIPTED_AGENT at it',
    );
    // Every prompt asks session/request_permission (options Allow / Reject) and replies
    // "permission: <optionId>", or ends the turn cancelled when the answer is cancelled.
    const agentDir = tempDir('agent-perm');
    const script = path.join(agentDir, 'script.json');
    writeFileSync(
      script,
      JSON.stringify({
        loadSession: true,
        resume: true,
        stateDir: path.join(agentDir, 'state'),
        faults: [{ method: 'session/prompt', calls: [], action: { kind: 'permission' } }],
      }),
    );
    const { cs, page } = await launch('permission', {
      'tether.serverPath': tetherBin,
      'tether.persistence.directory': tempDir('storage-perm'),
      'tether.agent.name': 'scripted',
      'tether.agent.command': scriptedAgentBin,
      'tether.agent.args': [script],
    });
    await waitForStatus(page, /^\s*Tether\s*$/, 60_000);
    const live = Date.now() + 30_000;
    while (Date.now() < live && !/result: started /.test(readFileSync(findLog(cs.dirs.userData, 'Tether.log') ?? '/dev/null', 'utf8'))) {
      await new Promise((r) => setTimeout(r, 100));
    }

    const ask = async (prompt) => {
      await runCommand(page, 'Tether: Send Prompt');
      const input = page.locator('.quick-input-widget input');
      await page.locator('.quick-input-widget', { hasText: 'Tether: Send Prompt' }).waitFor({ timeout: 10_000 });
      await input.fill(prompt);
      await page.keyboard.press('Enter');
      const pick = page.locator('.quick-input-widget', { hasText: 'Tether: the agent asks for permission' });
      await pick.waitFor({ timeout: 30_000 });
      return pick;
    };

    // Pick "Reject": the agent gets that option id and says so.
    const pick = await ask('run the tests');
    const rows = (await pick.locator('.quick-input-list .monaco-list-row .label-name').allTextContents()).map((t) => t.trim());
    assert.deepEqual(rows, ['Allow', 'Reject'], "the agent's options, in its order");
    // The request names no title; the agent reported the tool call as "Edit file" just before.
    assert.equal(await pick.locator('input').getAttribute('placeholder'), 'Allow "Edit file"? (Escape cancels)');
    await screenshot(page, '09-permission-pick');
    await pick.locator('.quick-input-list .monaco-list-row', { hasText: 'Reject' }).click();
    const answered = await waitForNotification(page, /^Tether: the agent answered \(end_turn\): permission: reject$/, 30_000);
    console.log(answered);

    // Escape: the answer is cancelled and the agent ends the turn cancelled.
    await ask('run the tests again');
    await page.keyboard.press('Escape');
    const cancelled = await waitForNotification(page, /^Tether: the agent answered \(cancelled\)/, 30_000);
    await screenshot(page, '10-permission-cancelled');
    console.log(cancelled);
  });
});
