/**
 * What bench/static-map/run.ts and serve-ab.ts share: `tilebake serve` over a build (from any checkout),
 * and wrk over a list of URLs (or of POSTed bodies).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { openSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../test/fixtures/server/helpers.ts';
import { parseWrk, stop, type WrkFigures } from '../wrk.ts';
import { root } from './sample.ts';

export const TOKEN = 'bench-token-not-secret';
const LUA = join(root, 'bench/serve-vector/tiles.lua');
/** Lines of requests, GETs or POSTs (bench/soak's script). */
const LINES_LUA = join(root, 'bench/soak/mixed.lua');
/** `serve` processes (its default: one per core). */
export const PROCESSES = availableParallelism();

/** A running `tilebake serve` over `out`. */
export interface Server {
  proc: ChildProcess;
  base: string;
  metricsPort: number;
}

export interface ServeOptions {
  /** More `serve` options. */
  extra?: string[];
  /** The checkout whose bin/tilebake.js runs (default: this one). */
  checkout?: string;
  /** Options for node itself (before the script; cluster workers inherit them). */
  nodeArgs?: string[];
  /** A file the server's stdout is written to (where V8's traces go; default: ignored). */
  stdoutFile?: string;
}

/** Start `tilebake serve` over `out` and wait until it answers /health. */
export async function serve(out: string, opts: ServeOptions = {}): Promise<Server> {
  const port = await freePort();
  const metricsPort = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const argv = ['serve', '--out', out, '--port', String(port), '--host', '127.0.0.1', '--metrics-port', String(metricsPort), '--workers', String(PROCESSES), '--log-level', 'warn', '--version-poll-ms', '0', ...(opts.extra ?? [])];
  const proc = spawn(process.execPath, [...(opts.nodeArgs ?? []), join(opts.checkout ?? root, 'bin/tilebake.js'), ...argv], {
    env: { ...process.env, TILEBAKE_TOKENS: TOKEN },
    stdio: ['ignore', opts.stdoutFile ? openSync(opts.stdoutFile, 'w') : 'ignore', 'inherit'],
  });
  try {
    for (let t = Date.now(); ; ) {
      if (proc.exitCode !== null) throw new Error(`serve exited with ${proc.exitCode}`);
      if (await fetch(`${base}/health`).then((r) => r.ok, () => false)) break;
      if (Date.now() - t > 60_000) throw new Error('serve not ready after 60 s');
      await new Promise((r) => setTimeout(r, 250));
    }
  } catch (e) {
    await stop(proc);
    throw e;
  }
  return { proc, base, metricsPort };
}

/** wrk (2 threads, `connections`) for `seconds` over the paths of `list` (each prefixed with `prefix`), with the bench's token. */
export function wrk(base: string, list: string, prefix: string, seconds: number, connections: number): WrkFigures {
  const out = execFileSync('wrk', ['-t2', `-c${connections}`, `-d${seconds}s`, '--timeout', '10s', '--latency', '-s', LUA, base, '--', list, prefix, TOKEN], { encoding: 'utf8' });
  return parseWrk(out);
}

/** wrk (2 threads, `connections`) for `seconds` over the `post <path>\t<body>` lines of `list` (bench/soak/mixed.lua), with the bench's token. */
export function wrkPost(base: string, list: string, seconds: number, connections: number): WrkFigures {
  const out = execFileSync('wrk', ['-t2', `-c${connections}`, `-d${seconds}s`, '--timeout', '10s', '--latency', '-s', LINES_LUA, base, '--', list, TOKEN], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  return parseWrk(out);
}
