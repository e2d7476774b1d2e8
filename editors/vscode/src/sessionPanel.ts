/**
 * The session view: a webview panel that draws the `TranscriptModel`'s ops. The glue only:
 * the HTML shell with its Content-Security-Policy, posting ops (batched per tick), and
 * relaying the webview's messages to the controller. What is drawn and how is
 * `src/core/transcript.ts` and `src/core/render.ts`, run inside the webview by
 * `dist/webview.js`.
 */
import { randomBytes } from 'node:crypto';
import * as vscode from 'vscode';
import type { ViewPort } from './core/controller';
import type { ViewOp, WebviewMessage } from './core/transcript';

export const VIEW_TYPE = 'tether.session';

export interface SessionViewHost {
  /** Every op that rebuilds the view (a new or reloaded webview). */
  fullState(): ViewOp[];
  onMessage(m: WebviewMessage): void;
}

export class SessionPanel implements ViewPort, vscode.Disposable {
  private panel: vscode.WebviewPanel | undefined;
  private ready = false;
  private queue: ViewOp[] = [];
  private flushQueued = false;
  private host: SessionViewHost | undefined;
  private disposed = false;

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly log: (line: string) => void,
  ) {}

  /** The controller (set once it exists; the panel may outlive a server restart). */
  attach(host: SessionViewHost | undefined): void {
    this.host = host;
    if (this.panel && this.ready && host) this.resync();
  }

  post(op: ViewOp): void {
    if (!this.panel || !this.ready) return; // a newly ready webview gets the full state
    // A reset makes the ops queued before it moot.
    if (op.op === 'reset') this.queue = [];
    this.queue.push(op);
    if (this.flushQueued) return;
    this.flushQueued = true;
    queueMicrotask(() => this.flush());
  }

  reveal(): void {
    this.open(true);
  }

  /** Opens the view, or brings it forward; `preserveFocus` keeps the editor's focus. */
  open(preserveFocus = false): void {
    if (this.disposed) return;
    if (this.panel) {
      this.panel.reveal(undefined, preserveFocus);
      return;
    }
    const panel = vscode.window.createWebviewPanel(
      VIEW_TYPE,
      'Tether Session',
      { viewColumn: vscode.ViewColumn.Beside, preserveFocus },
      { ...this.webviewOptions(), retainContextWhenHidden: true },
    );
    this.setup(panel);
  }

  /**
   * The panel VS Code kept across a window reload (`registerWebviewPanelSerializer`): it is
   * the view again, drawn from the model's current state. Without this the reloaded window
   * shows an empty tab that nothing draws into.
   */
  revive(panel: vscode.WebviewPanel): void {
    if (this.disposed || this.panel) {
      panel.dispose();
      return;
    }
    panel.webview.options = this.webviewOptions();
    this.setup(panel);
  }

  private webviewOptions(): vscode.WebviewOptions & vscode.WebviewPanelOptions {
    return {
      enableScripts: true,
      enableCommandUris: false,
      localResourceRoots: [vscode.Uri.joinPath(this.extensionUri, 'dist'), vscode.Uri.joinPath(this.extensionUri, 'media')],
    };
  }

  private setup(panel: vscode.WebviewPanel): void {
    this.panel = panel;
    this.ready = false;
    panel.webview.html = this.html(panel.webview);
    panel.webview.onDidReceiveMessage((m: unknown) => this.receive(m));
    panel.onDidDispose(() => {
      if (this.panel === panel) {
        this.panel = undefined;
        this.ready = false;
        this.queue = [];
      }
    });
  }

  private receive(m: unknown): void {
    if (typeof m !== 'object' || m === null || typeof (m as { type?: unknown }).type !== 'string') return;
    const msg = m as WebviewMessage;
    if (msg.type === 'ready') {
      this.ready = true;
      this.resync();
      return;
    }
    this.host?.onMessage(msg);
  }

  private resync(): void {
    this.queue = this.host ? this.host.fullState() : [];
    this.flush();
  }

  private flush(): void {
    this.flushQueued = false;
    if (!this.panel || this.queue.length === 0) return;
    const ops = this.queue;
    this.queue = [];
    this.panel.webview.postMessage({ ops }).then(undefined, (err: unknown) => this.log(`session view: post failed: ${String(err)}`));
  }

  private html(webview: vscode.Webview): string {
    const nonce = randomBytes(16).toString('base64');
    const script = webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, 'dist', 'webview.js'));
    const style = webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, 'media', 'session.css'));
    const csp = [
      "default-src 'none'",
      `style-src ${webview.cspSource}`,
      `script-src 'nonce-${nonce}'`,
      `font-src ${webview.cspSource}`,
      `img-src ${webview.cspSource}`,
    ].join('; ');
    return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${style.toString()}">
<title>Tether Session</title>
</head>
<body>
<header class="top">
  <div id="status" role="status" aria-live="polite"></div>
  <div id="stale" class="stale-banner" role="note" hidden>Saved transcript: the agent has not confirmed it yet.</div>
</header>
<main id="log" tabindex="0" aria-label="Conversation">
  <div id="older" role="status" aria-live="polite" hidden></div>
  <div id="items" role="log" aria-live="polite" aria-relevant="additions"></div>
</main>
<section id="permission" role="group" aria-labelledby="perm-title" hidden></section>
<form id="composer" aria-label="Prompt">
  <label for="prompt" class="visually-hidden">Prompt for the agent</label>
  <textarea id="prompt" rows="3" placeholder="Ask the agent…" aria-describedby="prompt-reason"></textarea>
  <div class="composer-row">
    <div id="prompt-reason" aria-live="polite"></div>
    <button type="button" id="cancel" class="secondary" disabled>Cancel</button>
    <button type="submit" id="send" disabled>Send</button>
  </div>
</form>
<script nonce="${nonce}" src="${script.toString()}"></script>
</body>
</html>`;
  }

  dispose(): void {
    this.disposed = true;
    this.panel?.dispose();
    this.panel = undefined;
  }
}
