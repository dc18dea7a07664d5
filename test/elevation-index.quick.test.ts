import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bilinear, locate } from '../lib/elevation/bilinear.ts';
import { decodeBlock, encodeBlock } from '../lib/elevation/codec.ts';
import { CodeWidth } from '../lib/elevation/format.ts';
import { ByteLru } from '../lib/lru.ts';
import { ElevationIndex } from '../lib/elevation/reader.ts';
import { FileRangeSource } from '../lib/storage.ts';
import type { DemGrid } from '../pipeline/elevation/grid.ts';
import { planLayers, writeIndex, type BlockEncoder } from '../pipeline/elevation/writer.ts';

/** writeIndex over in-memory grids (the source's `order` indexes `grids`). */
const write = (path: string, grids: DemGrid[], plans: ReturnType<typeof planLayers>, precision: number) =>
  writeIndex(path, plans, { precision, encode: encoder(precision), load: async (k) => grids[k] });

const encoder = (precision: number): BlockEncoder => async (h, r, c, w) => encodeBlock(h, r, c, precision, w);

/** A synthetic grid: heights from f(row, col), NaN where f returns NaN. */
function grid(file: string, originLat: number, originLon: number, step: number, rows: number, cols: number, f: (r: number, c: number) => number): DemGrid {
  const data = new Float32Array(rows * cols);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) data[r * cols + c] = f(r, c);
  return { file, originLat, originLon, stepLat: step, stepLon: step, rows, cols, data, integer: false, footprint: [originLon, originLat - (rows - 1) * step, originLon + (cols - 1) * step, originLat] };
}

describe('bilinear interpolation', () => {
  it('reproduces a plane exactly and the posts at the corners', () => {
    const plane = (x: number, y: number) => 100 + 3 * x - 7 * y;
    for (const [dx, dy] of [[0, 0], [1, 0], [0, 1], [1, 1], [0.25, 0.75], [0.5, 0.5]]) {
      expect(bilinear(plane(0, 0), plane(1, 0), plane(0, 1), plane(1, 1), dx, dy)).toBeCloseTo(plane(dx, dy), 12);
    }
  });

  it('is the bilinear (not planar) surface on a saddle', () => {
    // v = x*y: bilinear gives dx*dy exactly.
    expect(bilinear(0, 0, 0, 1, 0.3, 0.6)).toBeCloseTo(0.18, 12);
  });

  it('drops a missing post and renormalises the other weights', () => {
    const [dx, dy] = [0.25, 0.5];
    const w01 = dx * (1 - dy), w10 = (1 - dx) * dy, w11 = dx * dy;
    const expected = (20 * w01 + 30 * w10 + 40 * w11) / (w01 + w10 + w11);
    expect(bilinear(NaN, 20, 30, 40, dx, dy)).toBeCloseTo(expected, 12);
    // Two missing: the remaining pair, renormalised.
    expect(bilinear(NaN, NaN, 30, 40, dx, dy)).toBeCloseTo((30 * (1 - dx) + 40 * dx), 12);
    // All four missing: NaN (null to clients).
    expect(bilinear(NaN, NaN, NaN, NaN, dx, dy)).toBeNaN();
    // On a missing post with zero-weight neighbours: their mean.
    expect(bilinear(NaN, 10, 20, 30, 0, 0)).toBeCloseTo(20, 12);
  });

  it('locates points in a north-up grid, including the last row/column', () => {
    expect(locate(44, 6, 44, 6, 0.5, 0.5, 3, 3)).toEqual({ r0: 0, c0: 0, dx: 0, dy: 0 });
    expect(locate(43, 7, 44, 6, 0.5, 0.5, 3, 3)).toEqual({ r0: 1, c0: 1, dx: 1, dy: 1 });
    expect(locate(43.75, 6.1, 44, 6, 0.5, 0.5, 3, 3)).toMatchObject({ r0: 0, c0: 0 });
    expect(locate(42.9, 6, 44, 6, 0.5, 0.5, 3, 3)).toBeNull();
  });
});

