/**
 * Tether for VS Code: starts `tether serve --stdio` with `vscode-languageclient`, declares
 * `capabilities.experimental.tether`, and hands every server message to the
 * `SessionController` (src/core), which says what to render. This file only wires.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import {
  LanguageClient,
  State,
  TransportKind,
  type ClientCapabilities,
  type FeatureState,
  type LanguageClientOptions,
  type ServerOptions,
  type StaticFeature,
} from 'vscode-languageclient/node';
import {
  forwardsToDaemon,
  initializationOptions,
  readSettings,
  redactedForLog,
  RESTART_KEYS,
  serverArgs,
  type TetherSettings,
} from './core/config';
import { HeldElsewhereError, SessionController, TurnDetachedError, type ShutdownReport } from './core/controller';
import { ServerMethods, type TetherClientCapabilities } from './core/protocol';
import { resolveServer } from './core/serverPath';
import { checkServer } from './core/serverVersion';
import { LocalStatus } from './core/status';
import { isMethodNotFound, type SessionPick } from './core/sessions';
import { TranscriptModel, type WebviewMessage } from './core/transcript';
import { chooseFolder, memoryKey, RESTRICTED_REASON, routeMessage, startGate } from './core/workspace';
import { SessionPanel, VIEW_TYPE } from './sessionPanel';
import { VscodeUi } from './vscodeUi';

/** The `workspaceState` key of the session the view shows (resumed after a window reload). */
const VIEW_SESSION_KEY = 'tether.viewSession';

/** How long deactivation waits for the `shutdown` persist before stopping the server. */
const SHUTDOWN_PERSIST_TIMEOUT_MS = 5_000;

/** Declares `capabilities.experimental.tether`: this client renders the dialog, banners and status itself. */
class TetherCapabilitiesFeature implements StaticFeature {
  fillClientCapabilities(capabilities: ClientCapabilities): void {
    const tether: TetherClientCapabilities = { recoveryDialog: true, banners: true, status: true };
    const experimental = (capabilities.experimental ?? {}) as Record<string, unknown>;
    capabilities.experimental = { ...experimental, tether };
  }
  initialize(): void {}
  getState(): FeatureState {
    return { kind: 'static' };
  }
  clear(): void {}
}

interface Running {
  logDir: string;
  /** The first start completed (later Starting → Running transitions are restarts). */
  started: boolean;
  client: LanguageClient;
  /** The controller of the folder the session view follows (`root`). */
  controller: SessionController;
  /** The folder the session view follows; `undefined` with no folder open. */
  root: string | undefined;
  /** Every folder's controller made so far (multi-root: one per folder the view followed). */
  byRoot: Map<string, SessionController>;
  /** Makes the controller of a folder. */
  make: (root: string | undefined) => SessionController;
  resumeOnStartup: boolean;
  countdown: ReturnType<typeof setInterval> | undefined;
}

