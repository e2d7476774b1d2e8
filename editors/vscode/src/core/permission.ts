/**
 * `session/requestPermission` → a quick pick of the agent's options, and the answer.
 *
 * The request is the agent's ACP `session/request_permission`, forwarded by the server; the
 * answer is ACP's `RequestPermissionResponse`: `{outcome: {outcome: "selected", optionId}}` or
 * `{outcome: {outcome: "cancelled"}}` (ACP schema v1). Closing the pick is "cancelled".
 */
import type { PermissionRequestParams, PermissionResponse } from './protocol';

export interface PermissionItem {
  label: string;
  description: string;
  optionId: string;
}

export interface PermissionPick {
  title: string;
  placeholder: string;
  items: PermissionItem[];
}

const KIND_TEXT: Record<string, string> = {
  allow_once: 'allow once',
  allow_always: 'always allow',
  reject_once: 'reject once',
  reject_always: 'always reject',
};

/** The quick pick for a request, options in the agent's order. */
export function permissionPick(p: PermissionRequestParams): PermissionPick {
  const what = p.toolCall?.title ? `"${p.toolCall.title}"` : 'a tool call';
  return {
    title: 'Tether: the agent asks for permission',
    placeholder: `Allow ${what}? (Escape cancels)`,
    items: p.options.map((o) => ({
      label: o.name,
      description: KIND_TEXT[o.kind] ?? o.kind,
      optionId: o.optionId,
    })),
  };
}

/** The answer for a picked option id (`undefined`: the pick was closed or the request cancelled). */
export function permissionAnswer(p: PermissionRequestParams, optionId: string | undefined): PermissionResponse {
  if (optionId !== undefined && p.options.some((o) => o.optionId === optionId)) {
    return { outcome: { outcome: 'selected', optionId } };
  }
  return { outcome: { outcome: 'cancelled' } };
}
