/**
 * Region benchmark (not a test): a whole country built end to end, Belize (2.0 MB extract, a long
 * coast, a barrier reef and cays): the vector stage (OSM extract → OpenMapTiles z0–14) and the render
 * stage for osm-bright and positron at 1x and @2x (PNG + JPEG), z0–14. Reports per stage and per
 * style × scale: time, tiles, tiles/s, distinct views drawn (render.dedup), peak RSS of all processes
 * (node, tilemaker, every Chromium) and disk. Liechtenstein's extract (data/liechtenstein, ~200
 * vector tiles of dense land) is built and rendered in the same run as the peer: Belize's sea repeats,
 * so its rendered tiles/s should be well above Liechtenstein's (target ≥ 3×).
 *
 *   node --import tsx bench/region/run.ts [--quick] [--maxzoom Z] [--extract belize.osm.pbf] [--workers N] [--out DIR]
 *
 * `--quick` renders z0–11 only (the vector stage is always z0–14), about ten minutes on a loaded 2-core
 * machine. Writes bench/region/RESULTS.md (RESULTS-quick.md with --quick).
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readdir, rm, stat } from 'node:fs/promises';
import { cpus, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { parseConfig } from '../../pipeline/config/index.ts';
import { runRenderStage } from '../../pipeline/render/stage.ts';
import { runVectorStage } from '../../pipeline/vector/stage.ts';
import { defaultRenderWorkers } from '../../workers/pool.ts';
import { sampleTreeRss } from '../../test/fixtures/measure.ts';
import { writeResults } from '../results.ts';

process.env.TILEBAKE_QUIET ??= '1';
const ROOT = resolve(import.meta.dirname, '..', '..');
const { values } = parseArgs({
  options: { quick: { type: 'boolean', default: false }, maxzoom: { type: 'string' }, extract: { type: 'string' }, workers: { type: 'string' }, out: { type: 'string' } },
});
const QUICK = values.quick;
const QUICK_MAXZOOM = 11;
const FULL_MAXZOOM = 14;
const MAXZOOM = Number(values.maxzoom ?? (QUICK ? QUICK_MAXZOOM : FULL_MAXZOOM));
const WORKERS = Number(values.workers ?? defaultRenderWorkers());
const OUT = resolve(values.out ?? join(ROOT, 'build', 'bench-region'));
const MB = 1024 * 1024;
const MS_PER_S = 1000;
const STYLES = ['osm-bright', 'positron'] as const;
const SCALES = [1, 2] as const;
const TARGET_MINUTES = 30;
const TARGET_RSS_MB = 3 * 1024;
const TARGET_RATIO = 3;

/** The Belize extract: --extract, else the shared sample data beside the checkout (or beside /work/main). */
function belize(): string {
  const name = 'belize-2015-08-23.osm.pbf';
  const candidates = values.extract ? [resolve(values.extract)] : [join(ROOT, '..', 'shared', 'data', 'regions', name), join(ROOT, '..', '..', 'shared', 'data', 'regions', name)];
  const found = candidates.find((p) => existsSync(p));
  if (!found) throw new Error(`bench/region: the Belize extract is not at ${candidates.join(' or ')} (pass --extract FILE)`);
  return found;
}

const REGIONS = { belize: belize(), liechtenstein: join(ROOT, 'data', 'liechtenstein', 'liechtenstein-latest.osm.pbf') };
type Region = keyof typeof REGIONS;

function rawConfig(region: Region, styles: readonly string[], scale: number): Record<string, unknown> {
  return {
    out: join(OUT, region),
    tilesets: { openmaptiles: { source: REGIONS[region], name: region } },
    styles: Object.fromEntries(
      styles.map((s) => [s, { style: join(ROOT, 'data', 'sample', 'styles', s, 'style.json'), tileset: 'openmaptiles', minzoom: 0, maxzoom: MAXZOOM, scales: [scale], formats: ['png', 'jpg'] }]),
    ),
    fonts: join(ROOT, 'data', 'sample', 'fonts'),
    render: { workers: WORKERS },
  };
}

/** Bytes of every file under `dir`. */
async function du(dir: string): Promise<number> {
  let n = 0;
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true }).catch(() => [])) {
    if (e.isFile()) n += (await stat(join(e.parentPath, e.name))).size;
  }
  return n;
}

interface Row {
  region: Region;
  stage: string;
  tiles: number;
  seconds: number;
  metatiles?: number;
  distinct?: number;
  peakMb: number;
}

const rows: Row[] = [];
const rate = (r: Row) => r.tiles / r.seconds;

