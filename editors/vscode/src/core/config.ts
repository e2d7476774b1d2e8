/**
 * Settings (`tether.*`) → `initialize` `initializationOptions`, in docs/protocol.md's shape:
 * `{storage: {dir, persist, encrypt}, agents: {<name>: {command, args, env, protocol, cwd}}, defaultAgent}`.
 * Fields the user left at their defaults are left out so the server's defaults apply.
 * A setting of the wrong type is reported (a problem naming the setting) and replaced by its
 * default; it never stops the extension.
 *
 * Names follow the dotted style (`tether.server.path`, `tether.server.remote`). The old names
 * (`tether.serverPath`, `tether.agent.*`) are still read; each one set gives a deprecation
 * note naming its new key (logged, not shown as an error).
 *
 * Agents: the server's `agents` replaces its built-in map (`{"claude": {"command":
 * "claude-agent-acp"}}`, crates/tether-hub/src/config.rs) as a whole and refuses an agent
 * without a `command`. So the extension merges: the built-in `claude` agent, then the old
 * `tether.agent.*` fields onto the agent `tether.agent.name` names, then each
 * `tether.agents.<name>` field by field. A field set alone (e.g. only `env` of `claude`)
 * takes effect with the other fields of the agent it lands on; an agent that ends with no
 * command is reported and left out. `tether.agents.claude: null` removes the built-in agent.
 */

export type AgentProtocol = 'acp' | 'claudePrint';

/**
 * `tether.server.remote`: `auto` leaves the choice to `tether serve` (its default forwards to
 * the per-user daemon, unless `TETHER_REMOTE=off` is in the environment); `off` passes
 * `--remote=off`, serving in the editor's own process (the session ends with the window).
 */
export type RemoteMode = 'auto' | 'off';

/** One agent as sent to the server (`initializationOptions.agents.<name>`). */
export interface AgentOptions {
  command: string;
  args: string[];
  env: Record<string, string>;
  protocol: AgentProtocol;
  cwd?: string;
}

/** The server's built-in agent (crates/tether-hub/src/config.rs, `ServerConfig::default`). */
export const BUILTIN_AGENT_NAME = 'claude';
export const BUILTIN_AGENT_COMMAND = 'claude-agent-acp';

export interface TetherSettings {
  server: { path: string; remote: RemoteMode };
  persistence: { enabled: boolean; encrypt: boolean; directory: string };
  /** `tether.sync.remote`: where sessions sync to (R-SYNC-1); '' = none from the editor. */
  sync: { remote: string };
  /**
   * The agents to send, merged (see the file comment); `undefined` when no agent setting is
   * set, so the server's own default applies.
   */
  agents: Record<string, AgentOptions> | undefined;
  /** The agent used when a request names none; `undefined` with `agents`. */
  defaultAgent: string | undefined;
  resumeOnStartup: boolean;
}

export interface InitializationOptions {
  storage: { dir: string | null; persist: boolean; encrypt: boolean };
  sync?: { remote: string };
  agents?: Record<string, AgentOptions>;
  defaultAgent?: string;
}

/**
 * Reads one setting by its key below `tether.` (e.g. `server.path`): the value the user set
 * (in any scope), or `undefined` when none is set. Defaults are this module's.
 */
export type SettingReader = (key: string) => unknown;

/** What reading the settings found. */
export interface ReadResult {
  settings: TetherSettings;
  /** Settings of the wrong type (shown to the user), each naming the setting. */
  problems: string[];
  /** Old names in use, each naming its new key (logged). */
  deprecations: string[];
}

/** The old setting names, and the new key each note names. */
export const DEPRECATED: Readonly<Record<string, string>> = {
  serverPath: 'tether.server.path',
  'agent.name': 'tether.defaultAgent (and the key under tether.agents)',
  'agent.command': 'tether.agents.<name>.command',
  'agent.args': 'tether.agents.<name>.args',
  'agent.env': 'tether.agents.<name>.env',
  'agent.protocol': 'tether.agents.<name>.protocol',
};

