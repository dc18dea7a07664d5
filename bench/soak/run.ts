/**
 * Soak benchmark (not a test): `tilebake serve` (default workers) on the full sample build under mixed
 * load from Debian's wrk for a long time: vector tiles (with and without gzip), raster tiles at 1x and
 * @2x, and `POST /height`. Every 10 s it samples the resident memory and open file descriptors of the
 * server's processes (/proc). Target: zero errors, RSS and handles flat after warm-up.
 *
 *   node --import tsx bench/soak/run.ts [--duration 300] [--warmup 60] [--out DIR]
 *
 * `--out` reuses a build (e.g. build/sample from `make demo`); otherwise the sample is built once into
 * bench/results/soak/build. Prints every sample and a summary; a full run (≥ 300 s) writes
 * bench/soak/RESULTS.md, a shorter one bench/results/soak/RESULTS.md.
 */
import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { tileIdToZxy } from 'pmtiles';
import { currentVersionDir } from '../../lib/build-version.ts';
import type { Manifest } from '../../lib/manifest.ts';
import { childrenOf, processStat } from '../../lib/process-tree.ts';
import { openArchiveFile } from '../../lib/pmtiles/index.ts';
import { writeResults } from '../results.ts';

const root = resolve(import.meta.dirname, '../..');
const { values: args } = parseArgs({
  options: {
    duration: { type: 'string', default: '300' },
    warmup: { type: 'string', default: '60' },
    out: { type: 'string' },
    port: { type: 'string', default: '18790' },
  },
});
const DURATION_S = Number(args.duration);
const WARMUP_S = Math.min(Number(args.warmup), Math.floor(DURATION_S / 5));
const SAMPLE_EVERY_S = 10;
const FULL_RUN_S = 300;
const TOKEN = 'soak-bench-token-not-secret';
const PORT = Number(args.port);
const BASE = `http://127.0.0.1:${PORT}`;
const work = join(root, 'bench/results/soak');
/** Points per /height request (a route planner's typical elevation profile). */
const HEIGHT_POINTS = 200;
/** Monaco, where the sample has tiles and heights. */
const MONACO = { west: 7.409, south: 43.7247, east: 7.4399, north: 43.7519 };

/** One sample of the server's processes. */
interface Sample {
  t: number;
  rssMb: number;
  fds: number;
  processes: number;
}

/** What one wrk process reported. */
interface WrkResult {
  name: string;
  requests: number;
  rps: number;
  p99Ms: number;
  non2xx: number;
  socketErrors: number;
}

/** The sample build: reused with --out, else built once. */
function buildFolder(): string {
  if (args.out) return resolve(args.out);
  const out = join(work, 'build');
  if (!existsSync(join(out, 'current.json'))) {
    console.log(`building the sample into ${out} (vector, render, elevation)…`);
    execFileSync(process.execPath, [join(root, 'bin/tilebake.js'), 'build', '--config', join(root, 'data/sample/config.json'), '--out', out], {
      stdio: 'inherit',
      env: { ...process.env, CI: '1' },
    });
  }
  return out;
}

/** Every tile z/x/y of an archive (run-length entries expanded). */
async function archiveTiles(path: string): Promise<string[]> {
  const reader = await openArchiveFile(path);
  const out: string[] = [];
  try {
    for await (const e of reader.entries()) {
      for (let i = 0; i < e.runLength; i++) out.push(tileIdToZxy(e.tileId + i).join('/'));
    }
  } finally {
    await reader.close();
  }
  return out;
}

/** The wrk request list: `<gzip|plain> <path>` for every vector tile (both ways) and every raster tile. */
async function tileList(out: string, manifest: Manifest): Promise<string[]> {
  const lines: string[] = [];
  for (const [id, ts] of Object.entries(manifest.tilesets)) {
    for (const zxy of await archiveTiles(join(out, ts.archive))) {
      lines.push(`gzip /data/${id}/${zxy}.${ts.format}`);
      if (ts.kind === 'vector') lines.push(`plain /data/${id}/${zxy}.${ts.format}`);
    }
  }
  for (const [id, style] of Object.entries(manifest.styles)) {
    for (const a of Object.values(style.archives)) {
      for (const zxy of await archiveTiles(join(out, a.archive))) lines.push(`gzip /styles/${id}/${zxy}${a.scale === 2 ? '@2x' : ''}.${a.format}`);
    }
  }
  // Deterministic shuffle, so consecutive requests hit different archives.
  let s = 42;
  for (let i = lines.length - 1; i > 0; i--) {
    s = (s * 1103515245 + 12345) & 0x7fffffff;
    const j = s % (i + 1);
    [lines[i], lines[j]] = [lines[j], lines[i]];
  }
  return lines;
}

