/**
 * Imagery benchmark (not a test): tiles/s and peak RSS of `tilebake build` warping a mosaic of the
 * shared Landsat scene (cut into four overlapping GeoTIFF sheets with GDAL, as an orthophoto delivery
 * comes, and joined by a VRT) to z5–12 PNG at 1x, beside `gdal2tiles.py --xyz` (Debian's, GDAL 3.6) on
 * the same VRT, same zooms, bilinear, transparent tiles left out, both on every core; the two
 * alternated, `--rounds` each. Also the choice the stage makes for its lower zooms: warping a zoom from
 * the sources (GDAL picks the overview) vs building it from its children with sharp, as gdal2tiles
 * does, timed in process on the same z11 tiles (both on every core).
 *
 *   node --import tsx bench/own-data/imagery.ts [--rounds 3] [--maxzoom 12] [--quick]
 *
 * `--quick`: z5–10, one round, no RESULTS file. Writes bench/own-data/RESULTS-imagery.md otherwise.
 * The shared images: /work/shared/data/imagery (or TILEBAKE_SHARED_IMAGERY).
 */
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import sharp, { type OverlayOptions } from 'sharp';
import { currentVersionDir } from '../../lib/build-version.ts';
import { openArchiveFile, summarizeArchiveFile } from '../../lib/pmtiles/index.ts';
import { tileRangeForBBox } from '../../lib/tile-math.ts';
import { tileBatches } from '../../pipeline/elevation/tiles.ts';
import { openImagery } from '../../pipeline/imagery/sources.ts';
import { TileWarper } from '../../pipeline/imagery/warp.ts';
import { runCommand, runSampled } from '../command.ts';
import { writeResults } from '../results.ts';

const ROOT = resolve(import.meta.dirname, '..', '..');
const SHARED = process.env.TILEBAKE_SHARED_IMAGERY ?? '/work/shared/data/imagery';
const LANDSAT = join(SHARED, 'landsat-andros-RGB.byte.tif');
const { values: args } = parseArgs({ options: { rounds: { type: 'string', default: '3' }, maxzoom: { type: 'string', default: '12' }, quick: { type: 'boolean', default: false } } });
const QUICK = args.quick;
const ROUNDS = QUICK ? 1 : Number(args.rounds);
const MINZOOM = 5;
const MAXZOOM = QUICK ? 10 : Number(args.maxzoom);
/** The zoom the two ways of making lower zooms are compared at (from the children at MAXZOOM). */
const PARENT_ZOOM = MAXZOOM - 1;
const CORES = availableParallelism();
const MB = 1024 * 1024;
const ENCODERS = { png: { compressionLevel: 6, palette: false }, jpeg: { quality: 85 }, webp: { quality: 90, lossless: false } };

const log = (s: string) => process.stdout.write(`${s}\n`);
const fmt = (n: number, d = 1) => n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });
const median = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];

/** Cut the scene into four overlapping sheets (GDAL) and join them in a VRT: the benchmark's input. */
async function makeMosaic(dir: string): Promise<string> {
  const sheets: string[] = [];
  const [w, h] = [791, 718];
  for (const [i, [x, y]] of [[0, 0], [1, 0], [0, 1], [1, 1]].entries()) {
    const sheet = join(dir, `sheet-${i}.tif`);
    const x0 = x ? Math.floor(w / 2) - 20 : 0, y0 = y ? Math.floor(h / 2) - 20 : 0;
    await runCommand('gdal_translate', ['-q', '-srcwin', String(x0), String(y0), String(Math.ceil(w / 2) + 20), String(Math.ceil(h / 2) + 20), '-co', 'TILED=YES', LANDSAT, sheet]);
    sheets.push(sheet);
  }
  const vrt = join(dir, 'mosaic.vrt');
  await runCommand('gdalbuildvrt', ['-q', vrt, ...sheets]);
  return vrt;
}

/** Files under `dir` (gdal2tiles' tiles). */
async function countPngs(dir: string): Promise<number> {
  return (await readdir(dir, { recursive: true })).filter((f) => String(f).endsWith('.png')).length;
}

interface Run {
  tiles: number;
  seconds: number;
  peakMb: number;
}

