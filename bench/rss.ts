/** Memory and CPU time of a process tree for the benchmarks, read from /proc (Linux). */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/** Bytes per page in /proc/<pid>/stat's rss field. */
const PAGE = 4096;

/** /proc/<pid>/stat fields after the command (field 3 onwards) of process `root` and all its descendants. */
function treeStats(root: number): string[][] {
  const parent = new Map<number, number>();
  const stats = new Map<number, string[]>();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      parent.set(Number(d), Number(f[1]));
      stats.set(Number(d), f);
    } catch {
      // process exited
    }
  }
  const out: string[][] = [];
  for (const [pid, f] of stats) {
    for (let p: number | undefined = pid; p && p > 1; p = parent.get(p)) {
      if (p === root) {
        out.push(f);
        break;
      }
    }
  }
  return out;
}

/** RSS (bytes) of process `root` (default: this one) and all its descendants, summed. */
export function treeRss(root: number = process.pid): number {
  return treeStats(root).reduce((total, f) => total + Number(f[21]) * PAGE, 0);
}

/** Clock ticks per second of /proc/<pid>/stat's CPU times. */
let clockTicks: number | undefined;

/** CPU time (ms, user + system, all threads) used so far by process `root` and its living descendants. */
export function treeCpuMs(root: number = process.pid): number {
  clockTicks ??= Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  return treeStats(root).reduce((total, f) => total + ((Number(f[11]) + Number(f[12])) * 1000) / clockTicks!, 0);
}

/** Sample `treeRss(root)` every `intervalMs` until `stop()`, which returns the peak seen. */
export function sampleTreeRss(root: number = process.pid, intervalMs = 250): { stop(): number } {
  let peak = treeRss(root);
  const timer = setInterval(() => (peak = Math.max(peak, treeRss(root))), intervalMs);
  return {
    stop() {
      clearInterval(timer);
      return Math.max(peak, treeRss(root));
    },
  };
}
