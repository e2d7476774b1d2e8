import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { initializationOptions, readSettings, redactedForLog, RESTART_KEYS, serverArgs } from '../../src/core/config';

const builtin = { command: 'claude-agent-acp', args: [], env: {}, protocol: 'acp' };

const reader = (values: Record<string, unknown>) => (key: string) => values[key];

describe('settings → initializationOptions (docs/protocol.md "initialize")', () => {
  it('sends only storage when the agent is left to the server default', () => {
    const { settings, problems } = readSettings(reader({}));
    assert.deepEqual(problems, []);
    assert.deepEqual(initializationOptions(settings), { storage: { dir: null, persist: true, encrypt: false } });
    assert.equal(settings.resumeOnStartup, true);
  });

  it('passes persistence switches and the agent in the shape of docs/protocol.md', () => {
    const { settings } = readSettings(
      reader({
        'persistence.enabled': false,
        'persistence.encrypt': true,
        'persistence.directory': '/tmp/cache',
        'agent.name': 'scripted',
        'agent.command': '/opt/agent',
        'agent.args': ['--script', 'fail-load'],
        'agent.env': { A: '1' },
        'agent.protocol': 'acp',
      }),
    );
    assert.deepEqual(initializationOptions(settings), {
      storage: { dir: '/tmp/cache', persist: false, encrypt: true },
      agents: {
        claude: builtin,
        scripted: { command: '/opt/agent', args: ['--script', 'fail-load'], env: { A: '1' }, protocol: 'acp' },
      },
      defaultAgent: 'scripted',
    });
  });

  it('sends the sync remote only when one is set (R-SYNC-1)', () => {
    const { settings } = readSettings(reader({ 'sync.remote': ' file:///home/ada/Sync/tether ' }));
    assert.deepEqual(initializationOptions(settings), {
      storage: { dir: null, persist: true, encrypt: false },
      sync: { remote: 'file:///home/ada/Sync/tether' },
    });
    assert.equal(initializationOptions(readSettings(reader({ 'sync.remote': '' })).settings).sync, undefined);
  });

  it('reports settings of the wrong type by name and uses their defaults', () => {
    const { settings, problems } = readSettings(
      reader({
        'persistence.enabled': 'yes',
        'agent.args': ['ok', 3],
        'agent.env': { A: 1 },
        'agent.protocol': 'ssh',
        serverPath: 42,
      }),
    );
    assert.deepEqual(problems, [
      'tether.serverPath must be a string; using ""',
      'tether.agent.args must be an array of strings; ignored',
      'tether.agent.env must map names to strings; ignored',
      'tether.agent.protocol must be "acp" or "claudePrint"; ignored',
      'tether.persistence.enabled must be true or false; using true',
    ]);
    assert.equal(settings.persistence.enabled, true);
    assert.equal(settings.server.path, '');
    assert.deepEqual(settings.agents, { claude: builtin });
  });

  it('trims paths and falls back to "claude" for an empty agent name', () => {
    const { settings } = readSettings(reader({ 'server.path': '  /usr/bin/tether ', 'agent.name': '', 'agent.command': 'x' }));
    assert.equal(settings.server.path, '/usr/bin/tether');
    assert.equal(initializationOptions(settings).defaultAgent, 'claude');
    assert.equal(initializationOptions(settings).agents?.claude?.command, 'x');
  });

  it('redacts agent environment values for the log, and only for the log', () => {
    const { settings } = readSettings(
      reader({ 'agent.command': '/opt/agent', 'agent.env': { ANTHROPIC_API_KEY: 'sk-ant-api03-secret', DEBUG: '1' } }),
    );
    const opts = initializationOptions(settings);
    const logged = JSON.stringify(redactedForLog(opts));
    assert.doesNotMatch(logged, /sk-ant|"1"/);
    assert.match(logged, /"ANTHROPIC_API_KEY":"<redacted>"/);
    assert.equal(opts.agents?.claude?.env.ANTHROPIC_API_KEY, 'sk-ant-api03-secret', 'the server still gets the value');
  });
});

