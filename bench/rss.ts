/** Memory of a process tree for the benchmarks, read from /proc (Linux). */
import { readdirSync, readFileSync } from 'node:fs';

/** Bytes per page in /proc/<pid>/stat's rss field. */
const PAGE = 4096;

/** RSS (bytes) of process `root` (default: this one) and all its descendants, summed. */
export function treeRss(root: number = process.pid): number {
  const parent = new Map<number, number>();
  const rss = new Map<number, number>();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      parent.set(Number(d), Number(f[1]));
      rss.set(Number(d), Number(f[21]) * PAGE);
    } catch {
      // process exited
    }
  }
  let total = 0;
  for (const [pid, bytes] of rss) {
    for (let p: number | undefined = pid; p && p > 1; p = parent.get(p)) {
      if (p === root) {
        total += bytes;
        break;
      }
    }
  }
  return total;
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