/** `tilebake build` of the mosaic into a fresh folder. */
async function tilebake(vrt: string, work: string, round: number): Promise<Run> {
  const out = join(work, `tilebake-${round}`);
  const config = join(work, `config-${round}.json`);
  await writeFile(config, JSON.stringify({ out, tilesets: { mosaic: { source: vrt, format: 'png', minzoom: MINZOOM, maxzoom: MAXZOOM, scales: [1] } } }));
  const r = await runSampled(process.execPath, [join(ROOT, 'bin/tilebake.js'), 'build', '--config', config]);
  const summary = (await summarizeArchiveFile(join((await currentVersionDir(out))!.dir, 'data/mosaic.pmtiles')))!;
  await rm(out, { recursive: true, force: true });
  return { tiles: summary.tiles, seconds: r.seconds, peakMb: r.peakMb };
}

/** gdal2tiles.py --xyz of the same input, zooms and resampling, on every core, empty tiles left out. */
async function gdal2tiles(vrt: string, work: string, round: number): Promise<Run> {
  const out = join(work, `gdal2tiles-${round}`);
  const r = await runSampled('gdal2tiles.py', ['--xyz', '-q', '-z', `${MINZOOM}-${MAXZOOM}`, '-r', 'bilinear', '-w', 'none', '--exclude', `--processes=${CORES}`, vrt, out]);
  const tiles = await countPngs(out);
  await rm(out, { recursive: true, force: true });
  return { tiles, seconds: r.seconds, peakMb: r.peakMb };
}

/**
 * The parent zoom made two ways, in process, on every core: warped from the sources (the stage's way)
 * vs composed from the four children (decoded PNGs) and halved with sharp (gdal2tiles' way).
 */
async function lowerZooms(vrt: string, work: string): Promise<{ warp: number; children: number; tiles: number }> {
  const src = await openImagery('mosaic', vrt, join(work, 'lower'));
  const warper = await TileWarper.create(CORES);
  const task = (tiles: number[]) => {
    const r = tileRangeForBBox(src.bounds, tiles[0]);
    return { datasets: src.datasets, resampling: 'bilinear', scale: 1 as const, format: 'png' as const, encoders: ENCODERS, extent: { z: tiles[0], x0: r.minX, y0: r.minY, x1: r.maxX, y1: r.maxY }, tiles };
  };
  const lanes = async <T>(items: T[], fn: (t: T) => Promise<void>) => {
    let next = 0;
    await Promise.all(Array.from({ length: CORES * 2 }, async () => {
      while (next < items.length) await fn(items[next++]);
    }));
  };
  try {
    // The children, warped once (not timed).
    const children = new Map<string, Buffer>();
    await lanes(tileBatches(src.boxes, MAXZOOM, MAXZOOM).batches, async (b) => {
      for (const t of await warper.run(task(b.tiles))) children.set(`${t.x}/${t.y}`, Buffer.from(t.data));
    });
    const parents = tileBatches(src.boxes, PARENT_ZOOM, PARENT_ZOOM);
    let t0 = performance.now();
    await lanes(parents.batches, async (b) => void (await warper.run(task(b.tiles))));
    const warp = (performance.now() - t0) / 1000;
    t0 = performance.now();
    const flat: number[][] = parents.batches.flatMap((b) => Array.from({ length: b.tiles.length / 3 }, (_, i) => b.tiles.slice(i * 3, i * 3 + 3)));
    await lanes(flat, async ([, x, y]) => {
      const parts = [0, 1].flatMap((dy) => [0, 1].map((dx) => ({ input: children.get(`${2 * x + dx}/${2 * y + dy}`), left: dx * 256, top: dy * 256 }))).filter((p) => p.input);
      if (parts.length === 0) return;
      const canvas = sharp({ create: { width: 512, height: 512, channels: 4, background: { r: 0, g: 0, b: 0, alpha: 0 } } }).composite(parts as OverlayOptions[]);
      const composed = await canvas.raw().toBuffer();
      await sharp(composed, { raw: { width: 512, height: 512, channels: 4 } }).resize(256, 256, { kernel: 'linear' }).png({ compressionLevel: 6, adaptiveFiltering: false }).toBuffer();
    });
    return { warp, children: (performance.now() - t0) / 1000, tiles: parents.tiles };
  } finally {
    warper.close();
  }
}

