/**
 * Benchmark: the search index (docs/search.md). Three parts, each against its baseline in the same run:
 *
 * 1. Building: the index of an extract (bench/search/index.ts) against the vector stage of the same extract
 *    (bench/osm/stage.ts, the world's z0–6 cached), each in its own process, alternated (A B A B …): wall and
 *    CPU time (the process and the osmium/tilemaker runs it waited for) and the index's bytes per MB of extract.
 * 2. Serving: `tilebake serve` (2 workers) over a build of Liechtenstein with its index, loaded by Debian's wrk
 *    cycling through 1,000 real queries in shuffled order (500 names of the index's entries, 500 prefixes of
 *    3–8 letters of them), then the same for /reverse at 1,000 points of streets and addresses: queries/s,
 *    p50/p99 latency, the server's CPU per query; beside `GET /health` (the server's floor) in the same run; each with
 *    the answer cache on (the default) and off (`--cache-mb 0`), since the 1,000 queries cycle.
 * 3. Ranking against the OSM objects themselves (no published Nominatim or Photon test set covers
 *    Liechtenstein or Monaco): the share of named entries found first by their name, and found in the top 5
 *    by their first five letters, by kind.
 *
 *   node --import tsx bench/search/run.ts [--rounds 3] [--duration 20] [--warmup 5] [--connections 32] [--quick]
 *
 * Targets: ≥ 5,000 queries/s, p99 ≤ 20 ms, an index build ≤ 15 % of the vector stage's time.
 * Writes bench/search/RESULTS.md (its History kept: bench/results.ts).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import { SearchIndex } from '../../lib/search/query.ts';
import { ownCpuSeconds, treeCpuMs } from '../../test/fixtures/measure.ts';
import { runSampled } from '../command.ts';
import { readResults, writeResults } from '../results.ts';
import { parseWrk, shuffle, stop } from '../wrk.ts';

const ROOT = resolve(import.meta.dirname, '..', '..');
const { values: args } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    duration: { type: 'string', default: '20' },
    warmup: { type: 'string', default: '5' },
    connections: { type: 'string', default: '32' },
    quick: { type: 'boolean', default: false },
  },
});
if (args.quick) Object.assign(args, { rounds: '1', duration: '3', warmup: '1' });
const ROUNDS = Math.max(1, Number(args.rounds));
const WORK = join(ROOT, 'build', 'bench-search');
const RESULTS = join(ROOT, 'bench/search/RESULTS.md');
const TOKEN = 'bench-token-not-secret';
const PORT = 18791;
const MB = 1024 * 1024;
const QUERIES = 1000;
const TARGET = { qps: 5000, p99: 20, build: 0.15 };
const REGIONS = {
  liechtenstein: join(ROOT, 'data/liechtenstein/liechtenstein-latest.osm.pbf'),
  monaco: join(ROOT, 'data/sample/monaco-latest.osm.pbf'),
};

const median = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
const fmt = (v: number, d = 2) => v.toFixed(d);

interface BuildRun {
  seconds: number;
  cpu: number;
  bytes?: number;
  entries?: number;
}

/** Run `node ARGS…`: its wall time, and its CPU with every process it waited for (this process's children's time). */
async function timed(argv: string[]): Promise<{ seconds: number; cpu: number; stdout: string }> {
  const c0 = ownCpuSeconds();
  const r = await runSampled(process.execPath, argv);
  return { seconds: r.seconds, cpu: ownCpuSeconds() - c0, stdout: r.stdout };
}

/** Run a child that prints one JSON line; its figures (time inside the process, CPU of its tree). */
async function child(script: string, argv: string[]): Promise<BuildRun> {
  const r = await timed(['--import', 'tsx', join(ROOT, script), ...argv]);
  return { ...(JSON.parse(r.stdout.trim().split('\n').pop()!) as BuildRun), cpu: r.cpu };
}

/** `tilebake build --only vector --full` of `pbf` with or without its search index: wall time of the command, CPU of its tree. */
async function vectorBuild(dir: string, pbf: string, search: boolean, worldCache: string): Promise<BuildRun> {
  const config = join(dir, `config-${search}.json`);
  writeFileSync(config, JSON.stringify({ out: join(dir, `out-${search}`), tilesets: { omt: { source: pbf, search } } }));
  process.env.TILEBAKE_WORLD_CACHE = worldCache;
  return timed([join(ROOT, 'bin/tilebake.js'), 'build', '--config', config, '--only', 'vector', '--full']);
}

/**
 * Part 1: the index build alone against the vector stage alone, alternated, per region; then the whole
 * `build --only vector` with the index (made beside the tiles) against without it.
 */
