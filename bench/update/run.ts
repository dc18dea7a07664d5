/**
 * Benchmark (not a test): nightly updates. Liechtenstein's Geofabrik extract of 2019-11-18 (sequence
 * 2434): a full build, then the three real dailies 2435–2437 one night at a time with `tilebake
 * update` (replication folder over file://), while `tilebake serve` runs on the output. Per night:
 * the update's wall time ÷ the full build's, the metatiles re-rendered, and the time from the end of
 * `update` to the server answering /health with the new sequence. Then an empty night: sequence 2438
 * served as a real empty Geofabrik daily (Monaco's of 2021-08-03, the same bytes every empty day has)
 * with a state file one day after 2437.
 *
 *   node --import tsx bench/update/run.ts [--quick] [--workers N] [--until SEQ] [--logs DIR] [--metatile N]
 *
 * Full: osm-bright and positron, z0–14, 1x and 2x, PNG (bench/update/RESULTS.md). --quick: osm-bright,
 * z0–12, 1x (RESULTS-quick.md). Target: each night ≤ 0.1 × the full build. --until SEQ stops after
 * that night (RESULTS.md is then not written: the table is printed only); --logs DIR keeps each run's
 * log (stderr: stage and step timings) as DIR/<run>.log; --metatile N renders metatiles of N×N tiles (default 4).
 */