const work = await mkdtemp(join(tmpdir(), 'tilebake-bench-imagery-'));
try {
  await mkdir(work, { recursive: true });
  const vrt = await makeMosaic(work);
  const gdalVersion = execFileSync('gdalinfo', ['--version'], { encoding: 'utf8' }).trim();
  const load0 = loadavg()[0];
  const ours: Run[] = [];
  const theirs: Run[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    // Alternated: A B, then B A.
    const order = r % 2 === 0 ? ['tilebake', 'gdal2tiles'] : ['gdal2tiles', 'tilebake'];
    for (const who of order) {
      const run = who === 'tilebake' ? await tilebake(vrt, work, r) : await gdal2tiles(vrt, work, r);
      (who === 'tilebake' ? ours : theirs).push(run);
      log(`round ${r + 1} ${who}: ${run.tiles} tiles in ${fmt(run.seconds, 2)} s = ${fmt(run.tiles / run.seconds)} tiles/s, peak RSS ${fmt(run.peakMb, 0)} MB`);
    }
  }
  const lower = await lowerZooms(vrt, work);
  log(`z${PARENT_ZOOM} (${lower.tiles} tiles): warped from the sources ${fmt(lower.warp, 2)} s, from the children with sharp ${fmt(lower.children, 2)} s`);
  const load1 = loadavg()[0];
  const rate = (runs: Run[]) => median(runs.map((x) => x.tiles / x.seconds));
  const peak = (runs: Run[]) => Math.max(...runs.map((x) => x.peakMb));
  const ratio = rate(ours) / rate(theirs);
  const summary = `tilebake ${fmt(rate(ours))} tiles/s, gdal2tiles ${fmt(rate(theirs))} tiles/s: ${fmt(ratio, 2)}×; peak RSS ${fmt(peak(ours), 0)} MB vs ${fmt(peak(theirs), 0)} MB`;
  log(summary);
  if (!QUICK) {
    const rows = (who: string, runs: Run[]) => runs.map((x, i) => `| ${who} | ${i + 1} | ${x.tiles} | ${fmt(x.seconds, 2)} | ${fmt(x.tiles / x.seconds)} | ${fmt(x.peakMb, 0)} |`).join('\n');
    writeResults(
      join(ROOT, 'bench/own-data/RESULTS-imagery.md'),
      `# Imagery: tilebake build vs gdal2tiles.py --xyz

Written by \`node --import tsx bench/own-data/imagery.ts\` on ${new Date().toISOString().slice(0, 10)}: ${cpus()[0]?.model ?? 'unknown CPU'}, ${CORES} cores, ${fmt(totalmem() / 1024 / MB, 1)} GB,
load ${fmt(load0, 1)} → ${fmt(load1, 1)} (the shared machine: other engineers' jobs ran beside it). ${gdalVersion}.

Input: the shared Landsat 7 scene (791×718 px at 300 m, UTM 18N, nodata 0) cut into four overlapping
tiled GeoTIFF sheets with \`gdal_translate -srcwin\` and joined by \`gdalbuildvrt\`; both tools read that VRT.
Job: z${MINZOOM}–${MAXZOOM} PNG, 256 px, bilinear, transparent tiles left out (\`--exclude\`), every core
(\`--processes=${CORES}\`; tilebake's warping lanes). Times are whole command runs (start-up included),
peak RSS the process tree's; ${ROUNDS} rounds, alternated.

**${summary}** (medians).

| tool | round | tiles | s | tiles/s | peak RSS MB |
|---|---|---|---|---|---|
${rows('tilebake build', ours)}
${rows('gdal2tiles.py', theirs)}

Lower zooms, in process on the same ${lower.tiles} z${PARENT_ZOOM} tiles: warped from the sources (tilebake's way:
GDAL reads the overview that fits, each tile independent) **${fmt(lower.warp, 2)} s**, composed from the four z${MAXZOOM}
children and halved with sharp (gdal2tiles' way, children decoded from PNG) **${fmt(lower.children, 2)} s**.
`,
      [`- ${new Date().toISOString().slice(0, 10)}, load ${fmt(load0, 1)} → ${fmt(load1, 1)}: ${summary}; z${PARENT_ZOOM} warped ${fmt(lower.warp, 2)} s, from children ${fmt(lower.children, 2)} s`],
    );
  }
} finally {
  await rm(work, { recursive: true, force: true });
}
