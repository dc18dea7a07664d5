#!/usr/bin/env node
// Compiles tilebake's native addon (lib/native/: binding.gyp, src/*.c; the PNG encoder, resamplers, overlay
// rasteriser) with node-gyp into lib/native/build/Release/tilebake_native.node, which lib/native.ts loads. Offline: node-gyp comes from
// node_modules (npm ci) and Node's own headers (include/node next to the node binary: Debian's nodejs
// package, the official images) are used instead of a download. Needs a C compiler, make and python3.
// A no-op when the addon is newer than its sources, so `make setup` runs it every time.
//
//   node scripts/build-native.mjs [--force]
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';

const ROOT = resolve(import.meta.dirname, '..');
const DIR = join(ROOT, 'lib/native');
const ADDON = join(DIR, 'build/Release/tilebake_native.node');

const { values } = parseArgs({ options: { force: { type: 'boolean', default: false } } });
const sources = [join(DIR, 'binding.gyp'), import.meta.filename, ...readdirSync(join(DIR, 'src')).map((f) => join(DIR, 'src', f))];
const built = statSync(ADDON, { throwIfNoEntry: false })?.mtimeMs;
const newer = built === undefined ? undefined : sources.find((f) => statSync(f).mtimeMs > built);
if (built !== undefined && !newer && !values.force) process.exit(0);

const fail = (msg) => {
  console.error(`build-native: ${msg}`);
  process.exit(1);
};
let nodeGyp;
try {
  nodeGyp = createRequire(join(ROOT, 'package.json')).resolve('node-gyp/bin/node-gyp.js');
} catch {
  fail('node-gyp is not in node_modules: run `make setup` (npm ci) first');
}
// Node's headers: <prefix>/include/node/node_api.h for a node binary at <prefix>/bin/node.
const prefix = dirname(dirname(process.execPath));
const nodedir = process.env.npm_config_nodedir || prefix;
if (!existsSync(join(nodedir, 'include/node/node_api.h'))) fail(`Node's headers are not in ${nodedir}/include/node (set npm_config_nodedir to a folder that has them)`);

const t0 = performance.now();
try {
  execFileSync(process.execPath, [nodeGyp, 'rebuild', `--nodedir=${nodedir}`, '--loglevel=warn'], { cwd: DIR, stdio: ['ignore', 'pipe', 'pipe'] });
} catch (e) {
  process.stderr.write(`${e.stdout ?? ''}${e.stderr ?? ''}`);
  fail('compiling lib/native failed (it needs gcc or clang, make and python3)');
}
const why = newer ? ` (${newer.slice(ROOT.length + 1)} changed)` : '';
console.log(`build-native: lib/native/build/Release/tilebake_native.node in ${Math.round(performance.now() - t0)} ms${why}`);
