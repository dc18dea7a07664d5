/** Memory and CPU time of a process tree for the benchmarks (the tree from lib/process-tree.ts). */
import { execFileSync } from 'node:child_process';
import { processTree } from '../lib/process-tree.ts';

/** Bytes per page in /proc/<pid>/stat's rss field. */
const PAGE = 4096;
/** Indexes in ProcessStat.fields of rss, utime and stime (fields 24, 14 and 15 of proc(5)). */
const RSS = 21;
const UTIME = 11;
const STIME = 12;

/** RSS (bytes) of process `root` (default: this one) and all its descendants, summed. */
export function treeRss(root: number = process.pid): number {
  return processTree(root).reduce((total, s) => total + Number(s.fields[RSS]) * PAGE, 0);
}

/** Clock ticks per second of /proc/<pid>/stat's CPU times. */
let clockTicks: number | undefined;

/** CPU time (ms, user + system, all threads) used so far by process `root` and its living descendants. */
export function treeCpuMs(root: number = process.pid): number {
  clockTicks ??= Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  return processTree(root).reduce((total, s) => total + ((Number(s.fields[UTIME]) + Number(s.fields[STIME])) * 1000) / clockTicks!, 0);
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
