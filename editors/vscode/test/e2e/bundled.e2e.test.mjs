// The per-platform package as a user installs it (README.md, "Install"): the linux-x64 .vsix
// that `cargo xtask dist` builds, installed into a real VS Code (code-server 4.100.3) on a
// machine with no `tether` on PATH and no tether.serverPath, must start the server it carries
// in server/ and run a session with it: the start-up resume starts nothing (R-RESUME-11), then
// the first prompt starts a session on the scripted agent and its answer reaches the session view.
//
// Run by tests/dist/run.sh after the dist build, as
//   TETHER_DIST_VSIX=<checkout>/target/dist/tether-<version>-linux-x64.vsix \
//     node --test test/e2e/bundled.e2e.test.mjs
// Prerequisites: scripts/install-e2e.sh, TETHER_SCRIPTED_AGENT (the agent; default
// <repo>/target/debug/tether-scripted-agent). A missing one fails the test, naming it.
import { strict as assert } from 'node:assert';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import {
  extensionId,
  findLog,
  findLogs,
  openBrowser,
  requireExecutable,
  requireHarness,
  runCommand,
  screenshot,
  scriptedAgentBin,
  sessionViewFrame,
  startCodeServer,
  waitForStatus,
} from './harness.mjs';

const vsix = process.env.TETHER_DIST_VSIX;
const cleanups = [];
after(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

function tempDir(name) {
  const d = mkdtempSync(path.join(tmpdir(), `tether-e2e-${name}-`));
  cleanups.push(async () => rmSync(d, { recursive: true, force: true }));
  return d;
}

/** PATH without any folder that holds a `tether`: the bundled server must be the one found. */
function pathWithoutTether(envPath) {
  return (envPath ?? '')
    .split(':')
    .filter((dir) => dir !== '' && !existsSync(path.join(dir, 'tether')))
    .join(':');
}

describe('the linux-x64 package with its bundled server (code-server 4.100.3)', { timeout: 300_000 }, () => {
  it('starts server/tether with no tether.serverPath and no tether on PATH, and runs a prompt turn', async () => {
    assert.ok(vsix, 'TETHER_DIST_VSIX names the per-platform package to install (tests/dist/run.sh sets it)');
    await requireHarness(vsix);
    requireExecutable(scriptedAgentBin, 'the scripted agent (env TETHER_SCRIPTED_AGENT)', 'build it with `cargo build -p tether-host --bin tether-scripted-agent`');

    const agentDir = tempDir('bundled-agent');
    const script = path.join(agentDir, 'script.json');
    writeFileSync(script, JSON.stringify({ loadSession: true, resume: true, stateDir: path.join(agentDir, 'state'), faults: [], reply: 'hello from the bundled server' }));
    const workspace = tempDir('bundled-ws');
    const PATH = pathWithoutTether(process.env.PATH);
    const cs = await startCodeServer({
      name: 'bundled',
      vsix,
      workspace,
      // No tether.serverPath: the setting is absent, as after a fresh install.
      settings: {
        'tether.persistence.directory': tempDir('bundled-storage'),
        'tether.agent.name': 'scripted',
        'tether.agent.command': scriptedAgentBin,
        'tether.agent.args': [script],
        'tether.resumeOnStartup': true,
      },
      env: { PATH, TETHER_BIN: undefined },
    });
    cleanups.push(cs.stop);
    const { browser, page } = await openBrowser(cs.folderUrl);
    cleanups.push(() => browser.close());
    try {
      // Installed as the per-platform package, with its server executable.
      const folders = readdirSync(cs.dirs.extensions).filter((d) => d.startsWith(`${extensionId}-`));
      assert.equal(folders.length, 1, `one ${extensionId} in ${cs.dirs.extensions}: ${folders}`);
      const bundled = path.join(cs.dirs.extensions, folders[0], 'server', 'tether');
      assert.ok(existsSync(bundled), `${bundled} exists`);

      await waitForStatus(page, /^\s*Tether\s*$/, 60_000);
      const logFile = () => readFileSync(findLog(cs.dirs.userData, 'Tether.log') ?? '/dev/null', 'utf8');
      const logShows = async (re, timeout) => {
        const deadline = Date.now() + timeout;
        while (Date.now() < deadline && !re.test(logFile())) await new Promise((r) => setTimeout(r, 100));
        return logFile();
      };
      // A fresh workspace: the start-up resume finds nothing and starts no agent (R-RESUME-11).
      const log = await logShows(/result: nothingToResume /, 30_000);
      assert.ok(log.includes(`server: ${bundled} (from bundled)`), `the log names the bundled server:\n${log}`);
      assert.match(log, /server tether \d+\.\d+\.\d+ ready/);
      assert.doesNotMatch(log, /differs from this extension's version|speaks Tether protocol/);
      assert.match(log, /result: nothingToResume /, 'the start-up resume answered nothingToResume');

      // The prompt starts a session on the scripted agent, then runs its turn.
      await runCommand(page, 'Tether: Send Prompt');
      await page.locator('.quick-input-widget', { hasText: 'Tether: Send Prompt' }).waitFor({ timeout: 10_000 });
      await page.locator('.quick-input-widget input').fill('say hello');
      await page.keyboard.press('Enter');
      const view = await sessionViewFrame(page, 30_000);
      await view.locator('.turn.agent', { hasText: 'hello from the bundled server' }).waitFor({ timeout: 30_000 });
      assert.match(logFile(), /result: started /, 'the prompt started a session on the scripted agent');
      await screenshot(page, 'dist-bundled-server');
    } catch (err) {
      const shot = await screenshot(page, 'FAILED-bundled').catch((e) => `no screenshot: ${e}`);
      const tail = (file) => (file ? readFileSync(file, 'utf8').split('\n').slice(-60).join('\n') : '(none)');
      console.log(`--- failed; screenshot ${shot}`);
      console.log(`--- Tether.log (last 60 lines)\n${tail(findLogs(cs.dirs.userData, 'Tether.log').at(-1))}`);
      console.log(`--- tether-serve.log (last 60 lines)\n${tail(findLogs(cs.dirs.userData, 'tether-serve.log').at(-1))}`);
      throw err;
    }
  });
});
