// Native bilinear resampling (lib/resample-fast.ts) against sharp/libvips' bilinear upsizing, which it
// replaces for static maps above the baked zooms: on real map pixels (docs/preview-desktop.png), RGB and
// one-band planes, the same bytes within 1 unit (and nearly all exactly); a scale of exactly 1 is a shift;
// the SIMD passes give the plain C loop's bytes.
import { beforeAll, describe, expect, it } from 'vitest';
import { loadNative } from '../lib/native.ts';
import { resizeLinear } from '../lib/resample-fast.ts';
import { fixedTable, linearTaps } from '../lib/resample-kernel.ts';
import { H, mapPixels, simdLevels, viaSharp, W } from './fixtures/map-pixels.ts';

let rgb: Buffer;
let grey: Buffer;

beforeAll(async () => {
  ({ rgb, grey } = await mapPixels());
});

describe('resizeLinear', () => {
  const cases: [number, 1 | 3, number, number, number, number][] = [
    // factor, channels, crop left, top, width, height
    [1.62, 3, 17, 11, 1256, 942],
    [2.7, 3, 300, 200, 1280, 960],
    [1.23, 3, 0, 0, 984, 738],
    [3.3, 1, 400, 100, 1280, 960],
    [1.00005, 3, 5, 3, 700, 500],
  ];
  for (const [f, channels, left, top, w, h] of cases) {
    it(`×${f}, ${channels} channel(s): libvips' pixels within 1`, async () => {
      const src = channels === 3 ? rgb : grey;
      const want = await viaSharp(src, channels, 'linear', f, left, top, w, h);
      const got = Buffer.alloc(w * h * channels);
      await resizeLinear(src, W, H, channels, got, w, h, { scale: Math.round(W * f) / W, offset: left }, { scale: Math.round(H * f) / H, offset: top });
      let max = 0, off = 0;
      for (let i = 0; i < got.length; i++) {
        const d = Math.abs(got[i] - want[i]);
        max = Math.max(max, d);
        if (d) off++;
      }
      expect(max).toBeLessThanOrEqual(1);
      expect(off / got.length).toBeLessThan(0.01);
    });
  }

  for (const [f, channels, w, h] of [[1.62, 3, 1281, 961], [2.7, 3, 7, 5], [1.23, 1, 300, 200]] as const) {
    it(`×${f}, ${channels} channel(s), ${w}×${h}: every instruction set gives the same bytes`, async () => {
      const src = channels === 3 ? rgb : grey;
      const outs: Buffer[] = [];
      for (const simd of simdLevels()) {
        const got = Buffer.alloc(w * h * channels, 0xab);
        await resizeLinear(src, W, H, channels, got, w, h, { scale: f, offset: 3 }, { scale: f, offset: 2 }, simd);
        outs.push(got);
      }
      for (const o of outs.slice(1)) expect(o.equals(outs[0])).toBe(true);
    });
  }

  it('the addon takes linearTaps\' taps and refuses others (not 2 a sample, weights over 4096, first going back)', async () => {
    const t = linearTaps({ n: 8, scale: 2, offset: 0, m: 16 });
    const call = (first: Int32Array, table: Int16Array, taps = 2) => {
      try {
        return loadNative().resizeLinear(grey.subarray(0, 64), 8, 8, 1, Buffer.alloc(256), 16, 16, first, t.index, table, taps, t.first, t.index, fixedTable(t), 2, 0);
      } catch (e) {
        return Promise.reject(e);
      }
    };
    await expect(call(t.first, fixedTable(t))).resolves.toBeUndefined();
    const heavy = fixedTable(t);
    heavy[3] += 1;
    await expect(call(t.first, heavy)).rejects.toThrow(/resizeLinear: bad sizes or taps/);
    const back = Int32Array.from(t.first);
    back[5] = back[4] - 1;
    await expect(call(back, fixedTable(t))).rejects.toThrow(/resizeLinear: bad sizes or taps/);
    await expect(call(t.first, fixedTable(t), 1)).rejects.toThrow(/resizeLinear: bad sizes or taps/);
  });

  it('rejects buffers of the wrong size', async () => {
    await expect(resizeLinear(rgb, W, H, 3, Buffer.alloc(10), 4, 4, { scale: 2, offset: 0 }, { scale: 2, offset: 0 })).rejects.toThrow(/resizeLinear: .* 10 for 4×4/);
  });
});