let ui: VscodeUi | undefined;
let panel: SessionPanel | undefined;
let running: Running | undefined;
let starting: Promise<void> | undefined;
/** The settings the last start read (JSON), to tell a real change from a repeated event. */
let startedWith: string | undefined;
/** The folder the session view followed last: a restarted server keeps to it without asking again. */
let followed: string | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const output = vscode.window.createOutputChannel('Tether', { log: true });
  ui = new VscodeUi(output);
  panel = new SessionPanel(context.extensionUri, (line) => ui?.log(line));
  attachStopped();
  context.subscriptions.push(output, ui, panel);
  const sessionPanel = panel;
  context.subscriptions.push(
    vscode.window.registerWebviewPanelSerializer(VIEW_TYPE, {
      deserializeWebviewPanel: (restored: vscode.WebviewPanel) => {
        sessionPanel.revive(restored);
        return Promise.resolve();
      },
    }),
  );
  const pkg = context.extension.packageJSON as { version?: string };
  output.info(`Tether ${pkg.version ?? '?'} activating (VS Code ${vscode.version})`);
  ui.setStatus(LocalStatus.starting());

  context.subscriptions.push(
    vscode.commands.registerCommand('tether.showLogs', () => output.show(true)),
    vscode.commands.registerCommand('tether.resumeSession', async () => {
      if (!running) {
        await start(context);
        if (!running) {
          if (!vscode.workspace.isTrusted) notRunning();
          return;
        }
      }
      await running.controller.resume();
    }),
    // Restricted Mode: nothing started; trusting the workspace proceeds.
    vscode.workspace.onDidGrantWorkspaceTrust(() => {
      ui?.log('the workspace is trusted now: starting the Tether server');
      void start(context);
    }),
    // Multi-root: the session view follows the folder of the active editor.
    vscode.window.onDidChangeActiveTextEditor(() => follow()),
    vscode.workspace.onDidChangeWorkspaceFolders(() => follow()),
    vscode.commands.registerCommand('tether.clearSession', () => clearSession()),
    vscode.commands.registerCommand('tether.sendPrompt', () => sendPrompt()),
    vscode.commands.registerCommand('tether.openSession', () => panel?.open(false)),
    vscode.commands.registerCommand('tether.showSessions', () => showSessions()),
    vscode.commands.registerCommand('tether.continueHere', () => continueHere()),
    vscode.commands.registerCommand('tether.showBanners', () => showBanners()),
    vscode.workspace.onDidChangeConfiguration(async (e) => {
      // A change event's affectsConfiguration('tether') can be false although what this
      // window reads changed (a machine-scoped value appearing once VS Code has re-read the
      // settings files), so compare what the settings now say with what the last start read.
      const now = JSON.stringify(readSettings(setting).settings);
      const changed = now !== startedWith || RESTART_KEYS.some((k) => e.affectsConfiguration(k));
      if (!changed) return;
      if (!running && !starting) {
        ui?.log('Tether settings changed while no server runs: starting it with them');
        await start(context);
        return;
      }
      const answer = await vscode.window.showInformationMessage(
        'Tether settings changed. Restart the Tether server to apply them?',
        'Restart',
      );
      if (answer === 'Restart') {
        await stop();
        await start(context);
      }
    }),
  );

  await start(context);
}

/**
 * One `tether.*` setting as the user set it (folder, workspace or user/remote value), or
 * `undefined` when it is not set: src/core/config.ts applies the defaults, and tells a set
 * old name (deprecated) from one left alone.
 */
function setting(key: string): unknown {
  const config = vscode.workspace.getConfiguration('tether');
  const seen = config.inspect(key);
  if (!seen) return undefined;
  const explicit = seen.workspaceFolderValue ?? seen.workspaceValue ?? seen.globalValue;
  if (explicit !== undefined) return explicit;
  // A value get() merges from a layer inspect() does not list: still the user's.
  const value = config.get(key);
  return JSON.stringify(value) === JSON.stringify(seen.defaultValue) ? undefined : value;
}

export async function deactivate(): Promise<void> {
  await stop();
}

function start(context: vscode.ExtensionContext): Promise<void> {
  starting ??= doStart(context).finally(() => {
    starting = undefined;
  });
  return starting;
}

