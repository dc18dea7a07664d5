// The native resamplers reading a grid of tiles in place (static maps: the decoded tiles under a view,
// not stitched) give the bytes of the same pixels stitched into one image, missing tiles as zeros: every
// instruction set, both kernels, RGB and one band, tile columns cut at every offset (runs shorter than a
// SIMD step included), whole tile columns and rows missing (left 0 without computing); and bad grids are rejected.
import { beforeAll, describe, expect, it } from 'vitest';
import { resizeLanczos3, resizeLinear, type TileGrid } from '../lib/resample-fast.ts';
import { H, mapPixels, simdLevels, W } from './fixtures/map-pixels.ts';

let rgb: Buffer;
let grey: Buffer;

beforeAll(async () => {
  ({ rgb, grey } = await mapPixels());
});

/** The map pixels cut into T×T tiles (the grid covers W×H), the tiles at `missing` left out, and the region from (left, top) stitched with zeros there. */
function cut(src: Buffer, ch: number, T: number, missing: Set<number>, left: number, top: number, rw: number, rh: number): { grid: TileGrid; stitched: Buffer } {
  const cols = Math.floor(W / T), rows = Math.floor(H / T);
  const tiles: (Buffer | null)[] = [];
  for (let ty = 0; ty < rows; ty++) {
    for (let tx = 0; tx < cols; tx++) {
      if (missing.has(ty * cols + tx)) {
        tiles.push(null);
        continue;
      }
      const t = Buffer.alloc(T * T * ch);
      for (let r = 0; r < T; r++) src.copy(t, r * T * ch, ((ty * T + r) * W + tx * T) * ch, ((ty * T + r) * W + tx * T + T) * ch);
      tiles.push(t);
    }
  }
  const stitched = Buffer.alloc(rw * rh * ch);
  for (let y = 0; y < rh; y++) {
    for (let x = 0; x < rw; x++) {
      const gx = x + left, gy = y + top, tile = tiles[Math.floor(gy / T) * cols + Math.floor(gx / T)];
      if (tile) tile.copy(stitched, (y * rw + x) * ch, ((gy % T) * T + (gx % T)) * ch, ((gy % T) * T + (gx % T) + 1) * ch);
    }
  }
  return { grid: { tiles, cols, tileSize: T, left, top }, stitched };
}

describe('resampling from a grid of tiles', () => {
  const cases: ['linear' | 'lanczos3', 1 | 3, number, number, number][] = [
    // kernel, channels, tile size, factor, missing tile
    ['lanczos3', 3, 100, 0.81, 7],
    ['lanczos3', 3, 37, 0.55, 3],
    ['lanczos3', 1, 64, 0.7, 10],
    ['linear', 3, 100, 1.62, 9],
    ['linear', 3, 37, 2.3, 20],
    ['linear', 1, 64, 1.3, 5],
  ];
  for (const [kernel, ch, T, f, gone] of cases) {
    it(`${kernel}, ${ch} channel(s), ${T} px tiles, ×${f}: the stitched region's bytes at every instruction set`, async () => {
      const left = 13, top = 7, rw = Math.floor(W / T) * T - left - 5, rh = Math.floor(H / T) * T - top - 3;
      const { grid, stitched } = cut(ch === 3 ? rgb : grey, ch, T, new Set([0, gone]), left, top, rw, rh);
      const w = Math.floor(rw * f) - 4, h = Math.floor(rh * f) - 4;
      const x = { scale: Math.round(rw * f) / rw, offset: 2 }, y = { scale: Math.round(rh * f) / rh, offset: 1 };
      const resize = kernel === 'linear' ? resizeLinear : resizeLanczos3;
      const want = Buffer.alloc(w * h * ch);
      await resize(stitched, rw, rh, ch, want, w, h, x, y);
      for (const simd of simdLevels()) {
        const got = Buffer.alloc(w * h * ch, 0xab);
        await resize(grid, rw, rh, ch, got, w, h, x, y, simd);
        expect(got.equals(want), `${simd}`).toBe(true);
      }
    });
  }

  for (const kernel of ['linear', 'lanczos3'] as const) {
    it(`${kernel}: a whole missing tile column and row (left 0 without computing) give the stitched bytes`, async () => {
      const T = 64, cols = Math.floor(W / T), left = 20, top = 9, rw = cols * T - left - 7, rh = Math.floor(H / T) * T - top - 5;
      const missing = new Set(Array.from({ length: cols * Math.floor(H / T) }, (_, i) => i).filter((i) => i % cols === 1 || Math.floor(i / cols) === 2 || i % cols === cols - 1));
      const { grid, stitched } = cut(rgb, 3, T, missing, left, top, rw, rh);
      const f = kernel === 'linear' ? 1.4 : 0.6, w = Math.floor(rw * f) - 2, h = Math.floor(rh * f) - 2;
      const x = { scale: Math.round(rw * f) / rw, offset: 1 }, y = { scale: Math.round(rh * f) / rh, offset: 1 };
      const resize = kernel === 'linear' ? resizeLinear : resizeLanczos3;
      const want = Buffer.alloc(w * h * 3);
      await resize(stitched, rw, rh, 3, want, w, h, x, y);
      for (const simd of simdLevels()) {
        const got = Buffer.alloc(w * h * 3, 0xab);
        await resize(grid, rw, rh, 3, got, w, h, x, y, simd);
        expect(got.equals(want), `${simd}`).toBe(true);
      }
    });
  }

  it('rejects a region outside the grid and tiles of the wrong size', async () => {
    const { grid } = cut(rgb, 3, 100, new Set(), 0, 0, 10, 10);
    const out = Buffer.alloc(8 * 8 * 3);
    const axis = { scale: 0.8, offset: 0 };
    await expect(resizeLanczos3({ ...grid, left: 50 }, 780, 100, 3, out, 8, 8, axis, axis)).rejects.toThrow(/not inside the tiles/);
    await expect(resizeLinear({ ...grid, tiles: [Buffer.alloc(5), ...grid.tiles.slice(1)] }, 10, 10, 3, out, 8, 8, axis, axis)).rejects.toThrow(/tiles of other bytes/);
  });
});