import { execFile, spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { availableParallelism, cpus, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { fixtureFile, MONACO, replicationFolder } from '../../test/update-helpers.ts';
import { sequencePath } from '../../pipeline/update/replication.ts';
import { writeResults } from '../results.ts';

const ROOT = resolve(import.meta.dirname, '..', '..');
const CLI = join(ROOT, 'bin/tilebake.js');
const SAMPLE = join(ROOT, 'data/sample');
const FIXTURE = join(ROOT, 'test/fixtures/osm-replication/liechtenstein');
const { values } = parseArgs({ options: { quick: { type: 'boolean', default: false }, workers: { type: 'string' }, until: { type: 'string' }, logs: { type: 'string' }, metatile: { type: 'string', default: '4' } } });
const QUICK = values.quick;
const STYLES = QUICK ? ['osm-bright'] : ['osm-bright', 'positron'];
const MAXZOOM = QUICK ? 12 : 14;
const SCALES = QUICK ? [1] : [1, 2];
const NIGHTS = [2435, 2436, 2437];
const UNTIL = values.until === undefined ? undefined : Number(values.until);
if (UNTIL !== undefined && !NIGHTS.includes(UNTIL) && UNTIL !== 2438) throw new Error(`--until ${values.until}: expected one of ${[...NIGHTS, 2438].join(', ')}`);
/** The empty night: its sequence, time, and the empty daily served as it. */
const EMPTY = { sequence: 2438, timestamp: '2019-11-22T21\\:19\\:02Z', osc: fixtureFile(MONACO, 3049, 'osc.gz') };
const WORK = join(ROOT, 'build', 'bench-update');
const MS_PER_S = 1000;
const POLL_MS = 50;

/** Keep a run's log when --logs is given. */
function keepLog(name: string, stderr: string): void {
  if (!values.logs) return;
  mkdirSync(values.logs, { recursive: true });
  writeFileSync(join(values.logs, `${name}.log`), stderr);
}

/** Run the CLI; wall seconds and stderr. */
function cli(args: string[]): Promise<{ seconds: number; stderr: string }> {
  const t0 = performance.now();
  const all = [CLI, ...args, ...(values.workers ? ['--workers', values.workers] : [])];
  return new Promise((res, rej) => {
    execFile(process.execPath, all, { cwd: ROOT, env: { ...process.env, CI: '1' }, maxBuffer: 64 * 1024 * 1024 }, (err, _out, stderr) => {
      if (err) return rej(new Error(`tilebake ${args[0]} failed: ${stderr}`));
      res({ seconds: (performance.now() - t0) / MS_PER_S, stderr });
    });
  });
}

/** `re-rendered X of Y` summed over a run's lines. */
function rerendered(stderr: string): string {
  const counts = [...stderr.matchAll(/re-rendered (\d+) of (\d+)/g)].map((m) => [Number(m[1]), Number(m[2])]);
  const [n, of] = counts.reduce(([a, b], [c, d]) => [a + c, b + d], [0, 0]);
  return `${n} of ${of}`;
}

/** Start `tilebake serve` on `out`; resolves with its URL and a stop function. */
async function startServer(out: string): Promise<{ url: string; stop: () => Promise<void> }> {
  const serve = spawn(process.execPath, [CLI, 'serve', '--out', out, '--port', '0', '--host', '127.0.0.1', '--workers', '2', '--no-auth', '--version-poll-ms', '200'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  serve.stdout.on('data', (d: Buffer) => (log += d.toString()));
  serve.stderr.on('data', (d: Buffer) => (log += d.toString()));
  while (!log.includes('tilebake listening')) await new Promise((r) => setTimeout(r, POLL_MS));
  const url = (JSON.parse(log.split('\n').find((l) => l.includes('tilebake listening'))!) as { url: string }).url;
  return {
    url,
    stop: async () => {
      serve.kill('SIGTERM');
      await new Promise((r) => serve.once('exit', r));
    },
  };
}

/** Seconds until `count` consecutive /health answers (spread over both workers) show `sequence`. */
async function untilServed(url: string, sequence: number, count = 8): Promise<number> {
  const t0 = performance.now();
  let seen = 0;
  while (seen < count) {
    const h = (await (await fetch(`${url}/health`)).json()) as { data?: { omt?: { sequence?: number } } };
    seen = h.data?.omt?.sequence === sequence ? seen + 1 : 0;
    if (seen === 0) await new Promise((r) => setTimeout(r, POLL_MS));
  }
  return (performance.now() - t0) / MS_PER_S;
}

async function main(): Promise<void> {
  rmSync(WORK, { recursive: true, force: true });
  mkdirSync(WORK, { recursive: true });
  const extract = join(WORK, 'liechtenstein-2019-11-18.osm.pbf');
  copyFileSync(join(FIXTURE, '2019-11-18.osm.pbf'), extract);
  const served = join(WORK, 'liechtenstein-updates');
  const out = join(WORK, 'out');
  const style = (id: string) => ({ style: join(SAMPLE, 'styles', id, 'style.json'), tileset: 'omt', minzoom: 0, maxzoom: MAXZOOM, scales: SCALES, formats: ['png'] });
  const config = join(WORK, 'config.json');
  writeFileSync(config, JSON.stringify({
    out,
    tilesets: { omt: { source: extract, replication: `${pathToFileURL(served).href}/` } },
    styles: Object.fromEntries(STYLES.map((s) => [s, style(s)])),
    fonts: join(SAMPLE, 'fonts'),
    render: { metatile: Number(values.metatile), margin: 64 },
  }, null, 2));

  const full = await cli(['build', '--config', config, '--full']);
  keepLog('full', full.stderr);
  const server = await startServer(out);
  const rows: string[][] = [];
  try {
    for (const seq of [...NIGHTS, EMPTY.sequence].filter((n) => UNTIL === undefined || n <= UNTIL)) {
      rmSync(served, { recursive: true, force: true });
      await replicationFolder({ replication: join(FIXTURE, 'replication') }, served, Math.min(seq, NIGHTS[NIGHTS.length - 1]));
      if (seq === EMPTY.sequence) {
        const state = `sequenceNumber=${seq}\ntimestamp=${EMPTY.timestamp}\n`;
        const at = join(served, sequencePath(seq));
        mkdirSync(dirname(at), { recursive: true });
        copyFileSync(EMPTY.osc, `${at}.osc.gz`);
        writeFileSync(`${at}.state.txt`, state);
        writeFileSync(join(served, 'state.txt'), state);
      }
      const night = await cli(['update', '--config', config]);
      keepLog(`night-${seq}`, night.stderr);
      const switchS = await untilServed(server.url, seq);
      const changes = /: (\d+) change files, (\d+) changed objects/.exec(night.stderr);
      rows.push([`${seq}`, changes?.[2] ?? '?', night.seconds.toFixed(1), (night.seconds / full.seconds).toFixed(3), rerendered(night.stderr), switchS.toFixed(2)]);
    }
  } finally {
    await server.stop();
  }
  const table = [
    '| run | changed objects | seconds | × full build | metatiles re-rendered | update end → served (s) |',
    '|---|---:|---:|---:|---|---:|',
    `| full build (2434) | | ${full.seconds.toFixed(1)} | 1 | ${rerendered(full.stderr)} | |`,
    ...rows.map((r) => `| night ${r[0]}${Number(r[0]) === EMPTY.sequence ? ' (empty)' : ''} | ${r[1]} | ${r[2]} | ${r[3]} | ${r[4]} | ${r[5]} |`),
  ].join('\n');
  const machine = `${cpus()[0]?.model ?? 'unknown CPU'}, ${availableParallelism()} cores, load average at the end ${loadavg().map((l) => l.toFixed(2)).join(' ')}`;
  const text = `# bench/update${QUICK ? ' (--quick)' : ''}\n\nLiechtenstein 2019-11-18 (sequence 2434) and the Geofabrik dailies 2435–2437 over file://, then an empty daily as 2438; styles ${STYLES.join(', ')}, z0–${MAXZOOM}, ${SCALES.map((s) => `${s}x`).join(' and ')}, PNG; \`tilebake serve --workers 2\` running. ${machine} (a shared machine: indicative only). Target: each night ≤ 0.1 × the full build.\n\n${table}\n`;
  process.stdout.write(`${text}\n`);
  if (UNTIL === undefined) writeResults(join(import.meta.dirname, QUICK ? 'RESULTS-quick.md' : 'RESULTS.md'), text);
}

await main();
