// The per-platform package as a person first meets it (README.md, "Install"; R-RESUME-11,
// R-DAEMON-1, R-DAEMON-4): the linux-x64 .vsix that `cargo xtask dist` builds, installed into
// a real VS Code (code-server 4.100.3) with a fresh profile (no tether.* setting at all), on a
// machine with no `tether` on PATH and the agent installed as a user installs it
// (`claude-agent-acp` on PATH; here the scripted agent under that name). Then:
//   1. three folders with no Tether history are opened, each in its own window: each start-up
//      resume answers nothingToResume through the per-user daemon the bundled server starts;
//      no agent process starts and nothing shows an error;
//   2. the session view, opened in the first window, and a prompt sent from it start one agent,
//      and its answer reaches the view;
//   3. Neovim, running the README's snippet verbatim on that folder with another `tether` file
//      first on PATH, attaches to that live session through the same daemon and runs a turn
//      of it, which the VS Code view shows too;
//   4. `tether daemon status` from a shell, with that other file, lists the session in the one
//      daemon, whose binary is the package's bundled server.
//
// Run by tests/dist/run.sh after the dist build, as
//   TETHER_DIST_VSIX=<checkout>/target/dist/tether-<version>-linux-x64.vsix \
//   TETHER_BIN=<another tether file of the same protocol> \
//     node --test test/e2e/bundled.e2e.test.mjs
// Prerequisites: scripts/install-e2e.sh, nvim (Debian's neovim), TETHER_SCRIPTED_AGENT (the
// agent; default <repo>/target/debug/tether-scripted-agent), TETHER_BIN (default
// <repo>/target/debug/tether). A missing one fails the test, naming it.
import { strict as assert } from 'node:assert';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import {
  daemonCli,
  extensionId,
  findLogs,
  notificationTexts,
  openBrowser,
  pidsWithArg,
  repoRoot,
  requireExecutable,
  requireHarness,
  runCommand,
  screenshot,
  scriptedAgentBin,
  sessionViewFrame,
  startCodeServer,
  tetherBin,
  waitForStatus,
  waitGone,
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

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Waits until `fn()` is truthy (polled every 100 ms); returns its value, or throws `what`. */
async function until(fn, timeout, what) {
  const deadline = Date.now() + timeout;
  for (;;) {
    const v = fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`${what} (after ${timeout} ms)`);
    await sleep(100);
  }
}

/** Runs `nvim` headless with `args` in `cwd` and `env`; resolves `{status, output}` when it exits. */
function runNvim(args, cwd, env, timeout) {
  return new Promise((resolve) => {
    const child = spawn('nvim', ['--headless', '-u', 'NONE', ...args], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d) => (output += String(d)));
    child.stderr.on('data', (d) => (output += String(d)));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeout);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ status: code, signal, output });
    });
  });
}

