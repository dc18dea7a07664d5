// Overlays blended natively (static-map/overlay-raster.ts → lib/native/src/blend.c) give, byte for byte,
// premultiplied "over" with the rounding (s·a + d·(255 − a) + 127) / 255 computed here independently:
// random images and overlays (clear, opaque and partial pixels), with and without an alpha plane, boxes
// at the image's edges; an overlay outside the image is rejected.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { blendOverlay } from '../static-server/static-map/overlay-raster.ts';

function reference(rgb: Buffer, alpha: Buffer | null, width: number, o: { data: Buffer; left: number; top: number; width: number; height: number }): void {
  for (let y = 0; y < o.height; y++) {
    for (let x = 0; x < o.width; x++) {
      const s = (y * o.width + x) * 4, a = o.data[s + 3], k = (o.top + y) * width + o.left + x;
      for (let c = 0; c < 3; c++) rgb[k * 3 + c] = Math.floor((o.data[s + c] * a + rgb[k * 3 + c] * (255 - a) + 127) / 255);
      if (alpha) alpha[k] = Math.floor((a * 255 + alpha[k] * (255 - a) + 127) / 255);
    }
  }
}

/** Bytes mostly 0 (clear overlay pixels), 255 or anything. */
const byte = fc.oneof(fc.constant(0), fc.constant(255), fc.integer({ min: 0, max: 255 }));

describe('blendOverlay', () => {
  it('is premultiplied "over" with its rounding, byte for byte', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 40 }), fc.integer({ min: 1, max: 30 }), fc.boolean(), fc.integer({ min: 0, max: 2 ** 31 - 1 }), fc.array(byte, { minLength: 64, maxLength: 64 }), (w, h, withAlpha, seed, palette) => {
        let r = seed;
        const next = () => ((r = (r * 1103515245 + 12345) & 0x7fffffff), r);
        const ow = 1 + (next() % w), oh = 1 + (next() % h), left = next() % (w - ow + 1), top = next() % (h - oh + 1);
        const rgb = Buffer.from(Array.from({ length: w * h * 3 }, () => next() & 255));
        const alpha = withAlpha ? Buffer.from(Array.from({ length: w * h }, () => palette[next() % 64])) : null;
        const data = Buffer.from(Array.from({ length: ow * oh * 4 }, () => palette[next() % 64]));
        const o = { data, left, top, width: ow, height: oh };
        const wantRgb = Buffer.from(rgb), wantAlpha = alpha && Buffer.from(alpha);
        reference(wantRgb, wantAlpha, w, o);
        blendOverlay({ rgb, alpha, width: w }, o);
        expect(rgb.equals(wantRgb)).toBe(true);
        if (alpha) expect(alpha.equals(wantAlpha!)).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('rejects an overlay reaching outside the image', () => {
    const o = { data: Buffer.alloc(4 * 4 * 4), left: 7, top: 0, width: 4, height: 4 };
    expect(() => blendOverlay({ rgb: Buffer.alloc(10 * 10 * 3), alpha: null, width: 10 }, o)).toThrow(/inside the image/);
  });
});
