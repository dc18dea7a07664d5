#!/usr/bin/env node
// Compiles the TypeScript sources to JavaScript in dist/ (git-ignored) with esbuild, so that the CLI
// and its worker threads start without tsx (bin/tilebake.js runs dist/ when it is current, else the
// sources through tsx). One ES-module bundle split into shared chunks, for the CLI and the modules
// worker threads load (lib/package-root.ts `moduleUrl`); packages stay in node_modules. Skips the
// build when dist/ is current (bin/dist.js), so `make setup` runs it every time.
//
//   node scripts/build-js.mjs [--force] [--root DIR]     # DIR: another checkout (default: this one)
import { renameSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { build } from 'esbuild';
import { distState, MANIFEST, ROOT } from '../bin/dist.js';

/** Compiled module (dist/<key>.js) → its source; lib/package-root.ts `moduleUrl` names the same files. */
const ENTRY_POINTS = {
  'cli/index': 'cli/index.ts',
  'workers/elevation-tiles': 'workers/elevation-tiles.ts',
  'workers/render-task': 'workers/render-task.ts',
};

const { values } = parseArgs({ options: { force: { type: 'boolean', default: false }, root: { type: 'string' } } });
const root = resolve(values.root ?? ROOT);
const state = distState(root);
if (state.state === 'fresh' && !values.force) process.exit(0);

const dist = join(root, 'dist');
const tmp = join(root, `dist.tmp-${process.pid}`);
const builtAt = Date.now();
const t0 = performance.now();
const result = await build({
  absWorkingDir: root,
  entryPoints: ENTRY_POINTS,
  outdir: tmp,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  packages: 'external',
  // As tsx (esbuild) runs the sources: functions and classes keep their names.
  keepNames: true,
  sourcemap: 'linked',
  chunkNames: 'chunks/[name]-[hash]',
  metafile: true,
  logLevel: 'warning',
});
// The files it was built from, relative to the root (a checkout may be moved), and this script.
const inputs = [...Object.keys(result.metafile.inputs), relative(root, import.meta.filename)];
writeFileSync(join(tmp, MANIFEST), `${JSON.stringify({ builtAt, inputs }, null, 1)}\n`);
// Swap the folders: a CLI starting meanwhile sees the old dist/ or the new one, never half of one.
const old = `${dist}.old-${process.pid}`;
try {
  renameSync(dist, old);
} catch (e) {
  if (e.code !== 'ENOENT') throw e;
}
renameSync(tmp, dist);
rmSync(old, { recursive: true, force: true });
const why = state.state === 'stale' ? ` (${state.file} changed)` : '';
console.log(`build-js: dist/ from ${inputs.length - 1} source files in ${Math.round(performance.now() - t0)} ms${why}`);