async function buildPart(): Promise<{ alone: string[]; beside: string[] }> {
  const alone: string[] = [];
  const beside: string[] = [];
  for (const [region, pbf] of Object.entries(REGIONS)) {
    const dir = join(WORK, `build-${region}`);
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    const worldCache = join(ROOT, 'build', 'bench-search-world');
    // Once before the rounds: the world's z0–6 is built into its cache (not part of any night's stage).
    await child('bench/osm/stage.ts', [pbf, join(dir, 'warm.pmtiles'), '--world-cache', worldCache]);
    const index: BuildRun[] = [];
    const stage: BuildRun[] = [];
    const withIndex: BuildRun[] = [];
    const without: BuildRun[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      index.push(await child('bench/search/index.ts', [pbf, join(dir, `index-${i}.sqlite`)]));
      stage.push(await child('bench/osm/stage.ts', [pbf, join(dir, `stage-${i}.pmtiles`), '--world-cache', worldCache]));
      withIndex.push(await vectorBuild(dir, pbf, true, worldCache));
      without.push(await vectorBuild(dir, pbf, false, worldCache));
      process.stderr.write(`search bench: ${region} round ${i + 1}: index ${fmt(index[i].seconds)} s (${fmt(index[i].cpu)} CPU s), stage ${fmt(stage[i].seconds)} s (${fmt(stage[i].cpu)} CPU s); build --only vector ${fmt(withIndex[i].seconds)} s with the index, ${fmt(without[i].seconds)} s without\n`);
    }
    const wall = index.map((r, i) => r.seconds / stage[i].seconds);
    const cpu = index.map((r, i) => r.cpu / stage[i].cpu);
    const mb = statSync(pbf).size / MB;
    const bytes = index[0].bytes!;
    const ok = median(wall) <= TARGET.build ? '✔' : '✘';
    alone.push(`| ${region} (${fmt(mb, 2)} MB) | ${index[0].entries} | ${fmt(median(index.map((r) => r.seconds)))} s / ${fmt(median(index.map((r) => r.cpu)))} CPU s | ${fmt(median(stage.map((r) => r.seconds)))} s / ${fmt(median(stage.map((r) => r.cpu)))} CPU s | **${fmt(median(wall) * 100, 1)} %** ${ok} (rounds ${wall.map((w) => `${fmt(w * 100, 1)} %`).join(', ')}) | ${fmt(median(cpu) * 100, 1)} % | ${fmt(bytes / MB, 2)} MB, ${fmt(bytes / statSync(pbf).size, 2)} bytes per extract byte |`);
    const added = withIndex.map((r, i) => r.seconds / without[i].seconds - 1);
    const addedCpu = withIndex.map((r, i) => r.cpu / without[i].cpu - 1);
    beside.push(`| ${region} | ${fmt(median(withIndex.map((r) => r.seconds)))} s / ${fmt(median(withIndex.map((r) => r.cpu)))} CPU s | ${fmt(median(without.map((r) => r.seconds)))} s / ${fmt(median(without.map((r) => r.cpu)))} CPU s | **${fmt(median(added) * 100, 1)} %** (rounds ${added.map((a) => `${fmt(a * 100, 1)} %`).join(', ')}) | ${fmt(median(addedCpu) * 100, 1)} % |`);
  }
  return { alone, beside };
}

/** The queries: names of entries and their prefixes (deterministic), and points of streets and addresses. */
function workload(index: string): { search: string[]; reverse: string[] } {
  const db = new Database(index, { readonly: true });
  const names = db.prepare("SELECT name FROM entry WHERE name IS NOT NULL AND kind IN ('place', 'street', 'poi') ORDER BY id").pluck().all() as string[];
  const points = db.prepare("SELECT lon, lat FROM entry WHERE kind IN ('street', 'address') ORDER BY id").all() as { lon: number; lat: number }[];
  db.close();
  const full = shuffle([...new Set(names)], 7).slice(0, QUERIES / 2);
  const prefixes = shuffle([...new Set(names)], 11).slice(0, QUERIES / 2).map((n, i) => [...n].slice(0, 3 + (i % 6)).join(''));
  const search = shuffle([...full, ...prefixes]).map((q) => `search?q=${encodeURIComponent(q)}&limit=10`);
  // A point a few metres off each (as a tap on a map is).
  const reverse = shuffle(points, 5).slice(0, QUERIES).map((p, i) => `reverse?lat=${(p.lat + ((i % 7) - 3) * 2e-5).toFixed(6)}&lon=${(p.lon + ((i % 5) - 2) * 2e-5).toFixed(6)}`);
  return { search, reverse };
}

/** One wrk run and the server's CPU per request (µs). */
type ServeRun = ReturnType<typeof parseWrk> & { cpuUs: number };