describe('block codec', () => {
  it('quantisation error stays within precision/2 and nodata survives', () => {
    const rows = 37, cols = 53;
    const h = new Float32Array(rows * cols);
    for (let i = 0; i < h.length; i++) h[i] = i % 97 === 0 ? NaN : 1500 * Math.sin(i / 50) + (i % 13) * 0.0371;
    for (const precision of [0.1, 0.01, 1, 0.25]) {
      const e = encodeBlock(h, rows, cols, precision);
      expect(e.width).toBe(3000 / precision < 0xffff ? CodeWidth.U16 : CodeWidth.U32);
      const d = decodeBlock(e.payload, e.base, e.width, rows, cols, precision);
      let maxErr = 0;
      for (let i = 0; i < h.length; i++) {
        if (Number.isNaN(h[i])) expect(d[i]).toBeNaN();
        else maxErr = Math.max(maxErr, Math.abs(d[i] - h[i]));
      }
      // Float32 storage adds at most ~1e-4 m at these magnitudes.
      expect(maxErr).toBeLessThanOrEqual(precision / 2 + 2e-4);
      expect(maxErr).toBeGreaterThan(0);
    }
  });

  it('is exact for integer heights and switches to 32-bit codes for a wide range', () => {
    const h = Float32Array.from([-420, 0, 8848, 1, -32767, 32767]);
    const e = encodeBlock(h, 2, 3, 0.1);
    expect(e.width).toBe(CodeWidth.U32);
    expect(Array.from(decodeBlock(e.payload, e.base, e.width, 2, 3, 0.1))).toEqual(Array.from(h));
    const empty = encodeBlock(new Float32Array(4).fill(NaN), 2, 2, 0.1);
    expect(empty.width).toBe(CodeWidth.Empty);
    expect(empty.payload.length).toBe(0);
  });
});

describe('ByteLru', () => {
  it('never holds more bytes than its bound and evicts the least recently used', () => {
    const lru = new ByteLru<number, string>(1000);
    for (let i = 0; i < 200; i++) {
      lru.set(i, `v${i}`, 90 + (i % 7) * 10);
      expect(lru.bytes).toBeLessThanOrEqual(1000);
      if (i > 0) lru.get(0); // keep 0 hot
    }
    expect(lru.has(0)).toBe(true);
    expect(lru.has(1)).toBe(false);
    lru.set(999, 'too big', 1001);
    expect(lru.has(999)).toBe(false);
  });
});

