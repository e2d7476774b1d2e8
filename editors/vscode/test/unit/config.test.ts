import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { initializationOptions, readSettings, redactedForLog, RESTART_KEYS, serverArgs } from '../../src/core/config';

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
      agents: { scripted: { command: '/opt/agent', args: ['--script', 'fail-load'], env: { A: '1' }, protocol: 'acp' } },
      defaultAgent: 'scripted',
    });
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
      'tether.persistence.enabled must be true or false; using true',
      'tether.agent.args must be an array of strings; using []',
      'tether.agent.env must map names to strings; using {}',
      'tether.agent.protocol must be "acp" or "claudePrint"; using "acp"',
    ]);
    assert.equal(settings.persistence.enabled, true);
    assert.deepEqual(settings.agent.args, []);
  });

  it('trims paths and falls back to "claude" for an empty agent name', () => {
    const { settings } = readSettings(reader({ serverPath: '  /usr/bin/tether ', 'agent.name': '', 'agent.command': 'x' }));
    assert.equal(settings.serverPath, '/usr/bin/tether');
    assert.equal(initializationOptions(settings).defaultAgent, 'claude');
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
