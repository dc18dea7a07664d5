/**
 * In-process benchmark: index build time and size per 1° SRTM tile, and warm bilinear lookups per
 * second at random points in coverage. Prints JSON on stdout (used by run.sh). Not a test.
 */
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ElevationIndex } from '../../lib/elevation/reader.ts';
import { FileRangeSource } from '../../lib/storage.ts';
import { ELEVATION_INDEX_PATH, buildElevation } from '../../pipeline/elevation/stage.ts';

process.env.TILEBAKE_QUIET = '1';
const root = join(import.meta.dirname, '../..');
const tiles = [join(root, 'data/sample/dem/N43E007.hgt'), join(root, 'test/fixtures/dem/N43E006.hgt')];
const LOOKUPS = 5_000_000;
const ROUNDS = 3;

const builds = [];
for (const hgt of tiles) {
  const out = await mkdtemp(join(tmpdir(), 'tilebake-bench-'));
  const t0 = performance.now();
  await buildElevation(out, [{ path: hgt }], { precision: 0.1, terrain: false });
  const ms = performance.now() - t0;
  builds.push({ tile: hgt.split('/').pop(), buildMs: Math.round(ms), indexBytes: (await stat(join(out, ELEVATION_INDEX_PATH))).size, hgtBytes: (await stat(hgt)).size, out });
}

const idx = await ElevationIndex.open(await FileRangeSource.open(join(builds[0].out, ELEVATION_INDEX_PATH)), 256 << 20);
const lat = new Float64Array(LOOKUPS), lon = new Float64Array(LOOKUPS);
for (let i = 0; i < LOOKUPS; i++) {
  lat[i] = 43 + Math.random();
  lon[i] = 7 + Math.random();
}
// Warm: every block in the cache.
const grid = [];
for (let a = 0; a <= 100; a++) for (let b = 0; b <= 100; b++) grid.push({ lat: 43 + a / 100, lon: 7 + b / 100 });
await idx.preload(grid);
let best = 0, sum = 0;
for (let r = 0; r < ROUNDS; r++) {
  const t0 = performance.now();
  for (let i = 0; i < LOOKUPS; i++) {
    const h = idx.heightAt(lat[i], lon[i]);
    if (h !== undefined && h !== null) sum += h;
  }
  best = Math.max(best, LOOKUPS / ((performance.now() - t0) / 1000));
}
await idx.close();
for (const b of builds) await rm(b.out, { recursive: true, force: true });
console.log(JSON.stringify({ lookupsPerSecond: Math.round(best), checksum: Math.round(sum / LOOKUPS), builds: builds.map(({ out: _o, ...b }) => b) }));