const AGENT_FIELDS = ['command', 'args', 'env', 'protocol', 'cwd'] as const;
type AgentField = (typeof AGENT_FIELDS)[number];
type AgentOverride = Partial<AgentOptions>;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export function readSettings(get: SettingReader): ReadResult {
  const problems: string[] = [];
  const deprecations: string[] = [];
  const isSet = (key: string): boolean => get(key) !== undefined && get(key) !== null;
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
  const remote = (): RemoteMode => {
    const v = get('server.remote');
    if (v === undefined || v === null || v === 'auto') return 'auto';
    if (v === 'off') return 'off';
    problems.push('tether.server.remote must be "auto" or "off"; using "auto"');
    return 'auto';
  };

  // tether.server.path, else the old tether.serverPath.
  let serverPath = string('server.path', '');
  if (isSet('serverPath')) {
    if (isSet('server.path')) {
      deprecations.push('tether.serverPath is deprecated and ignored: tether.server.path is set');
    } else {
      deprecations.push('tether.serverPath is deprecated: use tether.server.path (its value is used)');
      serverPath = string('serverPath', '');
    }
  }

  const { agents, defaultAgent } = readAgents(get, problems, deprecations);
  const settings: TetherSettings = {
    server: { path: serverPath, remote: remote() },
    persistence: {
      enabled: bool('persistence.enabled', true),
      encrypt: bool('persistence.encrypt', false),
      directory: string('persistence.directory', ''),
    },
    sync: { remote: string('sync.remote', '').trim() },
    agents,
    defaultAgent,
    resumeOnStartup: bool('resumeOnStartup', true),
  };
  return { settings, problems, deprecations };
}

/** One agent field's value, checked; `undefined` (and a problem) when of the wrong type. */
function agentField(field: AgentField, v: unknown, where: string, problems: string[]): AgentOverride {
  switch (field) {
    case 'command':
    case 'cwd':
      if (typeof v === 'string') return { [field]: v.trim() };
      problems.push(`${where} must be a string; ignored`);
      return {};
    case 'args':
      if (Array.isArray(v) && v.every((x) => typeof x === 'string')) return { args: [...v] };
      problems.push(`${where} must be an array of strings; ignored`);
      return {};
    case 'env':
      if (isObject(v) && Object.values(v).every((x) => typeof x === 'string')) return { env: { ...(v as Record<string, string>) } };
      problems.push(`${where} must map names to strings; ignored`);
      return {};
    case 'protocol':
      if (v === 'acp' || v === 'claudePrint') return { protocol: v };
      problems.push(`${where} must be "acp" or "claudePrint"; ignored`);
      return {};
  }
}

