/**
 * Hillshade benchmark (not a test): hillshade tiles/s of the elevation stage over the sample DEM
 * (N43E007, SRTM3), beside GDAL's command-line tools shading the same pixels, rounds alternated:
 * - tilebake: the stage's hillshade job (index already built and kept; the archive removed before
 *   each round): pool threads sample each tile's grid, gdal-async's `demAsync` shades it, sharp
 *   encodes it as grey-alpha PNG, the PMTiles writer stores it. Tiles/s = tiles over the data ÷ the
 *   job's wall time; CPU = this process's CPU over the job (all threads).
 * - GDAL's tools: per zoom, `gdalwarp -t_srs EPSG:3857 -r bilinear` of the DEM onto exactly the
 *   tiles' pixel grid over the data (their union box, at that zoom's pixel size), then `gdaldem
 *   hillshade -s cos(lat)` of it to a GeoTIFF: the same pixels shaded, as one raster per zoom, no
 *   tiles cut, encoded or stored. Tile-equivalents/s = pixels ÷ 256² ÷ wall time, the zooms run
 *   `cores` at a time (each tool is one thread); CPU from /usr/bin/time. `gdaldem` alone is shown too.
 * Usage: node --import tsx bench/hillshade/run.ts [--quick] [--rounds N] (quick: z0–11, one round, no
 * RESULTS.md). Writes bench/hillshade/RESULTS.md otherwise.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { mercatorGroundScale, tileMercatorGeoTransform, tileRunsForBoxes, type BBox } from '../../lib/tile-math.ts';
import { hillshadeSchema } from '../../pipeline/config/elevation.ts';
import { buildElevation } from '../../pipeline/elevation/stage.ts';

process.env.TILEBAKE_QUIET ??= '1';
const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '..', '..');
const SAMPLE_HGT = join(ROOT, 'data/sample/dem/N43E007.hgt');
/** The DEM's cell. */
const CELL: BBox = [7, 43, 8, 44];
const { values: args } = parseArgs({ options: { quick: { type: 'boolean', default: false }, rounds: { type: 'string' } } });
const QUICK = args.quick;
/** z0–13 over the sample cell (~1,100 tiles; z0–11, the DEM's own zooms, has ~105: too few to time). */
const MAXZOOM = QUICK ? 11 : 13;
const ROUNDS = Number(args.rounds ?? (QUICK ? 1 : 3));
const CORES = availableParallelism();
const TILE = 256;

const work = await mkdtemp(join(tmpdir(), 'tilebake-bench-hillshade-'));
const log = (s: string) => process.stdout.write(`${s}\n`);
const fmt = (n: number, d = 1) => n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });
const median = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];

/** Per zoom: the tile-aligned box over the cell in EPSG:3857 metres, its pixels and its middle tile row. */
function zoomGrids(): { z: number; te: number[]; cols: number; rows: number; midRow: number }[] {
  const out = [];
  for (let z = 0; z <= MAXZOOM; z++) {
    const runs = tileRunsForBoxes([CELL], z);
    const minX = Math.min(...runs.map((r) => r.minX)), maxX = Math.max(...runs.map((r) => r.maxX));
    const minY = Math.min(...runs.map((r) => r.y)), maxY = Math.max(...runs.map((r) => r.y));
    const nw = tileMercatorGeoTransform(z, minX, minY, TILE), se = tileMercatorGeoTransform(z, maxX + 1, maxY + 1, TILE);
    out.push({ z, te: [nw[0], se[3], se[0], nw[3]], cols: (maxX - minX + 1) * TILE, rows: (maxY - minY + 1) * TILE, midRow: Math.floor((minY + maxY) / 2) });
  }
  return out;
}

/** Run a command under /usr/bin/time: wall and CPU seconds. */
async function timed(cmd: string, argv: string[]): Promise<{ wall: number; cpu: number }> {
  const t0 = performance.now();
  const { stderr } = await run('/usr/bin/time', ['-f', 'CPU %U %S', cmd, ...argv], { maxBuffer: 1 << 20 });
  const m = /CPU ([\d.]+) ([\d.]+)\s*$/.exec(stderr);
  return { wall: (performance.now() - t0) / 1000, cpu: m ? Number(m[1]) + Number(m[2]) : NaN };
}

/** GDAL's tools over every zoom, `CORES` zooms at a time. */
async function gdalRound(dir: string): Promise<{ wall: number; cpu: number; demCpu: number; pixels: number }> {
  const grids = zoomGrids();
  let next = 0, cpu = 0, demCpu = 0, pixels = 0;
  const t0 = performance.now();
  const lane = async () => {
    while (next < grids.length) {
      const g = grids[next++];
      const warped = join(dir, `z${g.z}.tif`), shaded = join(dir, `z${g.z}-hs.tif`);
      const w = await timed('gdalwarp', ['-q', '-overwrite', '-t_srs', 'EPSG:3857', '-te', ...g.te.map(String), '-ts', String(g.cols), String(g.rows), '-r', 'bilinear', '-ot', 'Float32', SAMPLE_HGT, warped]);
      const d = await timed('gdaldem', ['hillshade', '-q', '-s', String(mercatorGroundScale(g.z, g.midRow)), warped, shaded]);
      cpu += w.cpu + d.cpu;
      demCpu += d.cpu;
      pixels += g.cols * g.rows;
    }
  };
  await Promise.all(Array.from({ length: CORES }, lane));
  return { wall: (performance.now() - t0) / 1000, cpu, demCpu, pixels };
}