/** wrk over `list` (paths without the leading slash) against the server. */
function wrk(list: string, seconds: number): ReturnType<typeof parseWrk> {
  const out = execFileSync('wrk', ['-t2', `-c${args.connections}`, `-d${seconds}s`, '--latency', '-s', join(ROOT, 'bench/serve-vector/tiles.lua'), `http://127.0.0.1:${PORT}`, '--', list, '/', TOKEN], { encoding: 'utf8' });
  return parseWrk(out);
}

/** Part 2: serving. */
async function servePart(): Promise<string[]> {
  const out = join(WORK, 'serve');
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const config = join(out, 'config.json');
  writeFileSync(config, JSON.stringify({ out: join(out, 'build'), tilesets: { li: { source: join(ROOT, 'data/liechtenstein/liechtenstein_omt.mbtiles'), search: { source: REGIONS.liechtenstein } } } }));
  execFileSync(process.execPath, [join(ROOT, 'bin/tilebake.js'), 'build', '--config', config, '--only', 'vector'], { stdio: 'inherit', env: { ...process.env, TILEBAKE_QUIET: '1' } });
  const current = JSON.parse(readFileSync(join(out, 'build', 'current.json'), 'utf8')) as { path: string };
  const { search, reverse } = workload(join(out, 'build', current.path, 'data/li.search.sqlite'));
  const lists: Record<string, string[]> = { search, reverse, health: ['health'] };
  for (const [name, l] of Object.entries(lists)) writeFileSync(join(out, `${name}.txt`), `${l.join('\n')}\n`);
  const rows: string[] = [];
  // The answer cache on (the default) and off (`--cache-mb 0`): the 1,000 queries cycle, so with it on every query
  // after the first round of the list is a cache hit; off, every query asks SQLite.
  for (const [label, extra] of [['answer cache on', []], ['answer cache off (`--cache-mb 0`)', ['--cache-mb', '0']]] as const) {
    rows.push(...(await serveRuns(join(out, 'build'), label, [...extra], out)));
  }
  return rows;
}

/** wrk over the lists against one `tilebake serve` with `extra` arguments: a table row per route. */
async function serveRuns(build: string, label: string, extra: string[], out: string): Promise<string[]> {
  const proc: ChildProcess = spawn(process.execPath, [join(ROOT, 'bin/tilebake.js'), 'serve', '--out', build, '--port', String(PORT), '--host', '127.0.0.1', '--log-level', 'warn', '--workers', '2', ...extra], { env: { ...process.env, TILEBAKE_TOKENS: TOKEN }, stdio: ['ignore', 'ignore', 'inherit'] });
  try {
    for (let i = 0; ; i++) {
      const r = await fetch(`http://127.0.0.1:${PORT}/search?q=Vaduz`, { headers: { authorization: `Bearer ${TOKEN}` } }).catch(() => undefined);
      if (r?.status === 200) break;
      if (i > 240) throw new Error('search bench: the server did not answer in 60 s');
      await new Promise((res) => setTimeout(res, 250));
    }
    const figures = new Map<string, ServeRun[]>();
    for (let round = 0; round < ROUNDS; round++) {
      for (const name of ['search', 'reverse', 'health']) {
        const list = join(out, `${name}.txt`);
        wrk(list, Number(args.warmup));
        const cpu0 = treeCpuMs(proc.pid);
        const f = wrk(list, Number(args.duration));
        const cpuUs = ((treeCpuMs(proc.pid) - cpu0) * 1000) / Math.max(1, f.rps * Number(args.duration));
        figures.set(name, [...(figures.get(name) ?? []), { ...f, cpuUs }]);
        process.stderr.write(`search bench: ${label}: ${name} round ${round + 1}: ${fmt(f.rps, 0)} req/s, p50 ${fmt(f.p50)} ms, p99 ${fmt(f.p99)} ms, ${f.errors} errors, ${fmt(cpuUs, 0)} µs CPU each\n`);
      }
    }
    return ['search', 'reverse', 'health'].map((name) => {
      const runs = figures.get(name)!;
      const best = runs.reduce((a, b) => (b.rps > a.rps ? b : a));
      const mark = name === 'health' ? '' : ` ${best.rps >= TARGET.qps ? '✔' : '✘'} / ${best.p99 <= TARGET.p99 ? '✔' : '✘'}`;
      return `| \`GET /${name}\`, ${label} | **${fmt(best.rps, 0)}** (rounds ${runs.map((r) => fmt(r.rps, 0)).join(', ')}) | ${fmt(best.p50)} | **${fmt(best.p99)}**${mark} | ${runs.reduce((n, r) => n + r.errors, 0)} | ${fmt(best.cpuUs, 0)} |`;
    });
  } finally {
    await stop(proc);
  }
}