/** The server's processes: the primary and its cluster workers. */
function serverPids(primary: number): number[] {
  return processStat(primary) ? [primary, ...childrenOf(primary)] : [];
}

/** Resident memory (MB) and open descriptors summed over the server's processes. */
function sample(primary: number, t: number): Sample {
  let rssKb = 0;
  let fds = 0;
  const pids = serverPids(primary);
  for (const pid of pids) {
    try {
      rssKb += Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
      fds += readdirSync(`/proc/${pid}/fd`).length;
    } catch {
      // The process exited between listing and reading.
    }
  }
  return { t, rssMb: rssKb / 1024, fds, processes: pids.length };
}

/** Parse wrk's summary. */
function parseWrk(name: string, text: string): WrkResult {
  const num = (re: RegExp) => Number(re.exec(text)?.[1] ?? 0);
  const p99 = /^\s+99%\s+([\d.]+)(us|ms|s)/m.exec(text);
  const p99Ms = p99 ? Number(p99[1]) * (p99[2] === 'us' ? 0.001 : p99[2] === 's' ? 1000 : 1) : NaN;
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(text);
  return {
    name,
    requests: num(/(\d+) requests in/),
    rps: num(/Requests\/sec:\s+([\d.]+)/),
    p99Ms,
    non2xx: num(/Non-2xx or 3xx responses:\s+(\d+)/),
    socketErrors: socket ? socket.slice(1).reduce((n, v) => n + Number(v), 0) : 0,
  };
}

/** Start one wrk process; resolves with its parsed result. */
function wrk(name: string, wrkArgs: string[], env: NodeJS.ProcessEnv = {}): Promise<WrkResult> {
  return promisify(execFile)('wrk', ['--latency', '-d', `${DURATION_S}s`, ...wrkArgs], { env: { ...process.env, ...env }, maxBuffer: 1 << 20 }).then(
    ({ stdout }) => parseWrk(name, stdout),
  );
}

async function waitReady(proc: ChildProcess): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (proc.exitCode !== null) throw new Error(`tilebake serve exited with ${proc.exitCode}`);
    const ok = await fetch(`${BASE}/health`).then((r) => r.ok, () => false);
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('tilebake serve did not answer /health within 60 s');
}

/** First, last and extremes of a series after warm-up. */
function trend(values: number[]): { first: number; last: number; min: number; max: number } {
  return { first: values[0], last: values[values.length - 1], min: Math.min(...values), max: Math.max(...values) };
}

