/**
 * `UiPort` with the VS Code API: the thin rendering layer. No decisions here; every text,
 * button and lifecycle comes from `src/core`.
 *
 * Deactivation runs on after VS Code has disposed the extension's subscriptions (it calls
 * `deactivate()` and disposes them at once, without awaiting), and the API's link to the
 * window is gone by then. So after `dispose()` every method is a no-op, and every call into
 * the API is guarded: a rendering failure is never allowed to break the caller (the
 * `shutdown` persist runs exactly then).
 */
import * as vscode from 'vscode';
import type { BannerView } from './core/banners';
import type { UiPort } from './core/controller';
import type { PermissionPick } from './core/permission';
import type { DialogIntent } from './core/recovery';
import type { ProgressIntent, StatusView } from './core/status';

export class VscodeUi implements UiPort, vscode.Disposable {
  readonly statusItem: vscode.StatusBarItem;
  readonly bannerItem: vscode.StatusBarItem;
  private progressMessage: string | undefined;
  private progressReport: ((message: string) => void) | undefined;
  private progressDone: (() => void) | undefined;
  private disposed = false;

  constructor(readonly output: vscode.LogOutputChannel) {
    this.statusItem = vscode.window.createStatusBarItem('tether.status', vscode.StatusBarAlignment.Left, 10);
    this.statusItem.name = 'Tether';
    this.bannerItem = vscode.window.createStatusBarItem('tether.banners', vscode.StatusBarAlignment.Left, 9);
    this.bannerItem.name = 'Tether banners';
    this.bannerItem.command = 'tether.showBanners';
  }

  showDialog(d: DialogIntent): Promise<string | undefined> {
    return this.ask(() => vscode.window.showWarningMessage(d.message, { modal: true, detail: d.detail }, ...d.buttons));
  }

  showNotification(v: BannerView): Promise<string | undefined> {
    const show =
      v.severity === 'error'
        ? vscode.window.showErrorMessage
        : v.severity === 'warning'
          ? vscode.window.showWarningMessage
          : vscode.window.showInformationMessage;
    return this.ask(() => show(v.text, ...v.actions));
  }

  showOffer(v: BannerView, withdrawn: Promise<void>): Promise<string | undefined> {
    // VS Code cannot close a notification: once withdrawn, its buttons do nothing.
    let over = false;
    const shown = this.showNotification(v);
    void shown.then((a) => {
      if (over && a) this.log(`"${a}" clicked on a withdrawn offer (${v.id}): nothing sent`);
    });
    return Promise.race([shown, withdrawn.then(() => undefined)]).finally(() => (over = true));
  }

  showTransient(v: BannerView, until: Promise<void>): void {
    if (this.disposed) return;
    try {
      void vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: v.text }, () => until);
    } catch {
      // The window is gone; nothing to show.
    }
  }

  setStatus(v: StatusView): void {
    if (this.disposed) return;
    this.statusItem.text = `$(${v.icon}) ${v.text}`;
    this.statusItem.tooltip = v.tooltip;
    this.statusItem.command = v.command;
    this.statusItem.backgroundColor =
      v.severity === 'error'
        ? new vscode.ThemeColor('statusBarItem.errorBackground')
        : v.severity === 'warning'
          ? new vscode.ThemeColor('statusBarItem.warningBackground')
          : undefined;
    this.statusItem.show();
  }

  setBannerIndicator(v: { text: string; tooltip: string } | undefined): void {
    if (this.disposed) return;
    if (!v) {
      this.bannerItem.hide();
      return;
    }
    this.bannerItem.text = v.text;
    this.bannerItem.tooltip = v.tooltip;
    this.bannerItem.show();
  }

  progress(p: ProgressIntent): void {
    if (p.kind === 'none' || (this.disposed && p.kind === 'show')) return;
    if (p.kind === 'close') {
      this.progressDone?.();
      this.progressDone = undefined;
      this.progressReport = undefined;
      this.progressMessage = undefined;
      return;
    }
    if (p.message === this.progressMessage) return;
    this.progressMessage = p.message;
    if (this.progressReport) {
      this.progressReport(p.message);
      return;
    }
    void vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: 'Tether' },
      (progress) =>
        new Promise<void>((resolve) => {
          this.progressDone = resolve;
          this.progressReport = (message) => progress.report({ message });
          progress.report({ message: p.message });
        }),
    );
  }

  pick(p: PermissionPick, cancelled: Promise<void>): Promise<string | undefined> {
    if (this.disposed) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      const qp = vscode.window.createQuickPick<vscode.QuickPickItem & { optionId: string }>();
      qp.title = p.title;
      qp.placeholder = p.placeholder;
      qp.items = p.items;
      qp.ignoreFocusOut = true;
      let picked: string | undefined;
      qp.onDidAccept(() => {
        picked = qp.selectedItems[0]?.optionId;
        qp.hide();
      });
      qp.onDidHide(() => {
        qp.dispose();
        resolve(picked);
      });
      void cancelled.then(() => qp.hide());
      qp.show();
    });
  }

  showLogs(): void {
    if (this.disposed) return;
    this.output.show(true);
  }

  log(line: string): void {
    if (this.disposed) return;
    try {
      this.output.info(line);
    } catch {
      // The channel is gone (deactivation); nothing else to write to.
    }
  }

  /** Runs a VS Code prompt; `undefined` (a dismissal) if the UI is gone or the call fails. */
  private ask(prompt: () => Thenable<string | undefined>): Promise<string | undefined> {
    if (this.disposed) return Promise.resolve(undefined);
    try {
      return Promise.resolve(prompt()).catch(() => undefined);
    } catch {
      return Promise.resolve(undefined);
    }
  }

  dispose(): void {
    this.progress({ kind: 'close' });
    this.disposed = true;
    this.statusItem.dispose();
    this.bannerItem.dispose();
  }
}
