/** Chromium's processes by kind, for the chromium-start benchmarks (run.ts, phases.ts). */
import type { ProcessStat } from '../../lib/process-tree.ts';

/** Clock ticks per second of /proc/<pid>/stat's times (Linux's USER_HZ). */
const HZ = 100;

/** A process's kind from its command line: browser, zygote, gpu, renderer, the utility's sub-type. */
export function chromiumKind(cmd: string): string {
  const args = cmd.split(/[\0 ]/);
  const type = args.find((a) => a.startsWith('--type='))?.slice(7);
  if (!type) return args[0].endsWith('.sh') || args[0].includes('chromium') ? 'browser' : args[0];
  if (type === 'utility') return args.find((a) => a.startsWith('--utility-sub-type='))?.slice(19).replace(/^.*\./, '') ?? 'utility';
  return type === 'gpu-process' ? 'gpu' : type;
}

/** CPU seconds (user + system) a process has used so far. */
export function cpuSeconds(s: ProcessStat): number {
  return (Number(s.fields[11]) + Number(s.fields[12])) / HZ;
}