async function doStart(context: vscode.ExtensionContext): Promise<void> {
  if (!ui || running) return;
  const out = ui.output;
  // Restricted Mode: agents run shell tools, so an untrusted workspace starts no server and
  // no agent; the view and the status item say why and what to do.
  const gate = startGate(vscode.workspace.isTrusted);
  if (!gate.start) {
    out.warn(`${gate.reason} (no server started)`);
    ui.setStatus(LocalStatus.restricted(gate.reason));
    attachStopped(gate.reason);
    return;
  }
  const { settings, problems, deprecations } = readSettings(setting);
  startedWith = JSON.stringify(settings);
  for (const d of deprecations) out.warn(d);
  for (const p of problems) out.warn(p);
  if (problems.length > 0) void vscode.window.showWarningMessage(`Tether: ${problems.join('; ')}`);

  const server = resolveServer({
    configured: settings.server.path,
    extensionPath: context.extensionPath,
    platform: process.platform,
    envPath: process.env.PATH,
  });
  if (!server.ok) {
    // Where VS Code looked for the setting: tells a missing setting from one this window
    // does not read. In a remote window (Remote-SSH, WSL, code-server) VS Code ignores local
    // user values of machine-scoped settings such as tether.server.path; they belong in the
    // Remote settings.
    const seen = vscode.workspace.getConfiguration('tether').inspect('server.path');
    const remote = vscode.env.remoteName;
    const hint =
      remote !== undefined && !settings.server.path && seen?.globalValue === undefined
        ? ` In this remote window (${remote}) tether.server.path is read from the Remote settings, not from your local User settings.`
        : '';
    out.error(server.error + hint);
    out.info(
      `tether.server.path as this window sees it: ${JSON.stringify({ remoteName: remote, global: seen?.globalValue, workspace: seen?.workspaceValue, folder: seen?.workspaceFolderValue, default: seen?.defaultValue })}`,
    );
    ui.setStatus(LocalStatus.serverUnavailable(server.error));
    void vscode.window.showErrorMessage(`Tether: ${server.error}${hint}`, 'Open Settings', 'Show Logs').then((a) => {
      if (a === 'Open Settings') void vscode.commands.executeCommand('workbench.action.openSettings', 'tether.server.path');
      if (a === 'Show Logs') out.show(true);
    });
    return;
  }
  const daemon = forwardsToDaemon(settings, process.env);
  out.info(
    `server: ${server.command} (from ${server.source}); tether.server.remote=${settings.server.remote}` +
      `${daemon ? ' (forwarding to the Tether daemon)' : ' (in process)'}`,
  );

  fs.mkdirSync(context.logUri.fsPath, { recursive: true });
  const logFile = path.join(context.logUri.fsPath, 'tether-serve.log');
  out.info(`server log file: ${logFile}`);
  const serverOptions: ServerOptions = {
    command: server.command,
    // TransportKind.stdio makes the client append `--stdio`.
    args: serverArgs(settings, logFile),
    transport: TransportKind.stdio,
  };
  const initOptions = initializationOptions(settings);
  out.info(`initializationOptions: ${JSON.stringify(redactedForLog(initOptions))}`);
  const clientOptions: LanguageClientOptions = {
    documentSelector: [],
    outputChannel: out,
    initializationOptions: initOptions,
    initializationFailedHandler: (err) => {
      out.error(`initialize failed: ${String(err)}`);
      return false;
    },
  };
  const client = new LanguageClient('tether', 'Tether', serverOptions, clientOptions);
  client.registerFeature(new TetherCapabilitiesFeature());

  const ui0 = ui;
  const make = (root: string | undefined): SessionController => {
    // Each folder of a multi-root workspace remembers its own view session.
    const key = root === undefined ? VIEW_SESSION_KEY : memoryKey(VIEW_SESSION_KEY, root, folderPaths().length);
    return new SessionController(
      ui0,
      {
        request: (method, params) => client.sendRequest(method, params),
        notify: (method, params) => void client.sendNotification(method, params).catch((err: unknown) => ui?.log(`${method}: ${String(err)}`)),
      },
      {
        workspaceRoot: root,
        persistenceEnabled: settings.persistence.enabled,
        ...(panel ? { view: panel } : {}),
        daemon,
        memory: {
          get: () => context.workspaceState.get<unknown>(key),
          set: (value) =>
            void Promise.resolve(context.workspaceState.update(key, value)).catch((err: unknown) =>
              ui?.log(`remembering the view's session failed: ${errorText(err)}`),
            ),
        },
      },
    );
  };
  const root = await resolveFolder(followed);
  followed = root;
  if (root !== undefined && folderPaths().length > 1) out.info(`the session view follows ${root}`);
  const controller = make(root);
  const byRoot = new Map<string, SessionController>();
  if (root !== undefined) byRoot.set(root, controller);
  const run: Running = {
    logDir: context.logUri.fsPath,
    started: false,
    client,
    controller,
    root,
    byRoot,
    make,
    resumeOnStartup: settings.resumeOnStartup,
    countdown: undefined,
  };
  wire(run);

  try {
    await client.start();
  } catch (err) {
    out.error(`could not start ${server.command}: ${String(err)}`);
    ui.setStatus(LocalStatus.serverUnavailable(`tether serve did not start: ${String(err)}`));
    void vscode.window.showErrorMessage(`Tether: the server did not start (${String(err)})`, 'Show Logs').then((a) => {
      if (a) out.show(true);
    });
    void client.dispose().catch(() => undefined);
    return;
  }
  const init = client.initializeResult;
  const serverVersion = init?.serverInfo?.version;
  out.info(`server ${init?.serverInfo?.name ?? '?'} ${serverVersion ?? ''} ready`);
  const extensionVersion = (context.extension.packageJSON as { version?: string }).version ?? '?';
  const verdict = checkServer(
    {
      version: serverVersion,
      protocolVersion: (init?.capabilities.experimental as { tether?: { protocolVersion?: unknown } } | undefined)?.tether?.protocolVersion,
    },
    extensionVersion,
    server.source,
  );
  if (!verdict.ok) {
    // Another protocol: its messages may mean something else, so do not run a session on it.
    out.error(`${server.command}: ${verdict.error}`);
    ui.setStatus(LocalStatus.serverUnavailable(verdict.error));
    void vscode.window.showErrorMessage(`Tether: ${verdict.error}`, 'Open Settings', 'Show Logs').then((a) => {
      if (a === 'Open Settings') void vscode.commands.executeCommand('workbench.action.openSettings', 'tether.server.path');
      if (a === 'Show Logs') out.show(true);
    });
    void client.stop().catch(() => undefined);
    return;
  }
  if (verdict.note !== undefined) out.info(verdict.note);
  running = run;
  run.started = true;
  panel?.attach({ fullState: () => controller.transcript.fullState(), onMessage: (m) => onViewMessage(controller, m) });
  controller.setLiveIdle();
  ui.setStatus(LocalStatus.idle());
  // Without a folder there is nothing to resume; say so only when asked (the command).
  // `create: false`: only a session that exists is resumed; opening a folder never starts an
  // agent (R-RESUME-11). The first prompt, or "Tether: Resume Session", starts one.
  if (settings.resumeOnStartup && root !== undefined) void controller.resume({ create: false });
  logSettings(settings);
  // An editor of another folder may have become active meanwhile.
  follow();
}

