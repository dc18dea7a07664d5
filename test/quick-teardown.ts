/**
 * vitest globalSetup of the quick tier: empties the violations file test/quick-guard.mjs writes, and at
 * the end of the run fails it when a quick test started a browser, a daemon or tilemaker (even when the
 * test itself caught the guard's error).
 */
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

const FILE = resolve(import.meta.dirname, '..', 'build', 'quick-violations.txt');

export default function setup(): () => void {
  mkdirSync(dirname(FILE), { recursive: true });
  rmSync(FILE, { force: true });
  return () => {
    let text = '';
    try {
      text = readFileSync(FILE, 'utf8');
    } catch {
      return;
    }
    if (!text.trim()) return;
    process.exitCode = 1;
    throw new Error(`the quick tier started what it must not:\n${text}`);
  };
}