async function main(): Promise<void> {
  mkdirSync(work, { recursive: true });
  const out = buildFolder();
  // The version being served (lib/build-version.ts): its manifest and archives.
  const version = (await currentVersionDir(out))?.dir ?? out;
  const manifest = JSON.parse(readFileSync(join(version, 'manifest.json'), 'utf8')) as Manifest;
  const lines = await tileList(version, manifest);
  const listFile = join(work, 'tiles.txt');
  writeFileSync(listFile, `${lines.join('\n')}\n`);
  const bodyFile = join(work, 'height.json');
  const shape = Array.from({ length: HEIGHT_POINTS }, (_, i) => ({
    lat: +(MONACO.south + (MONACO.north - MONACO.south) * ((i * 0.6180339887) % 1)).toFixed(6),
    lon: +(MONACO.west + (MONACO.east - MONACO.west) * ((i * 0.7548776662) % 1)).toFixed(6),
  }));
  writeFileSync(bodyFile, JSON.stringify({ shape, range: true }));

  const server = spawn(process.execPath, [join(root, 'bin/tilebake.js'), 'serve', '--out', out, '--port', String(PORT), '--host', '127.0.0.1', '--log-level', 'warn'], {
    env: { ...process.env, TILEBAKE_TOKENS: TOKEN },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // --log-level warn: anything the server writes is a warning or an error.
  let serverErrors = '';
  server.stdout!.on('data', (d: Buffer) => (serverErrors += d.toString()));
  server.stderr!.on('data', (d: Buffer) => (serverErrors += d.toString()));
  const samples: Sample[] = [];
  try {
    await waitReady(server);
    const pid = server.pid!;
    console.log(`${lines.length} tile requests in the list (vector gzip + plain, raster 1x/@2x), /height with ${HEIGHT_POINTS} points; ${DURATION_S} s, warm-up ${WARMUP_S} s`);
    samples.push(sample(pid, 0));
    const started = Date.now();
    const timer = setInterval(() => {
      const s = sample(pid, Math.round((Date.now() - started) / 1000));
      samples.push(s);
      console.log(`t=${String(s.t).padStart(4)} s  rss ${s.rssMb.toFixed(1).padStart(7)} MB  fds ${String(s.fds).padStart(4)}  processes ${s.processes}`);
    }, SAMPLE_EVERY_S * 1000);
    const results = await Promise.all([
      wrk('tiles', ['-t1', '-c16', '-s', join(root, 'bench/soak/mixed.lua'), BASE, '--', listFile, TOKEN]),
      wrk('height', ['-t1', '-c4', '-s', join(root, 'bench/height/post.lua'), `${BASE}/height`], { BODY_FILE: bodyFile, TOKEN }),
    ]);
    clearInterval(timer);
    // Once the load has stopped: keep-alive connections closed, what stays open is the server's own.
    await new Promise((r) => setTimeout(r, 1000));
    report(results, samples, sample(pid, Math.round((Date.now() - started) / 1000)), serverErrors);
  } finally {
    server.kill('SIGTERM');
    await new Promise((r) => server.once('exit', r));
  }
}

function report(results: WrkResult[], samples: Sample[], idle: Sample, serverErrors: string): void {
  const errors = results.reduce((n, r) => n + r.non2xx + r.socketErrors, 0);
  const after = samples.filter((s) => s.t >= WARMUP_S);
  const rss = trend(after.map((s) => s.rssMb));
  const fds = trend(after.map((s) => s.fds));
  const rssGrowth = ((rss.last - rss.first) / rss.first) * 100;
  const rows = results.map((r) => `| ${r.name} | ${r.requests.toLocaleString('en-US')} | ${Math.round(r.rps).toLocaleString('en-US')} | ${r.p99Ms.toFixed(1)} | ${r.non2xx} | ${r.socketErrors} |`);
  const logged = serverErrors.split('\n').filter((l) => l.trim() !== '').length;
  const cpu = execFileSync('sh', ['-c', 'nproc'], { encoding: 'utf8' }).trim();
  const md = `# bench/soak results

${new Date().toISOString().slice(0, 10)}, ${cpu} cores, ${process.version}; \`tilebake serve\` with its default workers on the full sample build,
${DURATION_S} s of wrk (tiles: -t1 -c16 over every vector tile with and without gzip and every raster tile; height: -t1 -c4,
${HEIGHT_POINTS}-point POST /height with range), RSS and open descriptors of all server processes every ${SAMPLE_EVERY_S} s, warm-up ${WARMUP_S} s.
wrk runs on the same cores as the server.

| load | requests | req/s | p99 ms | non-2xx | socket errors |
|---|---:|---:|---:|---:|---:|
${rows.join('\n')}

| after warm-up (${after.length} samples) | first | last | min | max |
|---|---:|---:|---:|---:|
| RSS, all processes (MB) | ${rss.first.toFixed(1)} | ${rss.last.toFixed(1)} | ${rss.min.toFixed(1)} | ${rss.max.toFixed(1)} |
| open descriptors | ${fds.first} | ${fds.last} | ${fds.min} | ${fds.max} |

Errors: ${errors} (target 0); RSS last vs first after warm-up: ${rssGrowth >= 0 ? '+' : ''}${rssGrowth.toFixed(1)} %; descriptors ${fds.last - fds.first >= 0 ? '+' : ''}${fds.last - fds.first}; server log lines at warn or above: ${logged}.
Once the load stopped: ${idle.rssMb.toFixed(1)} MB, ${idle.fds} descriptors (${samples[0].fds} before the load; archives open on first use and stay open).

Samples under load (t s: RSS MB / fds): ${samples.map((s) => `${s.t}: ${s.rssMb.toFixed(0)}/${s.fds}`).join(', ')}
`;
  console.log(`\n${md}`);
  const file = DURATION_S >= FULL_RUN_S ? join(root, 'bench/soak/RESULTS.md') : join(work, 'RESULTS.md');
  writeResults(file, md);
  console.log(`written to ${file}${DURATION_S < FULL_RUN_S ? ` (a short run: bench/soak/RESULTS.md is only written by runs of ≥ ${FULL_RUN_S} s)` : ''}`);
  if (serverErrors.trim() !== '') console.log(`server log:\n${serverErrors.slice(0, 4000)}`);
}

await main();