/** Part 3: found first, by kind, against the index's own entries (the OSM objects they are made of). */
function rankingPart(): string[] {
  const rows: string[] = [];
  for (const region of Object.keys(REGIONS)) {
    const path = join(WORK, `build-${region}`, 'index-0.sqlite');
    const db = new Database(path, { readonly: true });
    const entries = db.prepare('SELECT key, kind, name FROM entry WHERE name IS NOT NULL').all() as { key: string; kind: string; name: string }[];
    db.close();
    const index = SearchIndex.open(path);
    for (const kind of ['place', 'street', 'poi']) {
      const of = entries.filter((e) => e.kind === kind);
      let exact = 0;
      let namesake = 0;
      let prefix = 0;
      for (const e of of) {
        const hits = index.search({ q: e.name, limit: 5 });
        if (hits[0]?.entry.key === e.key) exact++;
        else if (hits[0]?.entry.name === e.name) namesake++;
        if (index.search({ q: [...e.name].slice(0, 5).join(''), limit: 5 }).some((h) => h.entry.key === e.key || (h.entry.name === e.name && h.entry.kind === e.kind))) prefix++;
      }
      const pct = (n: number) => `${fmt((100 * n) / Math.max(1, of.length), 1)} %`;
      rows.push(`| ${region} | ${kind} | ${of.length} | **${pct(exact)}** | ${pct(exact + namesake)} | ${pct(prefix)} |`);
    }
    index.close();
  }
  return rows;
}

async function main(): Promise<void> {
  mkdirSync(WORK, { recursive: true });
  const load0 = loadavg().map((l) => l.toFixed(1)).join(' ');
  const build = await buildPart();
  const serve = await servePart();
  const ranking = rankingPart();
  const load1 = loadavg().map((l) => l.toFixed(1)).join(' ');
  const date = new Date().toISOString().slice(0, 10);
  const run = `# bench/search results

${date}, ${cpus().length} cores (${cpus()[0]?.model.trim()}), load average ${load0} at the start, ${load1} at the end; ${ROUNDS} round(s)${args.quick ? ' (--quick)' : ''}.
\`node --import tsx bench/search/run.ts\` (docs/search.md).

## Building the index beside the vector stage

Each in its own process, alternated; time inside the process, CPU of the process and the osmium or tilemaker
runs it waited for; the median round. Target: the index ≤ ${TARGET.build * 100} % of the vector stage's time.

| extract | entries | index build | vector stage (world cached) | index ÷ stage, wall | index ÷ stage, CPU | index size |
|---|---:|---:|---:|---:|---:|---:|
${build.alone.join('\n')}

What the index adds to a build: \`tilebake build --only vector --full\` of the extract with its index (made beside
the tiles, pipeline/vector/stage.ts) and with \`"search": false\`, alternated; the command's wall time and the CPU of
its process tree.

| extract | with the index | without | wall added | CPU added |
|---|---:|---:|---:|---:|
${build.beside.join('\n')}

## Serving (Liechtenstein)

\`tilebake serve --workers 2\`, \`wrk -t2 -c${args.connections}\` ${args.duration} s after ${args.warmup} s of warm-up, wrk on the same 2 cores;
1,000 queries cycled in shuffled order (500 names of entries, 500 prefixes of 3–8 letters of them, \`limit=10\`);
/reverse at 1,000 points a few metres off streets and addresses; \`/health\` as the floor. The best round. Each with
the answer cache (static-server/search/answers.ts) on, as served by default, and off: the lists cycle, so with it on
nearly every query is a hit (a measure of the cache and the server, not of SQLite); off, every query is answered
from the index.
Targets: ≥ ${TARGET.qps} queries/s, p99 ≤ ${TARGET.p99} ms.

| route | queries/s | p50 (ms) | p99 (ms) | errors | server CPU per query (µs) |
|---|---:|---:|---:|---:|---:|
${serve.join('\n')}

## Found first

No published Nominatim or Photon test set covers Liechtenstein or Monaco: measured against the OSM objects
themselves. For every entry with a name: is it the first answer to its name (exactly it; or an object of the
same name, where several share it), and among the top 5 for its first five letters.

| extract | kind | entries | found first | a namesake first | in the top 5 by 5 letters |
|---|---|---:|---:|---:|---:|
${ranking.join('\n')}
`;
  const cell = (row: string, i: number) => row.split('|')[i].trim().split(' (')[0];
  writeResults(RESULTS, run, args.quick ? [] : [`- ${date}: ${cell(serve[0], 2)} queries/s, p99 ${cell(serve[0], 4)} ms with the answer cache, ${cell(serve[3], 2)} queries/s, p99 ${cell(serve[3], 4)} ms without; an index ${build.alone.map((b) => cell(b, 5)).join(', ')} of the vector stage's time, ${build.beside.map((b) => cell(b, 4)).join(', ')} added to \`build --only vector\` (load ${load0})`]);
  process.stdout.write(readResults(RESULTS).run);
}

await main();
