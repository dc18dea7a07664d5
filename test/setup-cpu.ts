/**
 * vitest setupFile: the CPU seconds each test file costs (its fork, its threads, and every child process
 * it waited for: tilemaker, osmium, each Chromium), appended to `build/test-cpu.jsonl` for
 * scripts/test-summary.mjs. Wall time hides which file is heavy when two share the 2 cores; CPU does not.
 */
import { appendFileSync, mkdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { afterAll, beforeAll, expect } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..');
const HZ = 100; // USER_HZ on Linux

/** utime + stime + cutime + cstime of this process, in seconds (0 where /proc is missing). */
function cpuSeconds(): number {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields.slice(11, 15).reduce((a, v) => a + Number(v), 0) / HZ;
  } catch {
    return 0;
  }
}

let file = '';
let cpu0 = 0;
let wall0 = 0;
beforeAll(() => {
  file = relative(ROOT, expect.getState().testPath ?? '');
  cpu0 = cpuSeconds();
  wall0 = performance.now();
});
afterAll(() => {
  const row = { file, cpu: +(cpuSeconds() - cpu0).toFixed(2), wall: +((performance.now() - wall0) / 1000).toFixed(2) };
  mkdirSync(join(ROOT, 'build'), { recursive: true });
  appendFileSync(join(ROOT, 'build', 'test-cpu.jsonl'), `${JSON.stringify(row)}\n`);
});
