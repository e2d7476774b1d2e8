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

// The session view's script (src/webview/main.ts with src/core/render.ts and markdown-it),
// run inside the webview: a browser bundle, loaded under the view's CSP by its nonce.
await esbuild.build({
  entryPoints: ['src/webview/main.ts'],
  bundle: true,
  outfile: 'dist/webview.js',
  format: 'iife',
  platform: 'browser',
  target: 'chrome120',
  minify: production,
  sourcemap: false,
  logLevel: 'info',
});