/** The workspace folders' paths, in order. */
function folderPaths(): string[] {
  return (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);
}

/** The workspace folder of the active editor's file, if it lies in one. */
function activeEditorFolder(): string | undefined {
  const doc = vscode.window.activeTextEditor?.document;
  return doc ? vscode.workspace.getWorkspaceFolder(doc.uri)?.uri.fsPath : undefined;
}

/**
 * The folder whose session the view shows at start-up: the active editor's, else the only
 * one; with several folders and no active editor, the user picks one (dismissing the pick
 * takes the first folder, until an editor of another folder becomes active).
 */
async function resolveFolder(current: string | undefined): Promise<string | undefined> {
  const choice = chooseFolder({ folders: folderPaths(), activeEditorFolder: activeEditorFolder(), current });
  switch (choice.kind) {
    case 'none':
      return undefined;
    case 'folder':
      return choice.root;
    case 'ask': {
      const picked = await vscode.window.showQuickPick(
        choice.folders.map((f) => ({ label: path.basename(f), description: f, root: f })),
        { title: 'Tether: Choose Folder', placeHolder: 'No editor is active: pick the folder whose agent session Tether shows' },
      );
      if (picked) return picked.root;
      ui?.log(`no folder picked: the session view follows ${choice.folders[0]} (the first folder) until an editor of another folder is active`);
      return choice.folders[0];
    }
  }
}

/**
 * Multi-root: when the active editor's file lies in another folder (or the followed folder
 * left the workspace and one remains), the session view switches to that folder's session.
 * Each folder keeps its own controller, so switching back shows its session as it was; a
 * folder shown for the first time resumes only a session that exists (`create: false`).
 */
function follow(): void {
  const run = running;
  if (!run) return;
  const choice = chooseFolder({ folders: folderPaths(), activeEditorFolder: activeEditorFolder(), current: run.root });
  // Switch only to a definite folder: an editor change never opens a quick pick.
  if (choice.kind !== 'folder' || choice.root === run.root) return;
  const root = choice.root;
  ui?.log(`the session view follows ${root} (${choice.why === 'activeEditor' ? 'the active editor is in it' : 'the only folder left'})`);
  let controller = run.byRoot.get(root);
  const fresh = controller === undefined;
  if (!controller) {
    controller = run.make(root);
    run.byRoot.set(root, controller);
  }
  run.root = root;
  followed = root;
  run.controller = controller;
  const c = controller;
  panel?.attach({ fullState: () => c.transcript.fullState(), onMessage: (m) => onViewMessage(c, m) });
  if (fresh) {
    c.setLiveIdle();
    ui?.setStatus(LocalStatus.idle());
    if (run.resumeOnStartup) void c.resume({ create: false });
  } else {
    ui?.setStatus(c.sessionId ? LocalStatus.live(c.sessionId, false) : LocalStatus.idle());
  }
}