describe('tether.server.remote → the server command line', () => {
  it('auto (the default) passes no --remote, so tether serve and TETHER_REMOTE decide', () => {
    const { settings, problems } = readSettings(reader({}));
    assert.deepEqual(problems, []);
    assert.equal(settings.server.remote, 'auto');
    assert.deepEqual(serverArgs(settings, '/logs/tether-serve.log'), ['serve', '--log-file', '/logs/tether-serve.log']);
    assert.deepEqual(serverArgs(readSettings(reader({ 'server.remote': 'auto' })).settings, '/l'), ['serve', '--log-file', '/l']);
  });

  it('off passes --remote=off (the session lives in the window\'s own server)', () => {
    const { settings, problems } = readSettings(reader({ 'server.remote': 'off' }));
    assert.deepEqual(problems, []);
    assert.deepEqual(serverArgs(settings, '/l'), ['serve', '--log-file', '/l', '--remote=off']);
  });

  it('an unknown value is reported by name and replaced by auto', () => {
    const { settings, problems } = readSettings(reader({ 'server.remote': 'daemon' }));
    assert.deepEqual(problems, ['tether.server.remote must be "auto" or "off"; using "auto"']);
    assert.deepEqual(serverArgs(settings, '/l'), ['serve', '--log-file', '/l']);
  });

  it('a change of it restarts the server (it is on the command line)', () => {
    assert.ok((RESTART_KEYS as readonly string[]).includes('tether.server'));
  });
});

describe('setting names: dotted (tether.server.path), the old ones still read with a note', () => {
  it('tether.server.path is read, with no deprecation note', () => {
    const { settings, deprecations, problems } = readSettings(reader({ 'server.path': '/opt/tether' }));
    assert.equal(settings.server.path, '/opt/tether');
    assert.deepEqual(deprecations, []);
    assert.deepEqual(problems, []);
  });

  it('the old tether.serverPath still works and the note names the new key', () => {
    const { settings, deprecations } = readSettings(reader({ serverPath: '/old/tether' }));
    assert.equal(settings.server.path, '/old/tether');
    assert.deepEqual(deprecations, ['tether.serverPath is deprecated: use tether.server.path (its value is used)']);
  });

  it('with both set the new name wins and the note says the old one is ignored', () => {
    const { settings, deprecations } = readSettings(reader({ serverPath: '/old/tether', 'server.path': '/new/tether' }));
    assert.equal(settings.server.path, '/new/tether');
    assert.deepEqual(deprecations, ['tether.serverPath is deprecated and ignored: tether.server.path is set']);
  });

  it('each old tether.agent.* field set gives a note naming its key under tether.agents', () => {
    const { deprecations } = readSettings(
      reader({ 'agent.name': 'scripted', 'agent.command': '/opt/agent', 'agent.args': ['-v'], 'agent.env': { A: '1' }, 'agent.protocol': 'acp' }),
    );
    assert.deepEqual(deprecations, [
      'tether.agent.name is deprecated: use tether.defaultAgent (and the key under tether.agents)',
      'tether.agent.command is deprecated: use tether.agents.scripted.command',
      'tether.agent.args is deprecated: use tether.agents.scripted.args',
      'tether.agent.env is deprecated: use tether.agents.scripted.env',
      'tether.agent.protocol is deprecated: use tether.agents.scripted.protocol',
    ]);
  });

  it('settings left unset give no note (the reader returns undefined for them)', () => {
    assert.deepEqual(readSettings(reader({})).deprecations, []);
  });
});

