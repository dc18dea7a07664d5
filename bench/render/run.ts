/**
 * Render benchmark (not a test): osm-bright over the Monaco and Liechtenstein samples, z0–14,
 * PNG + JPEG, at 256 px and @2x, metatile 4×4 vs tile-by-tile (metatile 1) in the same run.
 * Usage: node --import tsx bench/render/run.ts [--workers N] [--runs N] [--maxzoom Z] [--out DIR]
 * Each mode runs `--runs` times (default 1), the modes in turn; the run with the median stage time is reported.
 * Writes bench/render/RESULTS.md (RESULTS-z<maxzoom>.md with another --maxzoom).
 */
import { readFileSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { availableParallelism, cpus, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { parseConfig } from '../../pipeline/config/index.ts';
import { runRenderStage } from '../../pipeline/render/stage.ts';
import { runVectorStage } from '../../pipeline/vector/stage.ts';
import { readManifestOrEmpty } from '../../lib/manifest.ts';
import { defaultRenderWorkers } from '../../workers/pool.ts';
import { treeRss } from '../../test/fixtures/measure.ts';
import { writeResults } from '../results.ts';

process.env.TILEBAKE_QUIET ??= '1';
const ROOT = resolve(import.meta.dirname, '..', '..');
const { values } = parseArgs({ options: { workers: { type: 'string' }, out: { type: 'string' }, maxzoom: { type: 'string' }, runs: { type: 'string' } } });
const RUNS = Math.max(1, Number(values.runs ?? 1));
/** The default render pool (one browser per two cores) unless --workers; compared with one per core. */
const WORKERS = Number(values.workers ?? defaultRenderWorkers());
const CORES = availableParallelism();
const OUT = resolve(values.out ?? join(ROOT, 'build', 'bench-render'));
/** The job of the issue's target: z0–14. */
const DEFAULT_MAXZOOM = 14;
const MAXZOOM = Number(values.maxzoom ?? DEFAULT_MAXZOOM);
const MB = 1024 * 1024;
const SAMPLE_MS = 250;

function rawConfig(metatile: number, scale: 1 | 2, workers = WORKERS): Record<string, unknown> {
  const style = join(ROOT, 'data/sample/styles/osm-bright/style.json');
  const common = { style, minzoom: 0, maxzoom: MAXZOOM, scales: [scale], formats: ['png', 'jpg'] };
  return {
    out: OUT,
    tilesets: { monaco: join(ROOT, 'data/sample/monaco_omt.mbtiles'), liechtenstein: join(ROOT, 'data/liechtenstein/liechtenstein_omt.mbtiles') },
    styles: { 'monaco-bright': { ...common, tileset: 'monaco' }, 'liechtenstein-bright': { ...common, tileset: 'liechtenstein' } },
    fonts: join(ROOT, 'data/sample/fonts'),
    render: { metatile, margin: 64, workers },
  };
}

interface Row {
  mode: string;
  metatile: number;
  workers: number;
  scale: number;
  tiles: number;
  /** Whole stage, browser start-up included. */
  seconds: number;
  /** Until every browser was up (launched, page and MapLibre loaded). */
  startSeconds: number;
  peakMb: number;
}

async function measure(metatile: number, scale: 1 | 2, workers: number): Promise<Row> {
  const file = join(OUT, 'bench.json');
  const config = parseConfig(rawConfig(metatile, scale, workers), file);
  await rm(join(OUT, 'styles'), { recursive: true, force: true });
  await rm(join(OUT, '.work'), { recursive: true, force: true });
  let peak = treeRss();
  const timer = setInterval(() => (peak = Math.max(peak, treeRss())), SAMPLE_MS);
  let stats;
  try {
    stats = await runRenderStage(config, OUT, { workers });
  } finally {
    clearInterval(timer);
  }
  const m = await readManifestOrEmpty(OUT);
  // Tiles rendered = tiles per archive (PNG and JPEG come from the same render).
  const tiles = Object.keys(config.styles).reduce((n, id) => n + (m.styles[id]?.archives[`${scale}x.png`]?.tiles ?? 0), 0);
  if (tiles !== stats.tiles) throw new Error(`the archives hold ${tiles} tiles but the stage rendered ${stats.tiles}`);
  return { mode: metatile === 1 ? 'tile-by-tile (metatile 1)' : `metatile ${metatile}×${metatile}`, metatile, workers, scale, tiles, seconds: stats.seconds, startSeconds: stats.startSeconds, peakMb: peak / MB };
}

/** The run with the median stage time. */
function median(runs: Row[]): Row {
  return [...runs].sort((a, b) => a.seconds - b.seconds)[Math.floor(runs.length / 2)];
}

const rate = (tiles: number, seconds: number) => (tiles / seconds).toFixed(1);

/** Iterations of the reference loop (~0.15 s on this machine). */
const REFERENCE_ITERATIONS = 30_000_000;
/**
 * Wall time of a fixed single-threaded loop, printed with the results: this machine's speed drifts by
 * tens of per cent within a day (a shared host). It catches a slow CPU, not all of the drift: two
 * runs whose render stages differed by 10 % had the same loop time.
 */
function referenceLoopMs(): number {
  const t = performance.now();
  let x = 1;
  for (let i = 0; i < REFERENCE_ITERATIONS; i++) x = (Math.imul(x, 1103515245) + 12345) >>> 0;
  const ms = performance.now() - t;
  // Use x, so that the loop is not optimised away.
  if (x === 0.5) console.log(x);
  return ms;
}
const referenceBefore = referenceLoopMs();

await mkdir(OUT, { recursive: true });
await runVectorStage(parseConfig(rawConfig(4, 1), join(OUT, 'bench.json')), OUT);
const rows: Row[] = [];
// Metatile vs tile by tile with the default pool, and the default pool vs one browser per core.
const modes: [metatile: number, workers: number][] = [[4, WORKERS], [1, WORKERS], ...(CORES !== WORKERS ? [[4, CORES] as [number, number]] : [])];
for (const scale of [1, 2] as const) {
  // Rounds of every mode in turn (A B C A B C …), so that a drift of the machine's speed hits all alike.
  const runs: Row[][] = modes.map(() => []);
  for (let round = 0; round < RUNS; round++) {
    for (const [i, [metatile, workers]] of modes.entries()) runs[i].push(await measure(metatile, scale, workers));
  }
  for (const [i, [, workers]] of modes.entries()) {
    const r = median(runs[i]);
    rows.push(r);
    console.log(`${r.mode}, ${workers} worker(s) @${scale}x: ${r.tiles} tiles in ${r.seconds.toFixed(1)} s = ${rate(r.tiles, r.seconds)} tiles/s (browsers up after ${r.startSeconds.toFixed(1)} s; ${rate(r.tiles, r.seconds - r.startSeconds)} tiles/s after), peak RSS ${r.peakMb.toFixed(0)} MB`);
  }
}
const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
const referenceAfter = referenceLoopMs();
/**
 * Stage speed against the peer measured in the same run (tile by tile, default pool, same scale):
 * absolute rates on a shared machine drift between runs, the ratio much less.
 */
function vsPeer(r: Row): string {
  const peer = rows.find((p) => p.metatile === 1 && p.workers === WORKERS && p.scale === r.scale);
  return peer ? `${(peer.seconds / r.seconds).toFixed(2)}×` : '';
}
const table = rows
  .map((r) => `| ${r.mode} | ${r.workers} | ${r.scale === 1 ? '256 px' : '@2x (512 px)'} | ${r.tiles} | ${r.seconds.toFixed(1)} | **${rate(r.tiles, r.seconds)}** | ${vsPeer(r)} | ${r.startSeconds.toFixed(1)} | **${rate(r.tiles, r.seconds - r.startSeconds)}** | ${r.peakMb.toFixed(0)} |`)
  .join('\n');
const md = `# Render benchmark

\`node --import tsx bench/render/run.ts${MAXZOOM === DEFAULT_MAXZOOM ? '' : ` --maxzoom ${MAXZOOM}`}\` — osm-bright (with labels) over the Monaco and Liechtenstein samples,
z0–${MAXZOOM}, every tile of each tileset's bounds, PNG **and** JPEG encoded from the same render, pool of
${WORKERS} worker(s) (the default: one Chromium per two cores) and, for comparison, one per core (${CORES}); margin 64 px. Tiles/s counts rendered tiles (each written twice: PNG and JPEG).
"stage" is the whole render stage (\`runRenderStage\`), browser start-up included; "start" is the part of it
until every worker's Chromium was up with the page and MapLibre loaded; "rendering" is tiles / (stage − start),
the throughput a long build runs at (loading the style, glyphs and first tiles stay in it).
"stage vs tile-by-tile" is the stage's speed over the tile-by-tile stage of the same scale and pool in this run.
Median of ${RUNS} run(s) per mode, the modes run in turn (A B C A B C …). Peak RSS = node + every Chromium process, sampled every ${SAMPLE_MS} ms.

Machine: ${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}, ${(totalmem() / 1024 ** 3).toFixed(0)} GB RAM; load average at the end: ${load}.
Machine speed: a fixed single-threaded loop took ${referenceBefore.toFixed(0)} ms before the runs and ${referenceAfter.toFixed(0)} ms after them (lower is faster; it has not tracked the drift of the render stages between runs, so compare rows of one run).
Date: ${new Date().toISOString().slice(0, 10)}.

| mode | workers | tile size | tiles | stage (s) | stage tiles/s | stage vs tile-by-tile | start (s) | rendering tiles/s | peak RSS (MB) |
|---|---:|---|---:|---:|---:|---:|---:|---:|---:|
${table}
`;
writeResults(join(import.meta.dirname, MAXZOOM === DEFAULT_MAXZOOM ? 'RESULTS.md' : `RESULTS-z${MAXZOOM}.md`), md);
console.log(md);
