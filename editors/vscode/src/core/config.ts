/**
 * Settings (`tether.*`) → `initialize` `initializationOptions`, in docs/protocol.md's shape:
 * `{storage: {dir, persist, encrypt}, agents: {<name>: {command, args, env, protocol}}, defaultAgent}`.
 * Fields the user left at their defaults are left out so the server's defaults apply.
 * A setting of the wrong type is reported (a problem naming the setting) and replaced by its
 * default; it never stops the extension.
 */

export type AgentProtocol = 'acp' | 'claudePrint';

/**
 * `tether.server.remote`: `auto` leaves the choice to `tether serve` (its default forwards to
 * the per-user daemon, unless `TETHER_REMOTE=off` is in the environment); `off` passes
 * `--remote=off`, serving in the editor's own process (the session ends with the window).
 */
export type RemoteMode = 'auto' | 'off';

export interface TetherSettings {
  serverPath: string;
  persistence: { enabled: boolean; encrypt: boolean; directory: string };
  agent: { name: string; command: string; args: string[]; env: Record<string, string>; protocol: AgentProtocol };
  resumeOnStartup: boolean;
  server: { remote: RemoteMode };
}

export interface InitializationOptions {
  storage: { dir: string | null; persist: boolean; encrypt: boolean };
  agents?: Record<string, { command: string; args: string[]; env: Record<string, string>; protocol: AgentProtocol }>;
  defaultAgent?: string;
}

/** Reads one setting by its key below `tether.` (e.g. `agent.args`). */
export type SettingReader = (key: string) => unknown;

export function readSettings(get: SettingReader): { settings: TetherSettings; problems: string[] } {
  const problems: string[] = [];
  const string = (key: string, def: string): string => {
    const v = get(key);
    if (v === undefined || v === null) return def;
    if (typeof v === 'string') return v.trim();
    problems.push(`tether.${key} must be a string; using "${def}"`);
    return def;
  };
  const bool = (key: string, def: boolean): boolean => {
    const v = get(key);
    if (v === undefined || v === null) return def;
    if (typeof v === 'boolean') return v;
    problems.push(`tether.${key} must be true or false; using ${def}`);
    return def;
  };
  const args = (): string[] => {
    const v = get('agent.args');
    if (v === undefined || v === null) return [];
    if (Array.isArray(v) && v.every((x) => typeof x === 'string')) return v;
    problems.push('tether.agent.args must be an array of strings; using []');
    return [];
  };
  const env = (): Record<string, string> => {
    const v = get('agent.env');
    if (v === undefined || v === null) return {};
    if (typeof v === 'object' && !Array.isArray(v) && Object.values(v).every((x) => typeof x === 'string')) {
      return { ...(v as Record<string, string>) };
    }
    problems.push('tether.agent.env must map names to strings; using {}');
    return {};
  };
  const protocol = (): AgentProtocol => {
    const v = get('agent.protocol');
    if (v === undefined || v === null || v === 'acp') return 'acp';
    if (v === 'claudePrint') return 'claudePrint';
    problems.push('tether.agent.protocol must be "acp" or "claudePrint"; using "acp"');
    return 'acp';
  };
  const remote = (): RemoteMode => {
    const v = get('server.remote');
    if (v === undefined || v === null || v === 'auto') return 'auto';
    if (v === 'off') return 'off';
    problems.push('tether.server.remote must be "auto" or "off"; using "auto"');
    return 'auto';
  };
  const name = string('agent.name', 'claude') || 'claude';
  const settings: TetherSettings = {
    serverPath: string('serverPath', ''),
    persistence: {
      enabled: bool('persistence.enabled', true),
      encrypt: bool('persistence.encrypt', false),
      directory: string('persistence.directory', ''),
    },
    agent: { name, command: string('agent.command', ''), args: args(), env: env(), protocol: protocol() },
    resumeOnStartup: bool('resumeOnStartup', true),
    server: { remote: remote() },
  };
  return { settings, problems };
}

/**
 * The arguments of the server command (`tether <args>`; vscode-languageclient appends
 * `--stdio`): `serve --log-file <logFile>`, plus `--remote=off` when the user chose it. For
 * `auto` no `--remote` is passed, so `tether serve`'s own default applies, and with it a
 * `TETHER_REMOTE` in the environment VS Code was started with (a flag would override it).
 */
export function serverArgs(s: TetherSettings, logFile: string): string[] {
  return ['serve', '--log-file', logFile, ...(s.server.remote === 'off' ? ['--remote=off'] : [])];
}

/**
 * Whether `tether serve` will forward to the per-user daemon: `tether.server.remote` is `auto`
 * and the environment the server inherits does not say `TETHER_REMOTE=off` (the server's
 * own default is `auto`). Then a prompt turn outlives this window's server connection.
 */
export function forwardsToDaemon(s: TetherSettings, env: Record<string, string | undefined>): boolean {
  return s.server.remote === 'auto' && env.TETHER_REMOTE !== 'off';
}

export function initializationOptions(s: TetherSettings): InitializationOptions {
  const opts: InitializationOptions = {
    storage: {
      dir: s.persistence.directory === '' ? null : s.persistence.directory,
      persist: s.persistence.enabled,
      encrypt: s.persistence.encrypt,
    },
  };
  if (s.agent.command !== '') {
    opts.agents = {
      [s.agent.name]: {
        command: s.agent.command,
        args: s.agent.args,
        env: s.agent.env,
        protocol: s.agent.protocol,
      },
    };
    opts.defaultAgent = s.agent.name;
  }
  return opts;
}

/**
 * The options with every agent environment value replaced by `<redacted>`, for logs: agent
 * environments carry API keys (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`, …), and secrets never
 * reach a log unredacted.
 */
export function redactedForLog(opts: InitializationOptions): InitializationOptions {
  if (!opts.agents) return opts;
  const agents: NonNullable<InitializationOptions['agents']> = {};
  for (const [name, agent] of Object.entries(opts.agents)) {
    agents[name] = { ...agent, env: Object.fromEntries(Object.keys(agent.env).map((k) => [k, '<redacted>'])) };
  }
  return { ...opts, agents };
}

/** Setting keys whose change needs a server restart (they go into `initialize`). */
export const RESTART_KEYS = [
  'tether.serverPath',
  'tether.persistence',
  'tether.agent',
  'tether.server',
] as const;
