// Bundles the extension (src/extension.ts and everything it imports, vscode-languageclient
// included) into dist/extension.js, so the .vsix ships no node_modules. `vscode` is provided
// by the editor at run time. `--production` minifies and drops source maps.
import * as esbuild from 'esbuild';

const production = process.argv.includes('--production');

await esbuild.build({
  entryPoints: ['src/extension.ts'],
  bundle: true,
  outfile: 'dist/extension.js',
  external: ['vscode'],
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  minify: production,
  sourcemap: !production,
  sourcesContent: false,
  logLevel: 'info',
});