async function vector(region: Region): Promise<void> {
  const dir = join(OUT, region);
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  const rss = sampleTreeRss();
  const t0 = performance.now();
  const r = await runVectorStage(parseConfig(rawConfig(region, [], 1), join(dir, 'bench.json')), dir);
  rows.push({ region, stage: 'vector z0–14', tiles: r.tiles, seconds: (performance.now() - t0) / MS_PER_S, peakMb: rss.stop() / MB });
  console.log(`${region} vector: ${r.tiles} tiles in ${rows.at(-1)!.seconds.toFixed(1)} s`);
}

async function render(region: Region, style: string, scale: number): Promise<void> {
  const dir = join(OUT, region);
  const rss = sampleTreeRss();
  const s = await runRenderStage(parseConfig(rawConfig(region, [style], scale), join(dir, 'bench.json')), dir, { workers: WORKERS });
  const row: Row = { region, stage: `${style} @${scale}x z0–${MAXZOOM}`, tiles: s.tiles, seconds: s.seconds, metatiles: s.renderedMetatiles, distinct: s.distinctViews, peakMb: rss.stop() / MB };
  rows.push(row);
  console.log(`${region} ${row.stage}: ${row.tiles} tiles, ${row.distinct} distinct views for ${row.metatiles} metatiles, ${row.seconds.toFixed(1)} s = ${rate(row).toFixed(1)} tiles/s, peak RSS ${row.peakMb.toFixed(0)} MB`);
}

await mkdir(OUT, { recursive: true });
const started = performance.now();
await vector('belize');
for (const style of STYLES) for (const scale of SCALES) await render('belize', style, scale);
const belizeMinutes = (performance.now() - started) / MS_PER_S / 60;
const belizeDisk = await du(join(OUT, 'belize'));
// The peer, in the same run: osm-bright @1x over Liechtenstein.
await vector('liechtenstein');
await render('liechtenstein', 'osm-bright', 1);

const peer = rows.find((r) => r.region === 'liechtenstein' && r.metatiles !== undefined)!;
const same = rows.find((r) => r.region === 'belize' && r.stage === peer.stage)!;
const ratio = rate(same) / rate(peer);
const belizeRows = rows.filter((r) => r.region === 'belize');
const peakMb = Math.max(...belizeRows.map((r) => r.peakMb));
const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
const table = rows
  .map((r) => `| ${r.region} | ${r.stage} | ${r.tiles} | ${r.distinct === undefined ? '' : `${r.distinct} / ${r.metatiles}`} | ${r.seconds.toFixed(1)} | ${rate(r).toFixed(1)} | ${r.peakMb.toFixed(0)} |`)
  .join('\n');
const verdict = (ok: boolean) => (ok ? 'met' : 'NOT met');
const md = `# Region benchmark${QUICK ? ' (quick)' : ''}

\`node --import tsx bench/region/run.ts${QUICK ? ' --quick' : ''}\` — Belize end to end: the vector stage (its OSM extract to
OpenMapTiles tiles z0–14 with tilemaker) and the render stage, osm-bright and positron at 1x and @2x, z0–${MAXZOOM},
PNG + JPEG from each render, ${WORKERS} render worker(s). Liechtenstein's extract (dense land) is built and
rendered with osm-bright @1x in the same run as the peer. "views / metatiles": the distinct views MapLibre drew for the
metatiles written (render.dedup). Peak RSS: node + tilemaker + every Chromium, sampled every 250 ms.

Machine: ${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}, ${(totalmem() / 1024 ** 3).toFixed(0)} GB RAM, **shared with other jobs** (load average at the end: ${load}): the figures are indicative only.
Date: ${new Date().toISOString().slice(0, 10)}.

| region | stage | tiles | views / metatiles | s | tiles/s | peak RSS (MB) |
|---|---|---:|---:|---:|---:|---:|
${table}

- Belize, whole build: ${belizeMinutes.toFixed(1)} min (target ≤ ${TARGET_MINUTES} min${QUICK ? ' for z0–14; this quick run renders less' : `: ${verdict(belizeMinutes <= TARGET_MINUTES)}`}), disk ${(belizeDisk / MB).toFixed(1)} MB, peak RSS ${peakMb.toFixed(0)} MB (target ≤ ${TARGET_RSS_MB} MB: ${verdict(peakMb <= TARGET_RSS_MB)}).
- Rendered tiles/s, ${peer.stage}: Belize ${rate(same).toFixed(1)}, Liechtenstein ${rate(peer).toFixed(1)}: **${ratio.toFixed(2)}×** (target ≥ ${TARGET_RATIO}×${QUICK ? ' at z0–14; at low zooms few views repeat' : `: ${verdict(ratio >= TARGET_RATIO)}`}).
`;
writeResults(join(import.meta.dirname, QUICK ? 'RESULTS-quick.md' : 'RESULTS.md'), md);
console.log(md);
