// lib/process-tree.ts on real processes: a shell with two sleeping children, found by the /proc walk.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { alive, childrenOf, commandLine, descendants, processesWith, processStat, processTree } from '../lib/process-tree.ts';
import { treeCpuMs, treeRss } from './fixtures/measure.ts';

const marker = `tilebake-process-tree-${randomBytes(4).toString('hex')}`;
// sh → two shells named `<marker>-a` and `<marker>-b` (their $0, so in their command lines) → a sleep each.
const shell = spawn('sh', ['-c', 'sh -c "sleep 60; :" "$0-a" & sh -c "sleep 60; :" "$0-b" & wait', marker], { stdio: 'ignore' });

afterAll(() => {
  for (const s of processTree(shell.pid!)) {
    try {
      process.kill(s.pid, 'SIGKILL');
    } catch {
      // Exited when its parent or child was killed.
    }
  }
});

/** Wait until `ok()` (the shell starts its children asynchronously). */
async function until(ok: () => boolean): Promise<void> {
  for (let i = 0; i < 800 && !ok(); i++) await new Promise((r) => setTimeout(r, 25));
}

describe('process tree', () => {
  it('finds the children, descendants and command lines of a process', async () => {
    await until(() => processesWith(`${marker}-`).length === 2 && processesWith(`${marker}-`).every((pid) => childrenOf(pid).length === 1));
    const named = processesWith(`${marker}-`).sort((a, b) => a - b);
    expect(named).toHaveLength(2);
    const root = shell.pid!;
    expect(childrenOf(root).sort((a, b) => a - b)).toEqual(named);
    const sleeps = named.flatMap((pid) => childrenOf(pid));
    expect(sleeps.map((pid) => commandLine(pid))).toEqual(['sleep\u000060\u0000', 'sleep\u000060\u0000']);
    expect(descendants(root).map((s) => s.pid).sort((a, b) => a - b)).toEqual([...named, ...sleeps].sort((a, b) => a - b));
    expect(processTree(root)[0]).toMatchObject({ pid: root, ppid: process.pid });
    expect(processTree(root)).toHaveLength(5);
    expect(descendants(process.pid).map((s) => s.pid)).toEqual(expect.arrayContaining([root, ...named, ...sleeps]));
    expect(commandLine(named[0])!.split('\0')).toEqual(['sh', '-c', 'sleep 60; :', expect.stringMatching(new RegExp(`^${marker}-[ab]$`)), '']);
    expect([alive(root), processStat(root)!.state]).toEqual([true, expect.stringMatching(/^[RS]$/)]);
    expect(treeRss(root)).toBeGreaterThan(0);
    expect(treeCpuMs(root)).toBeGreaterThanOrEqual(0);
  });

  it('says a process that ended is gone', async () => {
    const quick = spawn('true');
    const pid = quick.pid!;
    await new Promise((r) => quick.on('exit', r));
    await until(() => !alive(pid));
    expect([alive(pid), processStat(pid), commandLine(pid), childrenOf(pid)]).toEqual([false, undefined, undefined, []]);
  });
});