describe('the linux-x64 package as a person first meets it (code-server 4.100.3)', { timeout: 420_000 }, () => {
  it('three new folders start no agent; a prompt starts one; Neovim and a shell find it in the one daemon', async () => {
    assert.ok(vsix, 'TETHER_DIST_VSIX names the per-platform package to install (tests/dist/run.sh sets it)');
    await requireHarness(vsix);
    requireExecutable(scriptedAgentBin, 'the scripted agent (env TETHER_SCRIPTED_AGENT)', 'build it with `cargo build -p tether-host --bin tether-scripted-agent`');
    requireExecutable(tetherBin, 'another tether for Neovim and the shell (env TETHER_BIN)', 'build it with `cargo build -p tether`');
    assert.equal(spawnSync('nvim', ['--version']).status, 0, 'nvim is missing: apt-get install neovim');

    // The agent as a user has it: `claude-agent-acp` (the built-in agent's command) in
    // ~/.local/bin, which the login shell's ~/.profile puts on PATH, as Debian's default
    // profile does: VS Code's remote extension host takes PATH from a login shell, so that is
    // where the server looks. Each start is recorded, so "no agent started" is a file that
    // stays absent.
    const agentDir = tempDir('bundled-agent');
    const script = path.join(agentDir, 'script.json');
    const starts = path.join(agentDir, 'starts.log');
    writeFileSync(script, JSON.stringify({ loadSession: true, resume: true, stateDir: path.join(agentDir, 'state'), faults: [] }));
    const home = tempDir('bundled-home');
    const agentBin = path.join(home, '.local', 'bin');
    mkdirSync(agentBin, { recursive: true });
    writeFileSync(path.join(home, '.profile'), 'if [ -d "$HOME/.local/bin" ]; then PATH="$HOME/.local/bin:$PATH"; fi\n');
    writeFileSync(
      path.join(agentBin, 'claude-agent-acp'),
      `#!/bin/sh\necho "$$ $(pwd)" >> '${starts}'\nexec '${scriptedAgentBin}' '${script}' "$@"\n`,
    );
    chmodSync(path.join(agentBin, 'claude-agent-acp'), 0o755);
    const agentPids = () => pidsWithArg(script);

    const folders = [1, 2, 3].map((n) => tempDir(`bundled-ws${n}`));
    const PATH = pathWithoutTether(process.env.PATH);
    const cs = await startCodeServer({
      name: 'bundled',
      vsix,
      workspace: folders[0],
      settings: {}, // a fresh profile: no tether.* setting
      // The default: `tether serve --stdio` forwards to the per-user daemon (in this run's own
      // XDG_RUNTIME_DIR), which the first window's bundled server starts.
      env: { HOME: home, PATH, TETHER_BIN: undefined, TETHER_REMOTE: undefined },
    });
    const daemonEnv = cs.env;
    cleanups.push(async () => {
      await cs.stop();
      daemonCli(['stop'], daemonEnv);
    });
    const installed = readdirSync(cs.dirs.extensions).filter((d) => d.startsWith(`${extensionId}-`));
    assert.equal(installed.length, 1, `one ${extensionId} in ${cs.dirs.extensions}: ${installed}`);
    const bundled = path.join(cs.dirs.extensions, installed[0], 'server', 'tether');
    assert.ok(existsSync(bundled), `${bundled} exists`);
    assert.notEqual(path.resolve(tetherBin), bundled, 'Neovim and the shell run another tether file');

    const { browser, page } = await openBrowser(cs.folderUrl);
    cleanups.push(() => browser.close());
    const pages = [page];
    const tetherLogs = () => findLogs(cs.dirs.userData, 'Tether.log').map((f) => readFileSync(f, 'utf8'));
    try {
      // 1. Three folders with no history, one window each.
      for (const folder of folders.slice(1)) {
        const p = await page.context().newPage();
        await p.goto(`${cs.url}/?folder=${encodeURIComponent(folder)}`);
        await p.locator('.monaco-workbench').waitFor({ timeout: 60_000 });
        pages.push(p);
      }
      for (const p of pages) await waitForStatus(p, /^\s*Tether\s*$/, 90_000);
      const answered = await until(
        () => {
          const logs = tetherLogs().filter((l) => /result: nothingToResume /.test(l));
          return logs.length >= 3 && logs;
        },
        90_000,
        `three windows' start-up resumes answered nothingToResume; Tether.log files: ${tetherLogs().length}`,
      );
      for (const log of answered) {
        assert.match(log, new RegExp(`server: ${bundled.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\(from bundled\\)`), `each window runs the bundled server:\n${log}`);
        assert.doesNotMatch(log, /result: (started|failed)|resume failed/, `no window started or failed a session:\n${log}`);
      }
      assert.equal(existsSync(starts), false, `no agent started (${starts}: ${existsSync(starts) ? readFileSync(starts, 'utf8') : ''})`);
      assert.deepEqual(agentPids(), [], 'no agent process');
      for (const p of pages) {
        assert.deepEqual((await notificationTexts(p)).filter((t) => /Tether|agent|error|fail/i.test(t)), [], 'no notification of Tether, no error');
        assert.equal(await p.locator('.monaco-dialog-box').count(), 0, 'no dialog');
      }
      const idle = JSON.parse(daemonCli(['status', '--json'], daemonEnv).stdout || 'null');
      assert.ok(idle, 'one daemon answers `tether daemon status`');
      assert.equal(idle.clients, 3, `the three windows are the daemon's editors: ${JSON.stringify(idle)}`);
      assert.deepEqual(idle.sessions, [], 'no live session');
      await screenshot(page, 'dist-three-folders-idle');

      // 2. The view, opened by the person, and a prompt sent from it: one agent starts.
      await runCommand(page, 'Tether: Open Session');
      const view = await sessionViewFrame(page, 60_000);
      await view.locator('#send:not([disabled])').waitFor({ timeout: 30_000 });
      await view.locator('#prompt').fill('say hello');
      await view.locator('#prompt').press('Enter');
      await view.locator('.turn.agent', { hasText: 'echo: say hello' }).waitFor({ timeout: 60_000 });
      const started = readFileSync(starts, 'utf8').trim().split('\n');
      assert.equal(started.length, 1, `one agent started: ${started}`);
      const live = JSON.parse(daemonCli(['status', '--json'], daemonEnv).stdout);
      assert.equal(live.sessions.length, 1, `one live session: ${JSON.stringify(live.sessions)}`);
      const sessionId = live.sessions[0].sessionId;
      assert.equal(path.resolve(live.sessions[0].workspace), path.resolve(folders[0]), 'of the first folder');
      await screenshot(page, 'dist-first-prompt');

      // 3. Neovim, the README snippet verbatim, on the first folder, another tether first on PATH.
      const nvimBin = tempDir('bundled-nvim-bin');
      spawnSync('ln', ['-s', path.resolve(tetherBin), path.join(nvimBin, 'tether')]);
      const nvim = await runNvim(
        ['-c', `luafile ${path.join(repoRoot, 'tests', 'nvim', 'attach_live_test.lua')}`],
        folders[0],
        {
          ...daemonEnv,
          PATH: `${nvimBin}:${agentBin}:${PATH}`,
          TETHER_REPO: repoRoot,
          TETHER_TEST_DIR: tempDir('bundled-nvim'),
          TETHER_EXPECT_SESSION: sessionId,
          TETHER_NVIM_PROMPT: 'hello from neovim',
        },
        180_000,
      );
      console.log(`--- Neovim (tests/nvim/attach_live_test.lua):\n${nvim.output}`);
      assert.equal(nvim.status, 0, `Neovim's checks (tests/nvim/attach_live_test.lua):\n${nvim.output}`);
      // Neovim's turn reached the VS Code window attached to the same session.
      await view.locator('.turn.agent', { hasText: 'echo: hello from neovim' }).waitFor({ timeout: 30_000 });
      assert.equal(readFileSync(starts, 'utf8').trim().split('\n').length, 1, 'still one agent: Neovim attached, it started none');
      await screenshot(page, 'dist-neovim-turn-in-vscode');

      // 4. A shell, with the other tether file: the one daemon, the bundled binary, the session.
      const text = daemonCli(['status'], daemonEnv);
      assert.equal(text.status, 0, `tether daemon status: ${text.stderr}`);
      console.log(`--- tether daemon status (${tetherBin}):\n${text.stdout}`);
      assert.ok(text.stdout.includes(sessionId), `\`tether daemon status\` lists ${sessionId}:\n${text.stdout}`);
      assert.ok(text.stdout.includes(`binary ${bundled}`), `its daemon runs the bundled server:\n${text.stdout}`);
      const status = JSON.parse(daemonCli(['status', '--json'], daemonEnv).stdout);
      assert.deepEqual(status.sessions.map((s) => s.sessionId), [sessionId], 'one live session, the one Neovim joined');

      // The end: code-server, then the daemon; no agent is left behind.
      await browser.close();
      await cs.kill();
      const stopped = daemonCli(['stop'], daemonEnv);
      assert.equal(stopped.status, 0, `tether daemon stop: ${stopped.stdout}${stopped.stderr}`);
      assert.deepEqual(await waitGone(agentPids()), [], 'no agent process is left');
    } catch (err) {
      const shot = await screenshot(page, 'FAILED-bundled').catch((e) => `no screenshot: ${e}`);
      const tail = (file) => (file ? readFileSync(file, 'utf8').split('\n').slice(-60).join('\n') : '(none)');
      console.log(`--- failed; screenshot ${shot}`);
      for (const f of findLogs(cs.dirs.userData, 'Tether.log')) console.log(`--- ${f} (last 60 lines)\n${tail(f)}`);
      console.log(`--- tether-serve.log (last 60 lines)\n${tail(findLogs(cs.dirs.userData, 'tether-serve.log').at(-1))}`);
      throw err;
    }
  });
});
