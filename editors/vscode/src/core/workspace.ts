/**
 * The workspace around the session: Restricted Mode (workspace trust) and, in a multi-root
 * workspace, which folder the session view follows. Pure: src/extension.ts asks VS Code and
 * does what these say.
 */

/**
 * Why nothing starts in Restricted Mode, and what to do. Agents run shell tools in the
 * workspace, so an untrusted folder gets no server and no agent.
 */
export const RESTRICTED_REASON =
  'Restricted Mode: Tether starts no agent in a folder you have not trusted, because agents run shell tools in it. ' +
  'Trust the folder ("Workspaces: Manage Workspace Trust") and the session starts.';

/** What start-up may do, given VS Code's `workspace.isTrusted`. */
export type StartGate = { start: true } | { start: false; reason: string };

export function startGate(trusted: boolean): StartGate {
  return trusted ? { start: true } : { start: false, reason: RESTRICTED_REASON };
}

/** Which folder the session belongs to. */
export type FolderChoice =
  | { kind: 'none' }
  | { kind: 'folder'; root: string; why: 'activeEditor' | 'current' | 'only' | 'picked' }
  | { kind: 'ask'; folders: string[] };

export interface FolderInput {
  /** The workspace folders' paths, in order. */
  folders: readonly string[];
  /** The folder of the active editor's file, when it lies in one of them. */
  activeEditorFolder: string | undefined;
  /** The folder the session view follows now, if any. */
  current: string | undefined;
}

/**
 * The folder of the active editor wins; without one (no editor, or a file outside the
 * workspace) the current folder stays; with neither, a single folder is taken and several
 * are asked about (a quick pick).
 */
export function chooseFolder(input: FolderInput): FolderChoice {
  const { folders, activeEditorFolder, current } = input;
  if (folders.length === 0) return { kind: 'none' };
  if (activeEditorFolder !== undefined && folders.includes(activeEditorFolder)) {
    return { kind: 'folder', root: activeEditorFolder, why: 'activeEditor' };
  }
  if (current !== undefined && folders.includes(current)) return { kind: 'folder', root: current, why: 'current' };
  if (folders.length === 1) return { kind: 'folder', root: folders[0], why: 'only' };
  return { kind: 'ask', folders: [...folders] };
}

/**
 * The key under which a folder's view session is remembered across reloads: the workspace's
 * own key for a single folder (as before multi-root), one key per folder otherwise.
 */
export function memoryKey(base: string, root: string, folderCount: number): string {
  return folderCount > 1 ? `${base}:${root}` : base;
}

/** The sessions one folder's controller knows: its live one and the one its view shows. */
export interface FolderSessions {
  root: string;
  sessionIds: readonly (string | undefined)[];
}

/**
 * Which folder's controller a server message belongs to: the one that knows its session
 * (`sessionId`, or `previousSessionId` of a `session/expired`), else the current folder's
 * (a session not known yet, e.g. the first `session/status` of a resume it sent).
 */
export function routeMessage(folders: readonly FolderSessions[], params: unknown, current: string): string {
  const p = (typeof params === 'object' && params !== null ? params : {}) as { sessionId?: unknown; previousSessionId?: unknown };
  for (const id of [p.sessionId, p.previousSessionId]) {
    if (typeof id !== 'string') continue;
    const owner = folders.find((f) => f.sessionIds.includes(id));
    if (owner) return owner.root;
  }
  return current;
}
