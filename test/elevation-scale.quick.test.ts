/**
 * The index over many files: 9 synthetic 1° SRTM3 files (a 3 × 3 block of cells, written here) indexed
 * in a child process with a grid cache smaller than the grids. Each file must be read a few times at
 * most, and the index must answer exactly at the edges and corners where files meet. The peak RSS at
 * scale (100 files against what holding every grid takes) is a measurement: bench/terrain reports it.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bilinear, locate } from '../lib/elevation/bilinear.ts';
import { ElevationIndex } from '../lib/elevation/reader.ts';
import { FileRangeSource } from '../lib/storage.ts';
import { ELEVATION_INDEX_PATH, type ElevationStats } from '../pipeline/elevation/stage.ts';
import { POSTS_PER_DEG, syntheticPost, writeSyntheticHgt } from './fixtures/dem/synthetic.ts';

const run = promisify(execFile);
const CHILD = join(import.meta.dirname, 'fixtures/dem/index-child.ts');
/** Cells [40, 43) N × [0, 3) E. */
const SOUTH = 40, WEST = 0, CELLS = 3;
const FILES = CELLS * CELLS;
const SIDE = POSTS_PER_DEG + 1;
/** What holding every grid at once takes (Float32 posts). */
const ALL_GRIDS_BYTES = FILES * SIDE * SIDE * 4;
/** Room for two of the nine grids. */
const GRID_CACHE_MB = 12;

let dir: string;
let result: { stats: ElevationStats; maxRssBytes: number };
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tilebake-scale-'));
  await mkdir(join(dir, 'dem'));
  for (let lat = SOUTH; lat < SOUTH + CELLS; lat++) for (let lon = WEST; lon < WEST + CELLS; lon++) await writeSyntheticHgt(join(dir, 'dem'), lat, lon);
  const { stdout } = await run(process.execPath, ['--import', 'tsx', CHILD, join(dir, 'out'), join(dir, 'dem', '*.hgt'), String(GRID_CACHE_MB)], { maxBuffer: 1 << 20 });
  result = JSON.parse(stdout.trim().split('\n').pop()!);
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe(`index of ${FILES} DEM files`, () => {
  it('streams the files: with a grid cache smaller than the grids, each file is read a few times at most', () => {
    const { stats } = result;
    expect(GRID_CACHE_MB * 2 ** 20).toBeLessThan(ALL_GRIDS_BYTES / 4);
    expect(stats.chunks).toBeGreaterThan(0);
    expect(stats.gridLoads).toBeGreaterThanOrEqual(FILES);
    expect(stats.gridLoads).toBeLessThanOrEqual(3 * FILES);
  });

  it('answers exactly at the edges and corners between files', async () => {
    const idx = await ElevationIndex.open(await FileRangeSource.open(join(dir, 'out', ELEVATION_INDEX_PATH)), 64 << 20);
    expect(idx.meta.layers).toHaveLength(1);
    expect(idx.meta.layers[0]).toMatchObject({ originLat: SOUTH + CELLS, originLon: WEST, rows: CELLS * POSTS_PER_DEG + 1, cols: CELLS * POSTS_PER_DEG + 1 });
    const pts: { lat: number; lon: number }[] = [];
    const post = 1 / POSTS_PER_DEG;
    for (let k = 1; k < CELLS; k++) {
      const f = (k * 0.37) % 1;
      // On shared edges (a meridian and a parallel between files), at corners, and a fraction of a post around them.
      pts.push({ lat: SOUTH + f * CELLS, lon: WEST + k }, { lat: SOUTH + k, lon: WEST + f * CELLS }, { lat: SOUTH + k, lon: WEST + k });
      for (const d of [-post / 3, post / 3, -1e-9, 1e-9]) pts.push({ lat: SOUTH + k + d, lon: WEST + k - d }, { lat: SOUTH + k - d, lon: WEST + (k * 3) % CELLS + 0.5 });
    }
    // The outer corners of the whole set.
    pts.push({ lat: SOUTH, lon: WEST }, { lat: SOUTH + CELLS, lon: WEST + CELLS }, { lat: SOUTH, lon: WEST + CELLS });
    const { heights, outside } = await idx.heights(pts);
    expect(outside).toEqual([]);
    const row0 = (90 - (SOUTH + CELLS)) * POSTS_PER_DEG, col0 = (WEST + 180) * POSTS_PER_DEG;
    const rows = CELLS * POSTS_PER_DEG + 1;
    pts.forEach((p, i) => {
      const cell = locate(p.lat, p.lon, SOUTH + CELLS, WEST, post, post, rows, rows)!;
      const v = (r: number, c: number) => syntheticPost(row0 + r, col0 + c);
      const want = bilinear(v(cell.r0, cell.c0), v(cell.r0, cell.c0 + 1), v(cell.r0 + 1, cell.c0), v(cell.r0 + 1, cell.c0 + 1), cell.dx, cell.dy);
      expect(heights[i], `${p.lat}, ${p.lon}`).toBeCloseTo(want, 6);
    });
    // Just outside the set: outside coverage.
    expect((await idx.heights([{ lat: SOUTH + CELLS + 0.01, lon: WEST + 1 }])).outside).toEqual([0]);
    await idx.close();
  });
});
