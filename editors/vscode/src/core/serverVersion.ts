/**
 * Whether the server this extension started is one it can work with, judged from the
 * `initialize` result (docs/protocol.md, "initialize"): `capabilities.experimental.tether.protocolVersion`
 * must be the protocol version this extension speaks ({@link PROTOCOL_VERSION}); `serverInfo.version`
 * should be the extension's own version (the per-platform packages bundle exactly that server), and
 * a different one with the same protocol works but is worth a line in the log. Pure: the caller
 * logs and shows the verdict.
 */
import { PROTOCOL_VERSION } from './protocol';
import type { ServerSource } from './serverPath';

export interface ServerFacts {
  /** `serverInfo.version`, when the server sent it. */
  version: string | undefined;
  /** `capabilities.experimental.tether.protocolVersion`, as received (any JSON value). */
  protocolVersion: unknown;
}

export type ServerVerdict =
  /** Same protocol; `note` is set when the versions differ (for the log). */
  | { ok: true; note?: string }
  /** A protocol this extension does not speak; `error` says what to do. */
  | { ok: false; error: string };

/** Where the server came from, as the user would change it. */
function fixFor(source: ServerSource): string {
  switch (source) {
    case 'setting':
      return 'point tether.server.path at a matching tether, or clear it to use the server bundled with this extension';
    case 'path':
      return 'update the tether on PATH (README.md, "Install"), or install the Tether package for your platform, which bundles a matching server';
    case 'bundled':
      return 'reinstall the extension: its bundled server does not match it';
  }
}

/**
 * Judges the server from its `initialize` result.
 *
 * @param facts what the server reported
 * @param extensionVersion this extension's `package.json` version
 * @param source where the started executable came from (resolveServer)
 */
export function checkServer(facts: ServerFacts, extensionVersion: string, source: ServerSource): ServerVerdict {
  const server = `tether ${facts.version ?? '(no version)'}`;
  const proto = facts.protocolVersion;
  if (proto !== PROTOCOL_VERSION) {
    if (typeof proto !== 'number') {
      return {
        ok: false,
        error: `${server} does not say which Tether protocol it speaks; this extension (${extensionVersion}) needs protocol ${PROTOCOL_VERSION}. The server is older than this extension: ${fixFor(source)}.`,
      };
    }
    const older = proto < PROTOCOL_VERSION;
    const fix = older ? fixFor(source) : 'update the Tether extension, or point tether.server.path at a tether as old as this extension';
    return {
      ok: false,
      error: `${server} speaks Tether protocol ${proto}; this extension (${extensionVersion}) speaks ${PROTOCOL_VERSION}. The server is ${older ? 'older' : 'newer'} than this extension: ${fix}.`,
    };
  }
  if (facts.version !== extensionVersion) {
    return {
      ok: true,
      note: `${server} differs from this extension's version ${extensionVersion}; both speak protocol ${PROTOCOL_VERSION}, so they work together`,
    };
  }
  return { ok: true };
}
