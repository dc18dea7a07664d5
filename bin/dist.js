// The compiled JavaScript in dist/ (written by scripts/build-js.mjs) and whether it is current: its
// manifest lists every source file it was built from and when the build started; a file changed
// since (or gone) makes it stale. Plain JavaScript: bin/tilebake.js checks this before it loads anything else.
import { readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';

/** The package root (bin/..). */
export const ROOT = resolve(import.meta.dirname, '..');
/** The manifest, relative to a dist folder. */
export const MANIFEST = 'manifest.json';
/** The CLI module, relative to a dist folder. */
export const CLI_MODULE = 'cli/index.js';

/**
 * The state of the dist folder of the package at `root`: `absent` (never built or unreadable),
 * `stale` with the first source file newer than the build (or missing), or `fresh`.
 * @param {string} [root]
 * @returns {{ state: 'absent' } | { state: 'stale', file: string } | { state: 'fresh', cli: string }}
 */
export function distState(root = ROOT) {
  const dist = join(root, 'dist');
  /** @type {{ builtAt: number, inputs: string[] }} */
  let manifest;
  try {
    manifest = JSON.parse(readFileSync(join(dist, MANIFEST), 'utf8'));
  } catch {
    return { state: 'absent' };
  }
  for (const file of manifest.inputs) {
    const mtime = statSync(join(root, file), { throwIfNoEntry: false })?.mtimeMs;
    if (mtime === undefined || mtime > manifest.builtAt) return { state: 'stale', file };
  }
  return { state: 'fresh', cli: join(dist, CLI_MODULE) };
}
