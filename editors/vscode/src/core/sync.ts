/**
 * Sessions on every machine (R-SYNC-1..9, docs/protocol.md) as the extension shows them: a
 * prompt the server refused because another of the user's machines holds the session
 * (`-32803` with `data: {kind: "heldElsewhere", machine, untilMs, retryable: false}`) → the
 * "Continue Here" offer, and the answer to `session/continueHere` → the message shown. The
 * `heldElsewhere` banner's own offer is `bannerView`'s (banners.ts). No `vscode` import.
 *
 * The server decides everything: whether the session is held, by whom, and what taking it
 * over does. This module only reads its answers; the controller forwards the user's choice.
 */
import { bannerView, type BannerView } from './banners';
import { isMethodNotFound } from './sessions';

/** A prompt refused because another machine holds its session (R-SYNC-7). */
export interface HeldElsewhere {
  /** The session the prompt was for. */
  sessionId: string;
  /** The machine that holds it (`data.machine`), when the server named one. */
  machine: string | undefined;
  /** The server's message (it names the machine). */
  message: string;
}

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Whether a failed `session/prompt` of `sessionId` was refused because another of the user's
 * machines holds the session: its error's `data.kind` is `heldElsewhere` (the code is
 * `-32803`; the kind alone decides). `undefined` for any other failure.
 */
export function heldElsewhereRefusal(err: unknown, sessionId: string): HeldElsewhere | undefined {
  // vscode-jsonrpc's `ResponseError` (an `Error` with `code`, `message` and `data`).
  if (!isObj(err) || !isObj(err.data) || err.data.kind !== 'heldElsewhere') return undefined;
  const machine = typeof err.data.machine === 'string' && err.data.machine.trim() ? err.data.machine : undefined;
  const message =
    typeof err.message === 'string' && err.message.trim()
      ? err.message
      : `${machine ?? 'Another of your machines'} is continuing this session: it is read-only here.`;
  return { sessionId, machine, message };
}

/**
 * The notification for a prompt refused as `heldElsewhere`: the server's message with
 * "Continue Here", shown like the session's `heldElsewhere` banner (same id `held:<session>`,
 * heading and action), so the two read as one.
 */
export function heldElsewhereOffer(h: HeldElsewhere): BannerView {
  return bannerView({ id: `held:${h.sessionId}`, sessionId: h.sessionId, kind: 'heldElsewhere', message: h.message, dismissible: false });
}

/** What a `session/continueHere` answer (`{epoch, takenFrom?}`) tells the user. */
export function continuedText(raw: unknown): string {
  const from = isObj(raw) && typeof raw.takenFrom === 'string' && raw.takenFrom.trim() ? raw.takenFrom : undefined;
  return from ? `Tether: Continued here; taken over from ${from}.` : 'Tether: Continued here.';
}

/**
 * What a failed `session/continueHere` tells the user: the server's message (sync not set
 * up, the remote failing, …); a server without the method (-32601) is named as such.
 */
export function continueFailedText(err: unknown): string {
  if (isMethodNotFound(err)) return 'Tether: Continue Here failed: this Tether server does not support session/continueHere.';
  const message =
    err instanceof Error ? err.message : isObj(err) && typeof err.message === 'string' ? err.message : String(err);
  return `Tether: Continue Here failed: ${message}`;
}