function readAgents(
  get: SettingReader,
  problems: string[],
  deprecations: string[],
): { agents: Record<string, AgentOptions> | undefined; defaultAgent: string | undefined } {
  const set = (key: string) => get(key) !== undefined && get(key) !== null;
  const merged = new Map<string, AgentOverride>([[BUILTIN_AGENT_NAME, { command: BUILTIN_AGENT_COMMAND }]]);
  const overlay = (name: string, o: AgentOverride) => merged.set(name, { ...(merged.get(name) ?? {}), ...o });
  let touched = false;

  // The old single agent: tether.agent.name names it; each field set lands on it alone.
  let legacyName: string | undefined;
  if (set('agent.name')) {
    const v = get('agent.name');
    if (typeof v === 'string' && v.trim() !== '') legacyName = v.trim();
    else if (typeof v !== 'string') problems.push(`tether.agent.name must be a string; using "${BUILTIN_AGENT_NAME}"`);
    deprecations.push(`tether.agent.name is deprecated: use ${DEPRECATED['agent.name']}`);
  }
  const legacyTarget = legacyName ?? BUILTIN_AGENT_NAME;
  for (const field of ['command', 'args', 'env', 'protocol'] as const) {
    const key = `agent.${field}`;
    if (!set(key)) continue;
    deprecations.push(`tether.${key} is deprecated: use tether.agents.${legacyTarget}.${field}`);
    // An empty command is the old "the server's default": it sets nothing.
    if (field === 'command' && get(key) === '') continue;
    overlay(legacyTarget, agentField(field, get(key), `tether.${key}`, problems));
    touched = true;
  }
  if (legacyName !== undefined) touched = true;

  // tether.agents: each agent's fields over what is there.
  const raw = get('agents');
  if (raw !== undefined && raw !== null) {
    if (!isObject(raw)) {
      problems.push('tether.agents must be an object of agents by name; ignored');
    } else {
      for (const [name, entry] of Object.entries(raw)) {
        const where = `tether.agents.${name}`;
        touched = true;
        if (entry === null) {
          merged.delete(name);
          continue;
        }
        if (!isObject(entry)) {
          problems.push(`${where} must be an object ({command, args, env, protocol, cwd}); ignored`);
          continue;
        }
        const o: AgentOverride = {};
        for (const [field, v] of Object.entries(entry)) {
          if (!(AGENT_FIELDS as readonly string[]).includes(field)) {
            problems.push(`${where}.${field} is not an agent field (command, args, env, protocol, cwd); ignored`);
            continue;
          }
          if (v === undefined || v === null) continue;
          Object.assign(o, agentField(field as AgentField, v, `${where}.${field}`, problems));
        }
        overlay(name, o);
      }
    }
  }

  let defaultAgent: string | undefined;
  const chosen = get('defaultAgent');
  if (typeof chosen === 'string') {
    // Empty is the setting's default: the built-in agent (or the first one left).
    if (chosen.trim() !== '') {
      defaultAgent = chosen.trim();
      touched = true;
    }
  } else if (chosen !== undefined && chosen !== null) {
    problems.push('tether.defaultAgent must be the name of an agent; ignored');
  }
  defaultAgent ??= legacyName;

  if (!touched) return { agents: undefined, defaultAgent: undefined };

  const agents: Record<string, AgentOptions> = {};
  for (const [name, o] of merged) {
    if (!o.command) {
      problems.push(
        `tether.agents.${name} has no command (only the built-in "${BUILTIN_AGENT_NAME}" agent has one by default); it is left out`,
      );
      continue;
    }
    agents[name] = {
      command: o.command,
      args: o.args ?? [],
      env: o.env ?? {},
      protocol: o.protocol ?? 'acp',
      ...(o.cwd ? { cwd: o.cwd } : {}),
    };
  }
  const names = Object.keys(agents);
  if (names.length === 0) {
    problems.push('no agent is left to configure (each needs a command); using the server\'s default agent');
    return { agents: undefined, defaultAgent: undefined };
  }
  if (defaultAgent === undefined || !(defaultAgent in agents)) {
    const fallback = BUILTIN_AGENT_NAME in agents ? BUILTIN_AGENT_NAME : names[0] ?? BUILTIN_AGENT_NAME;
    if (defaultAgent !== undefined) {
      problems.push(`tether.defaultAgent "${defaultAgent}" names no configured agent (configured: ${names.join(', ')}); using "${fallback}"`);
    }
    defaultAgent = fallback;
  }
  return { agents, defaultAgent };
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
  if (s.sync.remote !== '') {
    opts.sync = { remote: s.sync.remote };
  }
  if (s.agents !== undefined && s.defaultAgent !== undefined) {
    opts.agents = s.agents;
    opts.defaultAgent = s.defaultAgent;
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
  'tether.server',
  'tether.serverPath',
  'tether.persistence',
  'tether.sync',
  'tether.agents',
  'tether.defaultAgent',
  'tether.agent',
] as const;
