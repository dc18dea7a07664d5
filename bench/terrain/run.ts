/**
 * Terrain and contour benchmark (not a test). Each figure comes with a baseline measured in the same run:
 * 1. terrain tiles/s over the sample DEM (256 px PNG, z0 to the DEM's zoom, the elevation stage on its
 *    pool) vs the stage before issue 18 (one thread, an object per pixel, `heights()` per tile);
 * 2. contour tiles/s over the sample DEM (z11–14, default intervals) vs the same zoom range sampled
 *    and contoured with d3-contour instead of ./lib/elevation/marching-squares.ts, on one thread, and
 *    the isoline step alone (ours vs d3-contour over the same grids);
 * 3. `tilebake elevation` over two distant 1° DEMs (the fixture N43E006 and a copy of it named N40W077):
 *    wall time, index and terrain tiles included, as a user runs it (target ≤ 15 s on 2 cores);
 * 4. the index over N synthetic 1° SRTM3 files (100 by default): time and peak RSS of the process.
 * Usage: node --import tsx bench/terrain/run.ts [--quick] (quick: fewer tiles and files, a smoke run;
 * it does not write RESULTS.md). Writes bench/terrain/RESULTS.md otherwise.
 */
import { execFile } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism, cpus, tmpdir, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { contours as d3Contours } from 'd3-contour';
import sharp from 'sharp';
import { isolineChains } from '../../lib/elevation/marching-squares.ts';
import { isolineLevels, tileIsolines } from '../../lib/elevation/isolines.ts';
import { ElevationIndex } from '../../lib/elevation/reader.ts';
import { encodeHeightRgb } from '../../lib/elevation/terrain-rgb.ts';
import { FileRangeSource } from '../../lib/storage.ts';
import { pixelCentreAxes, tileRunsForBoxes, type BBox } from '../../lib/tile-math.ts';
import { contourIntervals, DEFAULT_CONTOUR_INTERVALS } from '../../pipeline/config/elevation.ts';
import { ELEVATION_INDEX_PATH, buildElevation } from '../../pipeline/elevation/stage.ts';
import { contourZoom } from '../../pipeline/elevation/contours.ts';
import { pixelCentres } from '../../pipeline/elevation/terrain.ts';
import { writeSyntheticHgt } from '../../test/fixtures/dem/synthetic.ts';
import { writeResults } from '../results.ts';

process.env.TILEBAKE_QUIET ??= '1';
const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '..', '..');
const SAMPLE_HGT = join(ROOT, 'data/sample/dem/N43E007.hgt');
const FIXTURE_HGT = join(ROOT, 'test/fixtures/dem/N43E006.hgt');
const { values: args } = parseArgs({ options: { quick: { type: 'boolean', default: false }, files: { type: 'string' } } });
const QUICK = args.quick;
/**
 * Terrain zooms of the stage run: z0–13 over the sample DEM (~1,100 tiles with data; z0–11, the zoom its
 * resolution gives, has 105, too few to time past start-up); baseline tiles (the old stage is slow).
 */
const TERRAIN_MAXZOOM = QUICK ? 9 : 13;
const BASELINE_TILES = QUICK ? 8 : 64;
const CONTOUR_ZOOMS: [number, number] = QUICK ? [11, 11] : [11, 14];
/** Contour tiles of the one-thread baselines (a spread sample of the stage's tiles). */
const CONTOUR_BASELINE_TILES = QUICK ? 8 : 96;
const SYNTHETIC_FILES = Number(args.files ?? (QUICK ? 9 : 100));
const SYNTHETIC_CACHE_MB = 32;
const CORES = availableParallelism();
const MB = 1024 * 1024;

const work = await mkdtemp(join(tmpdir(), 'tilebake-bench-terrain-'));
const rows: string[][] = [];
const log = (s: string) => process.stdout.write(`${s}\n`);
const fmt = (n: number, d = 1) => n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });

/** Every `step`-th tile of the sample cell's tiles at zooms z0..z1, as [z, x, y]. */
function spreadTiles(z0: number, z1: number, want: number): number[][] {
  const all: number[][] = [];
  for (let z = z0; z <= z1; z++) for (const r of tileRunsForBoxes([[7, 43, 8, 44]] as BBox[], z)) for (let x = r.minX; x <= r.maxX; x++) all.push([z, x, r.y]);
  const step = Math.max(1, Math.floor(all.length / want));
  return all.filter((_, i) => i % step === 0).slice(0, want);
}