describe('agents: each field works on its own, several agents, tether.defaultAgent', () => {
  it('only env of the default agent (old name) takes effect without a command: it lands on the built-in claude', () => {
    const { settings, problems } = readSettings(reader({ 'agent.env': { ANTHROPIC_BASE_URL: 'http://127.0.0.1:9' } }));
    assert.deepEqual(problems, []);
    assert.deepEqual(initializationOptions(settings), {
      storage: { dir: null, persist: true, encrypt: false },
      agents: { claude: { ...builtin, env: { ANTHROPIC_BASE_URL: 'http://127.0.0.1:9' } } },
      defaultAgent: 'claude',
    });
  });

  it('only args, or only protocol, of tether.agents.claude keep the built-in command', () => {
    const a = initializationOptions(readSettings(reader({ agents: { claude: { args: ['--debug'] } } })).settings);
    assert.deepEqual(a.agents, { claude: { ...builtin, args: ['--debug'] } });
    assert.equal(a.defaultAgent, 'claude');
    const p = initializationOptions(readSettings(reader({ agents: { claude: { protocol: 'claudePrint', command: 'claude' } } })).settings);
    assert.deepEqual(p.agents, { claude: { ...builtin, command: 'claude', protocol: 'claudePrint' } });
  });

  it('several agents and tether.defaultAgent go to the server as its agents map (so a handoff has another agent)', () => {
    const { settings, problems } = readSettings(
      reader({
        agents: {
          codex: { command: 'codex-acp' },
          gemini: { command: 'gemini', args: ['--acp'], env: { GEMINI_API_KEY: 'k' }, cwd: '/home/ada' },
        },
        defaultAgent: 'codex',
      }),
    );
    assert.deepEqual(problems, []);
    assert.deepEqual(initializationOptions(settings), {
      storage: { dir: null, persist: true, encrypt: false },
      agents: {
        claude: builtin,
        codex: { command: 'codex-acp', args: [], env: {}, protocol: 'acp' },
        gemini: { command: 'gemini', args: ['--acp'], env: { GEMINI_API_KEY: 'k' }, protocol: 'acp', cwd: '/home/ada' },
      },
      defaultAgent: 'codex',
    });
  });

  it('tether.agents overrides the old tether.agent.* field by field', () => {
    const { settings } = readSettings(
      reader({ 'agent.command': '/old/agent', 'agent.env': { A: '1' }, agents: { claude: { env: { B: '2' } } } }),
    );
    assert.deepEqual(settings.agents, { claude: { command: '/old/agent', args: [], env: { B: '2' }, protocol: 'acp' } });
  });

  it('an agent other than claude with no command is reported by name and left out', () => {
    const { settings, problems } = readSettings(reader({ agents: { codex: { env: { A: '1' } } }, defaultAgent: 'codex' }));
    assert.deepEqual(problems, [
      'tether.agents.codex has no command (only the built-in "claude" agent has one by default); it is left out',
      'tether.defaultAgent "codex" names no configured agent (configured: claude); using "claude"',
    ]);
    assert.deepEqual(initializationOptions(settings).agents, { claude: builtin });
    assert.equal(initializationOptions(settings).defaultAgent, 'claude');
  });

  it('null removes the built-in claude; the default is then the first agent left', () => {
    const { settings, problems } = readSettings(reader({ agents: { claude: null, codex: { command: 'codex-acp' } } }));
    assert.deepEqual(problems, []);
    assert.deepEqual(initializationOptions(settings), {
      storage: { dir: null, persist: true, encrypt: false },
      agents: { codex: { command: 'codex-acp', args: [], env: {}, protocol: 'acp' } },
      defaultAgent: 'codex',
    });
  });

  it('fields of the wrong type and unknown fields are reported by their full name and ignored', () => {
    const { settings, problems } = readSettings(
      reader({ agents: { claude: { args: 'x', env: { A: 1 }, protocol: 'ssh', colour: 'red' }, bad: 3 } }),
    );
    assert.deepEqual(problems, [
      'tether.agents.claude.args must be an array of strings; ignored',
      'tether.agents.claude.env must map names to strings; ignored',
      'tether.agents.claude.protocol must be "acp" or "claudePrint"; ignored',
      'tether.agents.claude.colour is not an agent field (command, args, env, protocol, cwd); ignored',
      'tether.agents.bad must be an object ({command, args, env, protocol, cwd}); ignored',
    ]);
    assert.deepEqual(settings.agents, { claude: builtin });
  });

  it('tether.defaultAgent alone selects the built-in agent explicitly', () => {
    const { settings, problems } = readSettings(reader({ defaultAgent: 'claude' }));
    assert.deepEqual(problems, []);
    assert.deepEqual(initializationOptions(settings).agents, { claude: builtin });
    assert.equal(initializationOptions(settings).defaultAgent, 'claude');
  });

  it('a change of tether.agents or tether.defaultAgent restarts the server (they go into initialize)', () => {
    for (const k of ['tether.agents', 'tether.defaultAgent', 'tether.server', 'tether.serverPath', 'tether.agent']) {
      assert.ok((RESTART_KEYS as readonly string[]).includes(k), k);
    }
  });
});
