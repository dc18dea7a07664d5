// Native lanczos3 downsizing (lib/resample-fast.ts, lib/native/src/reduce.c) against sharp/libvips' reduce,
// which it replaces for static maps between the baked zooms: on real map pixels (docs/preview-desktop.png),
// RGB and one-band planes, factors 0.35–0.99 with crop offsets, the same bytes as sharp with every
// instruction set; the taps (lib/resample-kernel.ts) are the tile mask's too.
import { beforeAll, describe, expect, it } from 'vitest';
import { resizeLanczos3 } from '../lib/resample-fast.ts';
import { lanczos3Taps } from '../lib/resample-kernel.ts';
import { H, mapPixels, simdLevels, viaSharp, W } from './fixtures/map-pixels.ts';

let rgb: Buffer;
let grey: Buffer;

beforeAll(async () => {
  ({ rgb, grey } = await mapPixels());
});

const levels = simdLevels();

describe('resizeLanczos3', () => {
  const cases: [number, 1 | 3, number, number, number, number][] = [
    // factor, channels, crop left, top, width, height
    [0.81, 3, 3, 2, 640, 480],
    [0.5, 3, 0, 0, 400, 300],
    [0.99, 3, 5, 4, 780, 585],
    [0.7, 1, 11, 7, 540, 400],
    [0.6001, 3, 1, 1, 477, 357],
    [0.35, 3, 2, 2, 270, 200],
    [0.93, 1, 0, 0, 744, 558],
  ];
  for (const [f, channels, left, top, w, h] of cases) {
    it(`×${f}, ${channels} channel(s): libvips' bytes with ${levels.join(', ')}`, async () => {
      const src = channels === 3 ? rgb : grey;
      const want = await viaSharp(src, channels, 'lanczos3', f, left, top, w, h);
      for (const simd of levels) {
        const got = Buffer.alloc(w * h * channels);
        await resizeLanczos3(src, W, H, channels, got, w, h, { scale: Math.round(W * f) / W, offset: left }, { scale: Math.round(H * f) / H, offset: top }, simd);
        let off = 0;
        for (let i = 0; i < got.length; i++) if (got[i] !== want[i]) off++;
        expect(off, `${simd}: bytes differing from sharp's`).toBe(0);
      }
    });
  }

  it('keeps an axis whose scale is 1 as it is, shifted by the offset', async () => {
    const got = Buffer.alloc(300 * 200 * 3);
    await resizeLanczos3(rgb, W, H, 3, got, 300, 200, { scale: 1, offset: 40 }, { scale: 1, offset: 30 });
    for (const row of [0, 99, 199]) expect(got.subarray(row * 900, row * 900 + 900)).toEqual(rgb.subarray(((row + 30) * W + 40) * 3, ((row + 30) * W + 340) * 3));
  });

  it('has libvips taps: 2·rint(3/scale) + 1, centred, normalised', () => {
    const t = lanczos3Taps({ n: 800, scale: 648 / 800, offset: 0, m: 648 });
    expect(t.taps).toBe(2 * Math.round(3 * (800 / 648)) + 1);
    for (let X = 0; X < 648; X += 97) {
      const w = t.table.subarray(t.index[X] * t.taps, (t.index[X] + 1) * t.taps);
      expect(w.reduce((a, b) => a + b, 0)).toBeCloseTo(1, 12);
      // The largest weight is on the source sample nearest the output's centre, (X + ½)·800/648 − ½.
      const centre = t.first[X] + w.indexOf(Math.max(...w));
      expect(Math.abs(centre - ((X + 0.5) * (800 / 648) - 0.5))).toBeLessThanOrEqual(0.5 + 1 / 64);
    }
  });

  it('rejects buffers of the wrong size and scales above 1', async () => {
    await expect(resizeLanczos3(rgb, W, H, 3, Buffer.alloc(10), 4, 4, { scale: 0.5, offset: 0 }, { scale: 0.5, offset: 0 })).rejects.toThrow(/resizeLanczos3: .* 10 for 4×4/);
    await expect(resizeLanczos3(rgb, W, H, 3, Buffer.alloc(48), 4, 4, { scale: 1.5, offset: 0 }, { scale: 0.5, offset: 0 })).rejects.toThrow(/at most 1/);
  });
});