/** The controller a server message is for: the folder's that knows its session, else the followed one. */
function controllerFor(run: Running, params: unknown): SessionController {
  if (run.byRoot.size < 2 || run.root === undefined) return run.controller;
  const folders = [...run.byRoot].map(([root, c]) => ({ root, sessionIds: [c.sessionId, c.transcript.sessionId] }));
  return run.byRoot.get(routeMessage(folders, params, run.root)) ?? run.controller;
}

/** Every controller of the run (one per folder followed so far). */
function controllersOf(run: Running): SessionController[] {
  return run.byRoot.size > 0 ? [...run.byRoot.values()] : [run.controller];
}

/** Says why no server runs: Restricted Mode (with the way out), or see the logs. */
function notRunning(): void {
  if (!vscode.workspace.isTrusted) {
    void vscode.window.showWarningMessage(`Tether: ${RESTRICTED_REASON}`, 'Manage Workspace Trust').then((a) => {
      if (a) void vscode.commands.executeCommand('workbench.trust.manage');
    });
    return;
  }
  void vscode.window.showErrorMessage('Tether: the server is not running (see Tether: Show Logs).');
}

function wire(run: Running): void {
  const { client } = run;
  const to = (p: unknown) => controllerFor(run, p);
  // vscode-languageclient restarts a server that crashed (its default error handler); the
  // new process knows no live session, so resume again, the way start-up does. The first
  // start is doStart's.
  client.onDidChangeState((e) => {
    if (run.started && e.oldState === State.Starting && e.newState === State.Running && running === run) {
      for (const c of controllersOf(run)) void c.serverRestarted();
    }
  });
  client.onNotification(ServerMethods.status, (p: unknown) => {
    to(p).onStatus(p);
    if (run.controller.tick() && !run.countdown) {
      run.countdown = setInterval(() => {
        if (!run.controller.tick() && run.countdown) {
          clearInterval(run.countdown);
          run.countdown = undefined;
        }
      }, 1_000);
    }
  });
  client.onNotification(ServerMethods.restored, (p: unknown) => to(p).onRestored(p));
  client.onNotification(ServerMethods.banner, (p: unknown) => to(p).onBanner(p));
  client.onNotification(ServerMethods.bannerCleared, (p: unknown) => to(p).onBannerCleared(p));
  client.onNotification(ServerMethods.expired, (p: unknown) => to(p).onExpired(p));
  client.onNotification(ServerMethods.update, (p: unknown) => to(p).onUpdate(p));
  client.onNotification(ServerMethods.turnEnded, (p: unknown) => to(p).onTurnEnded(p));
  client.onNotification(ServerMethods.reattached, (p: unknown) => void to(p).onReattached(p));
  client.onNotification(ServerMethods.telemetry, (p: unknown) => ui?.log(`telemetry ${JSON.stringify(p)}`));
  // A question another editor answered (or that timed out) is closed here as a cancelled
  // turn closes it; the server ignores this editor's late answer (R-DAEMON-6).
  const settledElsewhere = new Map<number, () => void>();
  const questionSeq = (p: unknown): number | undefined => {
    const seq = (p as { questionSeq?: unknown } | null)?.questionSeq;
    return typeof seq === 'number' ? seq : undefined;
  };
  client.onNotification(ServerMethods.permissionResolved, (p: unknown) => {
    const seq = questionSeq(p);
    if (seq === undefined) return;
    settledElsewhere.get(seq)?.();
    settledElsewhere.delete(seq);
  });
  client.onRequest(ServerMethods.requestPermission, (p: unknown, token: vscode.CancellationToken) => {
    const seq = questionSeq(p);
    const closed = new Promise<void>((resolve) => {
      token.onCancellationRequested(() => resolve());
      if (seq !== undefined) settledElsewhere.set(seq, resolve);
    });
    return to(p).onPermissionRequest(p, closed).finally(() => {
      if (seq !== undefined) settledElsewhere.delete(seq);
    });
  });
}

