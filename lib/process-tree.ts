/**
 * The processes of this host as Linux's /proc shows them: liveness, the parent of each, the tree
 * below a process, command lines. The one place that walks /proc: the build (leftover browsers and
 * tools), the benchmarks (memory and CPU of a tree, test/fixtures/measure.ts) and the tests (which browsers a
 * server started) use it.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** One process as /proc/<pid>/stat shows it. */
export interface ProcessStat {
  pid: number;
  /** Parent pid (0 for the kernel's own). */
  ppid: number;
  /** State letter: R running, S sleeping, Z zombie (ended, not yet reaped), … */
  state: string;
  /** The stat fields from the state on (field 3 of proc(5) is index 0, so field N is index N - 3). */
  fields: string[];
}

/** True when process `pid` exists on this host (a zombie included; owned by another user too). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** /proc/<pid>/stat of one process, or undefined when it is gone. */
export function processStat(pid: number): ProcessStat | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The command (field 2) is in parentheses and may hold spaces and ')': the fields follow the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).trimEnd().split(' ');
  return { pid, ppid: Number(fields[1]), state: fields[0], fields };
}

/** Every process now running, by pid (one that exits while this reads is left out). */
export function processTable(): Map<number, ProcessStat> {
  const table = new Map<number, ProcessStat>();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    const s = processStat(Number(d));
    if (s) table.set(s.pid, s);
  }
  return table;
}

/** The processes below `root` (children, their children, …), not `root` itself. */
export function descendants(root: number, table: Map<number, ProcessStat> = processTable()): ProcessStat[] {
  const out: ProcessStat[] = [];
  for (const s of table.values()) {
    for (let p = s.ppid; p > 1; p = table.get(p)?.ppid ?? 0) {
      if (p === root) {
        out.push(s);
        break;
      }
    }
  }
  return out;
}

/** The direct children of `pid`. */
export function childrenOf(pid: number): number[] {
  return [...processTable().values()].filter((s) => s.ppid === pid).map((s) => s.pid);
}

/** The command line of `pid`, arguments separated by NUL bytes; undefined when it is gone. */
export function commandLine(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return undefined;
  }
}

/** Pids of the processes whose command line contains `text` (arguments are NUL-separated). */
export function processesWith(text: string): number[] {
  const pids: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (/^\d+$/.test(d) && commandLine(Number(d))?.includes(text)) pids.push(Number(d));
  }
  return pids;
}

/** Chromium main processes (not their renderer/GPU helpers) among the descendants of `root`. */
export function chromiumBrowsersUnder(root: number): number[] {
  return descendants(root)
    .map((s) => s.pid)
    .filter((pid) => {
      const c = commandLine(pid);
      return c !== undefined && c.includes('chromium') && !c.includes('--type=');
    });
}

/** Process `root` (when it runs) and its descendants. */
export function processTree(root: number, table: Map<number, ProcessStat> = processTable()): ProcessStat[] {
  const self = table.get(root);
  return self ? [self, ...descendants(root, table)] : descendants(root, table);
}
