/**
 * The handoff offer of a long rate-limit or quota wait (R-CARRY-5, docs/protocol.md
 * `session/status.handoff` and `session/handoff`) as the extension shows it. No `vscode`
 * import.
 *
 * The server decides everything: whether a wait is long enough, which agent is offered, the
 * question and the button's title. The extension shows the offer once per wait, as a
 * notification with the server's question and two buttons, the offer's title ("Continue with
 * Codex") and "Keep Waiting"; the first sends `session/handoff`, the second nothing. The offer
 * is withdrawn when the wait ends (a later `session/status` of the session without `handoff`,
 * the turn's end, the session replaced). VS Code cannot close a notification toast
 * programmatically, so a withdrawn offer's buttons do nothing (the click is logged).
 */
import type { BannerView } from './banners';
import type { HandoffOffer, HandoffParams, StatusParams } from './protocol';

/** The offer's decline button (docs/protocol.md, initialize: "Keep Waiting"). */
export const KEEP_WAITING = 'Keep Waiting';

/** The notification id of the handoff offer. */
export const HANDOFF_OFFER_ID = 'tether.handoffOffer';

/** The notification of `offer`: the server's question, "Continue with <agent>" and "Keep Waiting". */
export function handoffOfferView(offer: HandoffOffer): BannerView {
  const question = offer.question.trim() || `${offer.title}?`;
  return { id: HANDOFF_OFFER_ID, severity: 'warning', text: `Tether: ${question}`, actions: [offer.title, KEEP_WAITING] };
}

/** The params of `session/handoff` taking `offer` for `sessionId` of the workspace at `root`. */
export function handoffParams(sessionId: string, root: string, offer: HandoffOffer): HandoffParams {
  return { sessionId, workspace: { root }, agent: offer.agent };
}

/**
 * The session view's status line during a wait with an offer: the countdown text, then the
 * server's question (the server's own `message` ends with it the same way).
 */
export function withOfferQuestion(text: string, s: StatusParams): string {
  const q = s.handoff?.question.trim();
  return q ? `${text}. ${q}` : text;
}