try {
  // 1. Terrain tiles over the sample DEM.
  const terrainOut = join(work, 'terrain');
  const st = await buildElevation(terrainOut, [{ path: SAMPLE_HGT }], { precision: 0.1, terrain: { id: 'terrain', encoding: 'terrarium', format: 'png', minzoom: 0, maxzoom: TERRAIN_MAXZOOM } });
  const terrainRate = st.terrain!.computed / st.terrain!.seconds;
  log(`terrain: ${st.terrain!.computed} tiles computed (${st.terrain!.tiles} written) in ${st.terrain!.seconds.toFixed(2)} s on ${CORES} threads`);
  // Baseline: the stage before issue 18, tile by tile on the main thread, 4 in flight, sharp's own threads.
  const idx = await ElevationIndex.open(await FileRangeSource.open(join(terrainOut, ELEVATION_INDEX_PATH)), 256 * MB);
  const oldTile = async (z: number, x: number, y: number) => {
    const { heights } = await idx.heights(pixelCentres(z, x, y));
    const rgb = new Uint8Array(heights.length * 3);
    for (let i = 0; i < heights.length; i++) encodeHeightRgb('terrarium', heights[i] ?? 0, rgb, i * 3);
    return sharp(rgb, { raw: { width: 256, height: 256, channels: 3 } }).png({ compressionLevel: 6 }).toBuffer();
  };
  const baseTiles = spreadTiles(TERRAIN_MAXZOOM - 1, TERRAIN_MAXZOOM, BASELINE_TILES);
  await oldTile(baseTiles[0][0], baseTiles[0][1], baseTiles[0][2]); // warm
  let t0 = performance.now();
  for (let i = 0; i < baseTiles.length; i += 4) await Promise.all(baseTiles.slice(i, i + 4).map(([z, x, y]) => oldTile(z, x, y)));
  const baseRate = baseTiles.length / ((performance.now() - t0) / 1000);
  log(`terrain baseline: ${baseTiles.length} tiles at ${fmt(baseRate)} tiles/s`);
  rows.push(['terrain tiles (256 px PNG, terrarium), sample DEM z0–' + TERRAIN_MAXZOOM, `${fmt(terrainRate)} tiles/s`, `${fmt(baseRate)} tiles/s (stage before #18: one thread, an object per pixel)`, `${fmt(terrainRate / baseRate, 2)}×`, '≥ 250 tiles/s']);

  // 2. Contour tiles over the sample DEM.
  const contourOut = join(work, 'contours');
  const intervals = DEFAULT_CONTOUR_INTERVALS;
  const sc = await buildElevation(contourOut, [{ path: SAMPLE_HGT }], { precision: 0.1, terrain: false, contours: { id: 'contours', minzoom: CONTOUR_ZOOMS[0], maxzoom: CONTOUR_ZOOMS[1], intervals } });
  const contourRate = sc.contours!.computed / sc.contours!.seconds;
  log(`contours: ${sc.contours!.computed} tiles computed (${sc.contours!.tiles} written) in ${sc.contours!.seconds.toFixed(2)} s on ${CORES} threads`);
  // The same grids, isolines by our marching squares and by d3-contour (one thread each); the full tile (clip, simplify) with ours.
  const stepLon = idx.meta.layers[0].stepLon;
  const grids: { values: Float64Array; w: number; zc: ReturnType<typeof contourZoom> }[] = [];
  for (const [z, x, y] of spreadTiles(CONTOUR_ZOOMS[0], CONTOUR_ZOOMS[1], CONTOUR_BASELINE_TILES)) {
    const zc = contourZoom(z, stepLon, intervals);
    const { lats, lons } = pixelCentreAxes(z, x, y, zc.samples, zc.buffer);
    const values = new Float64Array(lats.length * lons.length);
    if ((await idx.sampleGrid(lats, lons, values)) > 0) grids.push({ values, w: lons.length, zc });
  }
  const time = (f: () => void) => {
    f(); // warm
    const t = performance.now();
    f();
    return (performance.now() - t) / 1000;
  };
  let segments = 0;
  const oursS = time(() => {
    segments = 0;
    for (const g of grids) {
      const levels = isolineLevels(g.values, g.zc.minor);
      if (levels.length) for (const cs of isolineChains(g.values, g.w, g.w, levels[0], g.zc.minor, levels.length)) for (const c of cs) segments += c.ids.length - 1;
    }
  });
  const d3S = time(() => {
    const gen = d3Contours().smooth(false);
    for (const g of grids) {
      const levels = isolineLevels(g.values, g.zc.minor);
      gen.size([g.w, g.w]);
      for (const t of levels) gen.contour(g.values as unknown as number[], t);
    }
  });
  const tileS = time(() => {
    for (const g of grids) tileIsolines(g.values, { ...g.zc, extent: 4096, clipBuffer: 64, tolerance: 4 });
  });
  log(`isolines over ${grids.length} grids (${segments} segments): ours ${(oursS * 1000).toFixed(0)} ms, d3-contour ${(d3S * 1000).toFixed(0)} ms, whole tiles (ours, no surface refinement) ${(tileS * 1000).toFixed(0)} ms`);
  rows.push([`contour tiles (MVT), sample DEM z${CONTOUR_ZOOMS[0]}–${CONTOUR_ZOOMS[1]}, default intervals (tiles over the data, with or without lines)`, `${fmt(contourRate)} tiles/s`, '', '', '']);
  rows.push([`isolines alone, ${grids.length} of those tiles' grids, one thread`, `${fmt(grids.length / oursS)} grids/s (marching-squares.ts)`, `${fmt(grids.length / d3S)} grids/s (d3-contour, a pass per level)`, `${fmt(d3S / oursS, 2)}×`, 'faster than d3-contour']);
  await idx.close();

  // 3. Two distant DEMs from the command line.
  const two = join(work, 'two');
  await mkdir(two);
  await copyFile(FIXTURE_HGT, join(two, 'N43E006.hgt'));
  await copyFile(FIXTURE_HGT, join(two, 'N40W077.hgt'));
  t0 = performance.now();
  await run(process.execPath, [join(ROOT, 'bin/tilebake.js'), 'elevation', '--out', join(two, 'out'), ...(QUICK ? ['--maxzoom', '8'] : []), join(two, 'N40W077.hgt'), join(two, 'N43E006.hgt')], { env: { ...process.env, TILEBAKE_QUIET: '1' } });
  const twoS = (performance.now() - t0) / 1000;
  log(`elevation over two distant DEMs: ${twoS.toFixed(1)} s`);
  rows.push([`\`tilebake elevation\` over two distant 1° DEMs (index + terrain z0–${QUICK ? 8 : 11})`, `${fmt(twoS)} s wall`, '', '', '≤ 15 s']);

  // 4. The index over many synthetic files, in a child process (its own peak RSS).
  const syn = join(work, 'synthetic');
  await mkdir(syn);
  const side = Math.ceil(Math.sqrt(SYNTHETIC_FILES));
  for (let k = 0; k < SYNTHETIC_FILES; k++) await writeSyntheticHgt(syn, 40 + Math.floor(k / side), k % side);
  t0 = performance.now();
  const { stdout } = await run(process.execPath, ['--import', 'tsx', join(ROOT, 'test/fixtures/dem/index-child.ts'), join(syn, 'out'), join(syn, '*.hgt'), String(SYNTHETIC_CACHE_MB)], { maxBuffer: 1 << 20 });
  const synS = (performance.now() - t0) / 1000;
  const { maxRssBytes } = JSON.parse(stdout.trim().split('\n').pop()!) as { maxRssBytes: number };
  const allGridsMb = (SYNTHETIC_FILES * 1201 * 1201 * 4) / MB;
  log(`index over ${SYNTHETIC_FILES} synthetic files: ${synS.toFixed(1)} s, peak RSS ${(maxRssBytes / MB).toFixed(0)} MB`);
  rows.push([`index over ${SYNTHETIC_FILES} synthetic 1° SRTM3 files (grid cache ${SYNTHETIC_CACHE_MB} MB)`, `${fmt(synS)} s, peak RSS ${fmt(maxRssBytes / MB, 0)} MB`, `${fmt(allGridsMb, 0)} MB (every grid held at once)`, `${fmt(maxRssBytes / MB / allGridsMb, 2)}× (RSS ÷ grids)`, 'bounded memory']);

  const table = ['| measure | tilebake | baseline (same run) | ratio | target |', '|---|---:|---:|---:|---|', ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
  log(`\n${table}`);
  if (!QUICK) {
    const machine = `${CORES} cores (${cpus()[0]?.model ?? '?'}), ${fmt(totalmem() / 2 ** 30, 0)} GB, Node ${process.version}`;
    writeResults(join(import.meta.dirname, 'RESULTS.md'), `# bench/terrain\n\n${new Date().toISOString()}, ${machine}\n\n${table}\n`);
  }
} finally {
  await rm(work, { recursive: true, force: true });
}