/**
 * The session view while no server runs: an empty conversation that says so; with a
 * `restricted` reason, that the workspace is in Restricted Mode and how to trust it.
 */
function attachStopped(restricted?: string): void {
  const idle = new TranscriptModel(() => undefined);
  if (restricted === undefined) idle.serverStopped();
  else idle.restricted(restricted);
  panel?.attach({ fullState: () => idle.fullState(), onMessage: () => undefined });
}

/** What the session view's user did. */
function onViewMessage(controller: SessionController, m: WebviewMessage): void {
  switch (m.type) {
    case 'send':
      if (typeof m.text === 'string' && m.text.trim()) {
        controller
          .prompt(m.text)
          .catch((err: unknown) =>
            ui?.log(
              err instanceof TurnDetachedError || err instanceof HeldElsewhereError
                ? `prompt from the session view: ${err.message}`
                : `prompt from the session view failed: ${errorText(err)}`,
            ),
          );
      }
      return;
    case 'cancel':
      return controller.cancel();
    case 'loadOlder':
      void controller.loadOlder();
      return;
    case 'permission':
      return controller.answerPermission(m.requestId, m.optionId);
    case 'ready':
      return;
  }
}

async function stop(): Promise<void> {
  const run = running;
  running = undefined;
  if (!run) return;
  attachStopped();
  if (run.countdown) clearInterval(run.countdown);
  // Every folder's controller persists its session (one folder: just the one).
  await Promise.all(
    controllersOf(run).map(async (controller) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const report = await Promise.race([
        controller.shutdown(),
        new Promise<ShutdownReport>((resolve) => {
          timer = setTimeout(
            () => resolve({ sent: true, sessionId: controller.sessionId ?? '', error: `no answer within ${SHUTDOWN_PERSIST_TIMEOUT_MS} ms` }),
            SHUTDOWN_PERSIST_TIMEOUT_MS,
          );
        }),
      ]);
      if (timer) clearTimeout(timer);
      recordShutdown(run.logDir, report);
    }),
  );
  await run.client.stop().catch((err: unknown) => ui?.log(`stopping the server: ${String(err)}`));
}

async function clearSession(): Promise<void> {
  if (!running) {
    notRunning();
    return;
  }
  const answer = await vscode.window.showWarningMessage(
    'Clear the saved Tether session of this workspace?',
    {
      modal: true,
      detail: "Tether's cached transcript of this workspace is removed. The agent's own history is not touched.",
    },
    'Clear',
  );
  if (answer !== 'Clear') return;
  try {
    const removed = await running.controller.clear();
    if (removed === undefined) {
      void vscode.window.showInformationMessage('Tether: open a folder first; saved sessions belong to a workspace.');
    } else {
      void vscode.window.showInformationMessage(`Tether: removed ${removed} saved session${removed === 1 ? '' : 's'}.`);
    }
  } catch (err) {
    void vscode.window.showErrorMessage(`Tether: clearing the saved session failed: ${String(err)}`);
  }
}