try {
  const out = join(work, 'tilebake');
  const hillshade = { ...hillshadeSchema.parse({}), minzoom: 0, maxzoom: MAXZOOM };
  // The index, once (each round keeps it: same DEM and precision).
  await buildElevation(out, [{ path: SAMPLE_HGT }], { precision: 0.1, terrain: false });
  const ours: { rate: number; cpuPerTile: number; tiles: number }[] = [];
  const peer: { rate: number; cpuPerTile: number; demCpuPerTile: number; tiles: number }[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    await rm(join(out, 'data', 'hillshade.pmtiles'), { force: true });
    const c0 = process.cpuUsage();
    const s = await buildElevation(out, [{ path: SAMPLE_HGT }], { precision: 0.1, terrain: false, hillshade });
    const c = process.cpuUsage(c0);
    const h = s.hillshade!;
    ours.push({ rate: h.computed / h.seconds, cpuPerTile: (c.user + c.system) / 1e6 / h.computed, tiles: h.computed });
    log(`round ${round} tilebake: ${h.computed} tiles (${h.tiles} written, ${fmt(h.bytes / 1e6, 2)} MB) in ${h.seconds.toFixed(2)} s: ${fmt(ours.at(-1)!.rate)} tiles/s, ${fmt(ours.at(-1)!.cpuPerTile * 1000, 2)} CPU ms/tile, load ${fmt(loadavg()[0])}`);
    const dir = join(work, `gdal-${round}`);
    await mkdir(dir);
    const g = await gdalRound(dir);
    const tiles = g.pixels / (TILE * TILE);
    peer.push({ rate: tiles / g.wall, cpuPerTile: g.cpu / tiles, demCpuPerTile: g.demCpu / tiles, tiles });
    log(`round ${round} gdalwarp + gdaldem: ${fmt(tiles, 0)} tile-equivalents in ${g.wall.toFixed(2)} s: ${fmt(peer.at(-1)!.rate)} tiles/s, ${fmt(peer.at(-1)!.cpuPerTile * 1000, 2)} CPU ms/tile (gdaldem alone ${fmt(peer.at(-1)!.demCpuPerTile * 1000, 2)}), load ${fmt(loadavg()[0])}`);
    await rm(dir, { recursive: true, force: true });
  }
  const o = median(ours.map((r) => r.rate)), p = median(peer.map((r) => r.rate));
  const oc = median(ours.map((r) => r.cpuPerTile)), pc = median(peer.map((r) => r.cpuPerTile)), dc = median(peer.map((r) => r.demCpuPerTile));
  const rows = [
    [`hillshade tiles (256 px grey-alpha PNG into PMTiles), sample DEM z0–${MAXZOOM}, ${ours[0].tiles} tiles`, `${fmt(o)} tiles/s`, `${fmt(p)} tiles/s (gdalwarp + gdaldem hillshade of the same pixels, ${CORES} zooms at a time, GeoTIFF out)`, `${fmt(o / p, 2)}×`],
    ['CPU per tile', `${fmt(oc * 1000, 2)} ms`, `${fmt(pc * 1000, 2)} ms (gdaldem alone ${fmt(dc * 1000, 2)} ms)`, `${fmt(oc / pc, 2)}×`],
  ];
  const table = ['| measure | tilebake | GDAL tools (same run) | ratio |', '|---|---:|---:|---:|', ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
  log(`\n${table}`);
  if (!QUICK) {
    const machine = `${CORES} cores (${cpus()[0]?.model ?? '?'}), ${fmt(totalmem() / 2 ** 30, 0)} GB, Node ${process.version}`;
    const runs = ours.map((r, i) => `| ${i + 1} | ${fmt(r.rate)} | ${fmt(r.cpuPerTile * 1000, 2)} | ${fmt(peer[i].rate)} | ${fmt(peer[i].cpuPerTile * 1000, 2)} |`).join('\n');
    await writeFile(join(import.meta.dirname, 'RESULTS.md'), `# bench/hillshade

${new Date().toISOString()}, ${machine}, load average ${loadavg().map((l) => fmt(l)).join(' / ')} at the end (a shared machine: other work ran beside it).
Median of ${ROUNDS} alternated rounds (tilebake, then GDAL's tools, per round). What each side does: the header of \`run.ts\`.

${table}

Rounds (tiles/s, CPU ms per tile):

| round | tilebake tiles/s | CPU ms | GDAL tools tiles/s | CPU ms |
|---|---:|---:|---:|---:|
${runs}
`);
  }
} finally {
  await rm(work, { recursive: true, force: true });
}
