/** Helpers shared by the wrk-based benchmarks. */
import type { ChildProcess } from 'node:child_process';

/** A seeded shuffle so every run uses the same order. */
export function shuffle<T>(a: T[], seed = 42): T[] {
  let s = seed;
  const rnd = () => ((s = (s * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    [a[i], a[j]] = [a[j], a[i]];
  }
  return a;
}

/** What one wrk run measured. */
export interface WrkFigures {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
}

/** Parse wrk's output (with --latency) into req/s and percentiles in ms. */
export function parseWrk(out: string): WrkFigures {
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1]);
  const ms = (label: string) => {
    const m = new RegExp(`^\\s+${label}%\\s+([\\d.]+)(us|ms|s)`, 'm').exec(out);
    if (!m) return NaN;
    const v = Number(m[1]);
    return m[2] === 'us' ? v / 1000 : m[2] === 's' ? v * 1000 : v;
  };
  const errors = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(out)?.[1] ?? 0) + Number(/Socket errors:.*?timeout (\d+)/.exec(out)?.[1] ?? 0);
  return { rps, p50: ms('50'), p99: ms('99'), errors };
}

/** SIGTERM a server and wait for it (SIGKILL after 10 s). */
export async function stop(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null) return;
  const exited = new Promise((r) => proc.once('exit', r));
  proc.kill('SIGTERM');
  const timer = setTimeout(() => proc.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}
