import { strict as assert } from 'node:assert';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';

/** The extension's folder (this file runs as out/test/unit/commands.test.js). */
const root = path.resolve(__dirname, '../../..');

interface Contributed {
  command: string;
  title: string;
  category?: string;
}

function contributed(): Contributed[] {
  const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { contributes?: { commands?: Contributed[] } };
  return pkg.contributes?.commands ?? [];
}

describe('commands: package.json, src/extension.ts and README.md agree', () => {
  it('every contributed command is registered by the extension', () => {
    const source = readFileSync(path.join(root, 'src/extension.ts'), 'utf8');
    const commands = contributed();
    assert.ok(commands.length > 0);
    for (const c of commands) {
      assert.ok(source.includes(`registerCommand('${c.command}'`), `${c.command} is contributed but not registered in src/extension.ts`);
    }
  });

  it('every contributed command is in the Commands table of README.md, by its palette title', () => {
    const readme = readFileSync(path.join(root, 'README.md'), 'utf8');
    const table = readme.slice(readme.indexOf('## Commands'), readme.indexOf('\n## ', readme.indexOf('## Commands') + 1));
    for (const c of contributed()) {
      const title = `${c.category ? `${c.category}: ` : ''}${c.title}`;
      assert.ok(table.includes(`| ${title} |`), `${c.command} ("${title}") is not in README.md's Commands table`);
    }
  });

  it('includes Continue Session Here (R-SYNC-7)', () => {
    assert.ok(contributed().some((c) => c.command === 'tether.continueHere' && c.title === 'Continue Session Here'));
  });
});