describe('index file round trip', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tilebake-elev-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('answers the written heights, with voids, several blocks and two resolutions', async () => {
    const step = 1 / 100;
    // 300 x 300 posts (several 256-blocks), a void hole, over [10, 13] x [47, 50].
    const fine = grid('fine', 50, 10, step, 301, 301, (r, c) => (r > 100 && r < 110 && c > 200 && c < 205 ? NaN : 500 + r * 1.5 - c * 0.7 + Math.sin(r * c * 1e-3) * 20));
    // A coarser grid around it (lower priority by resolution).
    const coarse = grid('coarse', 51, 9, 0.1, 41, 41, () => 42);
    const plans = planLayers([{ dem: coarse, priority: 0, order: 0 }, { dem: fine, priority: 0, order: 1 }]);
    expect(plans.map((p) => p.layer.sources)).toEqual([['fine'], ['coarse']]);
    const path = join(dir, 'a.tbei');
    const { meta } = await write(path, [coarse, fine], plans, 0.1);
    expect(meta.layers[0].blockRows).toBe(2);
    // A tight cache: 3 blocks of 256² floats at most.
    const idx = await ElevationIndex.open(await FileRangeSource.open(path), 3 * 256 * 256 * 4 + 1024);
    const pts = [];
    for (let k = 0; k < 2000; k++) pts.push({ lat: 47 + ((k * 7919) % 3000) / 1000, lon: 10 + ((k * 104729) % 3000) / 1000 });
    const { heights, outside } = await idx.heights(pts);
    expect(outside).toEqual([]);
    for (let k = 0; k < pts.length; k++) {
      const fy = (50 - pts[k].lat) / step, fx = (pts[k].lon - 10) / step;
      const r0 = Math.min(Math.floor(fy), 299), c0 = Math.min(Math.floor(fx), 299);
      const v = (r: number, c: number) => fine.data[r * 301 + c];
      const expected = bilinear(v(r0, c0), v(r0, c0 + 1), v(r0 + 1, c0), v(r0 + 1, c0 + 1), fx - c0, fy - r0);
      expect(Math.abs((heights[k] as number) - expected)).toBeLessThanOrEqual(0.05 + 1e-3);
      expect(idx.cache.bytes).toBeLessThanOrEqual(idx.cache.maxBytes);
    }
    // The synchronous fast path (used by the benchmark) agrees with the general path on cached blocks.
    const big = await ElevationIndex.open(await FileRangeSource.open(path), 64 << 20);
    await big.preload(pts);
    const again = await big.heights(pts);
    pts.forEach((p, k) => expect(big.heightAt(p.lat, p.lon)).toBe(again.heights[k]));
    expect(again.heights).toEqual(heights);
    await big.close();
    // Inside the void hole's centre all four posts are missing in the fine layer: the coarse layer answers.
    const hole = await idx.heights([{ lat: 50 - 105 * step, lon: 10 + 202.5 * step }]);
    expect(hole.heights[0]).toBeCloseTo(42, 5);
    // Outside the fine grid but inside the coarse one.
    expect((await idx.heights([{ lat: 50.5, lon: 9.5 }])).heights[0]).toBeCloseTo(42, 5);
    // Outside everything: null and a warning index.
    const far = await idx.heights([{ lat: 10, lon: 10 }, { lat: 48, lon: 11 }]);
    expect(far.heights[0]).toBeNull();
    expect(far.outside).toEqual([0]);
    await idx.close();
  });

  it('sampleGrid gives every grid point exactly the height `heights` gives it, across blocks, layers and voids', async () => {
    const step = 1 / 100;
    const fine = grid('fine', 50, 10, step, 301, 301, (r, c) => (r > 100 && r < 110 && c > 200 && c < 205 ? NaN : 500 + r * 1.5 - c * 0.7 + Math.sin(r * c * 1e-3) * 20));
    const coarse = grid('coarse', 51, 9, 0.1, 41, 41, (r, c) => 42 + r - c);
    const path = join(dir, 'grid.tbei');
    await write(path, [coarse, fine], planLayers([{ dem: coarse, priority: 0, order: 0 }, { dem: fine, priority: 0, order: 1 }]), 0.1);
    const idx = await ElevationIndex.open(await FileRangeSource.open(path), 64 << 20);
    // Rows and columns reaching beyond both layers, through the void and across block edges (2.56° per block).
    const lats = Float64Array.from({ length: 57 }, (_, i) => 51.2 - i * 0.0731);
    const lons = Float64Array.from({ length: 63 }, (_, j) => 8.7 + j * 0.0677);
    lats[10] = 50 - 105 * step;
    lons[20] = 10 + 256 * step;
    const out = new Float64Array(lats.length * lons.length);
    const filled = await idx.sampleGrid(lats, lons, out);
    const pts = Array.from(out, (_, k) => ({ lat: lats[Math.floor(k / lons.length)], lon: lons[k % lons.length] }));
    const { heights } = await idx.heights(pts);
    expect(Array.from(out, (v) => (v === v ? v : null))).toEqual(heights);
    expect(filled).toBe(heights.filter((h) => h !== null).length);
    expect(filled).toBeGreaterThan(1000);
    expect(filled).toBeLessThan(pts.length);
    await idx.close();
  });

  it('priority overrides resolution', async () => {
    const fine = grid('fine', 50, 10, 0.01, 101, 101, () => 1);
    const coarse = grid('coarse', 51, 9, 0.1, 41, 41, () => 2);
    const plans = planLayers([{ dem: fine, priority: 0, order: 0 }, { dem: coarse, priority: 5, order: 1 }]);
    const path = join(dir, 'b.tbei');
    await write(path, [fine, coarse], plans, 0.1);
    const idx = await ElevationIndex.open(await FileRangeSource.open(path), 1 << 20);
    expect((await idx.heights([{ lat: 49.5, lon: 10.5 }])).heights[0]).toBeCloseTo(2, 5);
    await idx.close();
  });
});
