/**
 * vitest setupFile: the CPU seconds each test file costs, appended to `build/test-cpu.jsonl` for
 * scripts/test-summary.mjs. Wall time hides which file is heavy when two share the 2 cores; CPU does not.
 *
 * Where cgroup v1's cpuacct is writable (root), the file's process moves into a cgroup of its own, so
 * that everything it starts is counted: tilemaker, osmium, servers and each Chromium with its GPU and
 * renderer processes, which end as orphans when a browser is killed and so never reach the parent's
 * rusage. Elsewhere, the process's own CPU and that of the children it waited for (/proc/self/stat).
 */
import { appendFileSync, mkdirSync, readFileSync, readdirSync, rmdirSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { afterAll, beforeAll, expect } from 'vitest';
import { CPUACCT, cpuacctSeconds, ownCpuSeconds as rusageSeconds } from './fixtures/measure.ts';

const ROOT = resolve(import.meta.dirname, '..');
const PREFIX = 'tilebake-test-';


/** This process's cpuacct cgroup folder, if cgroup v1's cpuacct is mounted. */
function currentCgroup(): string | undefined {
  try {
    const line = readFileSync('/proc/self/cgroup', 'utf8').split('\n').find((l) => /^\d+:[^:]*\bcpuacct\b[^:]*:/.test(l));
    return line ? join(CPUACCT, line.slice(line.indexOf(':', line.indexOf(':') + 1) + 1)) : undefined;
  } catch {
    return undefined;
  }
}

/** Move this process into a new cgroup under its own (emptied ones of earlier files removed); undefined where not allowed. */
function enterCgroup(): { parent: string; own: string } | undefined {
  const parent = currentCgroup();
  if (!parent) return undefined;
  try {
    for (const name of readdirSync(parent)) if (name.startsWith(PREFIX)) try { rmdirSync(join(parent, name)); } catch { /* still has processes */ }
    const own = join(parent, `${PREFIX}${process.pid}-${Date.now()}`);
    mkdirSync(own);
    writeFileSync(join(own, 'cgroup.procs'), String(process.pid));
    return { parent, own };
  } catch {
    return undefined;
  }
}

let file = '';
let cgroup: { parent: string; own: string } | undefined;
let cpu0 = 0;
let wall0 = 0;
beforeAll(() => {
  file = relative(ROOT, expect.getState().testPath ?? '');
  cgroup = enterCgroup();
  cpu0 = cgroup ? 0 : rusageSeconds();
  wall0 = performance.now();
});
afterAll(() => {
  let cpu: number;
  if (cgroup) {
    cpu = cpuacctSeconds(cgroup.own);
    writeFileSync(join(cgroup.parent, 'cgroup.procs'), String(process.pid));
    try { rmdirSync(cgroup.own); } catch { /* orphans still ending: removed by a later file */ }
  } else cpu = rusageSeconds() - cpu0;
  const row = { file, cpu: +cpu.toFixed(2), wall: +((performance.now() - wall0) / 1000).toFixed(2), by: cgroup ? 'cgroup' : 'rusage' };
  mkdirSync(join(ROOT, 'build'), { recursive: true });
  appendFileSync(join(ROOT, 'build', 'test-cpu.jsonl'), `${JSON.stringify(row)}\n`);
});
