// The tile mask (static-server/static-map/tile-mask.ts) against the native bilinear resampler
// (lib/resample-fast.ts): both take their sample positions and weights from lib/resample-kernel.ts's
// linearTaps, so the alpha computed from the tile grid is, byte for byte, what resizeLinear gives the
// region's alpha plane (255 where a tile is) — also where a tile edge falls between two output samples.
import { describe, expect, it } from 'vitest';
import { resizeLinear, type ResampleAxis } from '../lib/resample-fast.ts';
import { fixedTable, linearTaps } from '../lib/resample-kernel.ts';
import { resampledMask, type TileMask } from '../static-server/static-map/tile-mask.ts';

/** A grid of cols×rows tiles of `size` px, white (255 in every channel) where present, the region from (left, top) `n`×`nr`. */
function grid(size: number, cols: number, rows: number, present: boolean[], left: number, top: number, n: number, nr: number, channels: 1 | 3) {
  const edges = (off: number, len: number, count: number) => [0, ...Array.from({ length: count - 1 }, (_, i) => (i + 1) * size - off), len];
  const mask: TileMask = { colEdges: edges(left, n, cols), rowEdges: edges(top, nr, rows), present };
  const tiles = present.map((p) => (p ? Buffer.alloc(size * size * channels, 255) : null));
  return { mask, tiles: { tiles, cols, tileSize: size, left, top } };
}

/** resizeLinear's bytes of the region (`channels` per pixel) and the mask's, for the same axes. */
async function both(g: ReturnType<typeof grid>, n: number, nr: number, channels: 1 | 3, x: ResampleAxis & { m: number }, y: ResampleAxis & { m: number }) {
  const rgb = Buffer.alloc(x.m * y.m * channels);
  await resizeLinear(g.tiles, n, nr, channels, rgb, x.m, y.m, x, y);
  const mask = resampledMask(g.mask, { n, ...x }, { n: nr, ...y }, 'linear');
  return { rgb, mask: Buffer.from(mask) };
}

describe('the bilinear tile mask and resizeLinear', () => {
  it('a tile edge between two output samples: both read the same source pixels on each side of it', async () => {
    // 2×2 tiles of 16 px, the top-right and bottom-left missing; edges at source column and row 16.
    const T = 16, n = 2 * T;
    const g = grid(T, 2, 2, [true, false, false, true], 0, 0, n, n, 3);
    // Output sample 40 lands 2^-14 of a pixel short of source 16 (the first missing column): its weight
    // rounds to a whole sample, so it reads column 16 alone; sample 39 reads 15 and 16.
    const scale = 40 / (16.5 - 2 ** -14);
    const axis = { scale, offset: 0, m: 60 };
    const taps = linearTaps({ n, ...axis });
    const w = fixedTable(taps);
    expect([taps.first[40], w[80], w[81]]).toEqual([16, 4096, 0]);
    expect(taps.first[39]).toBe(15);
    expect(w[78] > 0 && w[79] > 0).toBe(true);
    const { rgb, mask } = await both(g, n, n, 3, axis, axis);
    // White tiles: every channel of the RGB is the alpha plane resampled, which the mask must equal.
    for (let k = 0; k < mask.length; k++) expect([k, rgb[k * 3], rgb[k * 3 + 1], rgb[k * 3 + 2]]).toEqual([k, mask[k], mask[k], mask[k]]);
    const at = (X: number, Y: number) => mask[Y * axis.m + X];
    // Row 10 lies in the top row of tiles: present up to column 15, missing from 16.
    expect(at(37, 10)).toBe(255);
    expect(at(39, 10)).toBeGreaterThan(0);
    expect(at(39, 10)).toBeLessThan(255);
    expect(at(40, 10)).toBe(0);
    // And across the row edge in the right column: row 40 reads row 16 alone (present bottom-right tile).
    expect([at(50, 39) > 0 && at(50, 39) < 255, at(50, 40)]).toEqual([true, 255]);
  });

  it('over grids, offsets and scales (1 included): the mask is resizeLinear\'s alpha plane, byte for byte', async () => {
    let seed = 11;
    const rnd = () => (seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32;
    let partial = 0;
    for (let k = 0; k < 24; k++) {
      const T = 256, cols = 2 + Math.floor(rnd() * 3), rows = 2 + Math.floor(rnd() * 3);
      const left = Math.floor(rnd() * 200), top = Math.floor(rnd() * 200);
      const n = cols * T - left - Math.floor(rnd() * 100), nr = rows * T - top - Math.floor(rnd() * 100);
      const present = Array.from({ length: cols * rows }, () => rnd() > 0.35);
      const f = k % 13 === 0 ? 1 : 1 + rnd() * 4;
      const sw = Math.round(n * f), sh = Math.round(nr * f);
      const m = Math.min(sw, 1 + Math.floor(rnd() * 700)), mh = Math.min(sh, 1 + Math.floor(rnd() * 500));
      const x = { scale: sw / n, offset: Math.floor(rnd() * (sw - m + 1)), m }, y = { scale: sh / nr, offset: Math.floor(rnd() * (sh - mh + 1)), m: mh };
      const { rgb, mask } = await both(grid(T, cols, rows, present, left, top, n, nr, 1), n, nr, 1, x, y);
      expect(mask.equals(rgb), `case ${k}`).toBe(true);
      partial += mask.filter((a) => a > 0 && a < 255).length;
    }
    // The cases cross tile edges (partly covered output samples), not only whole tiles.
    expect(partial).toBeGreaterThan(1000);
  });
});
