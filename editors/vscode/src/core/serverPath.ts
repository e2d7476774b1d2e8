/**
 * Which `tether` executable to start: the `tether.server.path` setting, else the server bundled in
 * the extension's `server/` (the per-platform packages `cargo xtask dist` builds carry it, as
 * rust-analyzer's do), else `tether` on `PATH` (README.md, "Install"). A configured path that is
 * not an executable file is an error, not a silent fall-through: the user asked for that binary.
 */
import { accessSync, constants, statSync } from 'node:fs';
import * as path from 'node:path';

/** The folder of the extension that holds the bundled server. */
export const BUNDLED_DIR = 'server';

export type ServerSource = 'setting' | 'bundled' | 'path';

export type ServerResolution =
  | { ok: true; command: string; source: ServerSource }
  | { ok: false; error: string };

export interface ResolveInput {
  /** `tether.server.path`, trimmed; empty when unset. */
  configured: string;
  /** The extension's install folder. */
  extensionPath: string;
  platform: NodeJS.Platform;
  /** The `PATH` environment variable. */
  envPath: string | undefined;
}

/** Whether `file` is a regular file this process may execute. */
export function isExecutableFile(file: string): boolean {
  try {
    if (!statSync(file).isFile()) return false;
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export function resolveServer(input: ResolveInput, isExecutable: (file: string) => boolean = isExecutableFile): ServerResolution {
  const exe = input.platform === 'win32' ? 'tether.exe' : 'tether';
  if (input.configured !== '') {
    if (!path.isAbsolute(input.configured)) {
      return { ok: false, error: `tether.server.path must be an absolute path, got "${input.configured}"` };
    }
    return isExecutable(input.configured)
      ? { ok: true, command: input.configured, source: 'setting' }
      : { ok: false, error: `tether.server.path is "${input.configured}", which is not an executable file` };
  }
  const bundled = path.join(input.extensionPath, BUNDLED_DIR, exe);
  if (isExecutable(bundled)) return { ok: true, command: bundled, source: 'bundled' };
  const sep = input.platform === 'win32' ? ';' : ':';
  for (const dir of (input.envPath ?? '').split(sep)) {
    if (dir === '') continue;
    const candidate = path.join(dir, exe);
    if (isExecutable(candidate)) return { ok: true, command: candidate, source: 'path' };
  }
  return {
    ok: false,
    error: `no tether server found: tether.server.path is empty, ${bundled} does not exist, and "${exe}" is not on PATH`,
  };
}