async function sendPrompt(): Promise<void> {
  if (!running) {
    notRunning();
    return;
  }
  const text = await vscode.window.showInputBox({
    title: 'Tether: Send Prompt',
    prompt: 'A prompt for the agent of the live session (with none live, a session starts first)',
    ignoreFocusOut: true,
  });
  if (!text) return;
  // The answer streams into the session view.
  panel?.open(true);
  try {
    const { stopReason, stale } = await running.controller.prompt(text);
    ui?.log(`Send Prompt: the agent answered (${stopReason}${stale ? ', from the cache' : ''})`);
  } catch (err) {
    // The connection was lost while the turn runs in the daemon: not a failure; the view
    // says it is reconnecting and the re-attach ends the turn.
    if (err instanceof TurnDetachedError) ui?.log(`Send Prompt: ${err.message}`);
    // Another machine holds the session: the controller showed its message with "Continue Here".
    else if (err instanceof HeldElsewhereError) ui?.log(`Send Prompt: refused: ${err.message}`);
    else void vscode.window.showErrorMessage(`Tether: the prompt failed: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/**
 * "Tether: Continue Session Here" (R-SYNC-7): takes the session the view shows over from the
 * machine of the user's that holds it (`session/continueHere`, for the followed folder).
 */
async function continueHere(): Promise<void> {
  if (!running) {
    notRunning();
    return;
  }
  await running.controller.continueHere();
}

async function showSessions(): Promise<void> {
  const run = running;
  if (!run) {
    notRunning();
    return;
  }
  // Each outcome is logged too: a toast hides itself and leaves no trace in the log.
  ui?.log('Show Sessions: asking the server for the saved sessions (session/list)');
  let picks;
  try {
    picks = await run.controller.listSessions();
  } catch (err) {
    ui?.log(`Show Sessions: session/list failed: ${errorText(err)}`);
    void vscode.window.showErrorMessage(`Tether: listing the sessions failed: ${errorText(err)}`);
    return;
  }
  ui?.log(`Show Sessions: ${picks.length} saved session(s)`);
  if (picks.length === 0) {
    void vscode.window.showInformationMessage('Tether: this workspace has no saved sessions.');
    return;
  }
  const chosen = await pickSession(run.controller, picks);
  if (chosen) await run.controller.openSession(chosen);
}

/** Typing pauses this long before Show Sessions asks the server (`session/search`). */
const SEARCH_DEBOUNCE_MS = 150;

/**
 * The Show Sessions quick pick: the workspace's sessions (`listed`); as the user types, the
 * sessions whose text holds the words (`session/search`, R-INDEX-8), the snippet around the
 * match as detail. A server without `session/search` (-32601) leaves VS Code's own filter of
 * the list. Resolves to the chosen session's id.
 */
function pickSession(controller: SessionController, listed: SessionPick[]): Promise<string | undefined> {
  type Item = vscode.QuickPickItem & { sessionId: string };
  const items = (picks: SessionPick[], found: boolean): Item[] =>
    picks.map((p) => ({ label: p.label, description: p.description, detail: p.detail, sessionId: p.sessionId, alwaysShow: found }));
  return new Promise((resolve) => {
    const qp = vscode.window.createQuickPick<Item>();
    qp.title = 'Tether: Show Sessions';
    qp.placeholder = 'Open a saved session of this workspace, or type words to search every session of it';
    qp.matchOnDetail = true;
    qp.items = items(listed, false);
    let searching = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let asked = 0;
    qp.onDidChangeValue((value) => {
      if (timer) clearTimeout(timer);
      if (!searching) return;
      const query = value.trim();
      if (!query) {
        asked++;
        qp.busy = false;
        qp.items = items(listed, false);
        return;
      }
      timer = setTimeout(() => {
        const mine = ++asked;
        qp.busy = true;
        controller.searchSessions(query).then(
          (found) => {
            if (mine !== asked) return;
            qp.busy = false;
            qp.items = items(found, true);
          },
          (err: unknown) => {
            if (mine !== asked) return;
            qp.busy = false;
            if (isMethodNotFound(err)) searching = false;
            else ui?.log(`session/search failed: ${errorText(err)}`);
            qp.items = items(listed, false);
          },
        );
      }, SEARCH_DEBOUNCE_MS);
    });
    let chosen: string | undefined;
    qp.onDidAccept(() => {
      chosen = qp.selectedItems[0]?.sessionId;
      qp.hide();
    });
    qp.onDidHide(() => {
      if (timer) clearTimeout(timer);
      qp.dispose();
      resolve(chosen);
    });
    qp.show();
  });
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function showBanners(): void {
  running?.controller.reannounceBanners();
}

/**
 * Appends one JSON line about the shutdown persist to `<extension log folder>/tether-shutdown.log`,
 * synchronously: the output channel writes asynchronously and its last lines are lost when
 * the extension host exits right after deactivation.
 */
function recordShutdown(logDir: string, report: ShutdownReport): void {
  const line = JSON.stringify({ timeUtc: new Date().toISOString(), ...report });
  ui?.log(`deactivate: ${line}`);
  try {
    fs.appendFileSync(path.join(logDir, 'tether-shutdown.log'), `${line}\n`);
  } catch {
    // The record is a diagnostic; failing to write it must not block deactivation.
  }
}

function logSettings(s: TetherSettings): void {
  ui?.output.info(
    `settings: persistence=${s.persistence.enabled} encrypt=${s.persistence.encrypt} agents=${s.agents ? Object.keys(s.agents).join(',') : '(server default)'} defaultAgent=${s.defaultAgent ?? '(server default)'}`,
  );
}
