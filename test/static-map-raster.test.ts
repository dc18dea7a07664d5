// Paths and unlabelled pins drawn natively (static-map/overlay-ops.ts → lib/native/src/raster.c) against
// librsvg drawing the same overlay SVG: at its size, and at 8× box-averaged (the exact area to ~1/8 px,
// the reference for coverage). Cases: the bench's random self-crossing 50-point paths with the default
// pin, sharp turns, widths 1–20 leaving the image, a translucent fill with its stroke, pins alone.
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import type { Camera } from '../static-server/static-map/camera.ts';
import { drawOverlay } from '../static-server/static-map/overlay-raster.ts';
import { overlaySvg, type OverlaySvg } from '../static-server/static-map/overlay.ts';
import { DEFAULT_STATIC_MAP_LIMITS, parseStaticMapRequest } from '../static-server/static-map/params.ts';
import { cameraFor } from '../static-server/static-map/camera.ts';
import { viewParts, views } from '../bench/static-map/sample.ts';

const F = 8;
/** Premultiplied channel k of pixel p (straight RGBA in: librsvg's). */
const pm = (b: Buffer, p: number, k: number) => (k === 3 ? b[p * 4 + 3] : (b[p * 4 + k] * b[p * 4 + 3]) / 255);
/** The native rasteriser's overlay drawn onto a clear image of the box's size: premultiplied RGB and alpha planes. */
async function native(o: OverlaySvg): Promise<{ rgb: Buffer; alpha: Buffer }> {
  const base = { rgb: Buffer.alloc(o.width * o.height * 3), alpha: Buffer.alloc(o.width * o.height), width: o.width };
  await drawOverlay(base, { ...o, left: 0, top: 0 });
  return base;
}
/** Premultiplied channel k of pixel p of those planes. */
const own = (b: { rgb: Buffer; alpha: Buffer }, p: number, k: number) => (k === 3 ? b.alpha[p] : b.rgb[p * 3 + k]);

interface Stats { max: number; mean: number; differ: number }
function stats(errs: number[]): Stats {
  let max = 0, sum = 0, differ = 0;
  for (const e of errs) (max = Math.max(max, e)), (sum += e), (differ += e > 0 ? 1 : 0);
  return { max, mean: sum / errs.length, differ: differ / errs.length };
}

/** Errors (rounded, per premultiplied channel) of native and of librsvg at 1× against librsvg at F× box-averaged, and of native against librsvg at 1×. */
async function compare(o: OverlaySvg, withArea: boolean): Promise<{ native: number[]; rsvg: number[]; vsRsvg: number[] }> {
  expect(o.ops, 'the overlay has native operations').toBeDefined();
  const mine = await native(o);
  const ref = await sharp(o.svg).ensureAlpha().raw().toBuffer();
  const out = { native: [] as number[], rsvg: [] as number[], vsRsvg: [] as number[] };
  const n = o.width * o.height;
  for (let p = 0; p < n; p++) for (let k = 0; k < 4; k++) out.vsRsvg.push(Math.round(Math.abs(own(mine, p, k) - pm(ref, p, k))));
  if (!withArea) return out;
  const big = Buffer.from(o.svg.toString().replace(/width="(\d+)" height="(\d+)"/, (_, w, h) => `width="${w * F}" height="${h * F}"`));
  const hi = await sharp(big, { limitInputPixels: false }).ensureAlpha().raw().toBuffer();
  const W = o.width * F;
  for (let y = 0; y < o.height; y++) {
    for (let x = 0; x < o.width; x++) {
      const t = [0, 0, 0, 0];
      for (let v = 0; v < F; v++) for (let u = 0; u < F; u++) for (let k = 0; k < 4; k++) t[k] += pm(hi, (y * F + v) * W + x * F + u, k);
      const p = y * o.width + x;
      for (let k = 0; k < 4; k++) {
        out.native.push(Math.round(Math.abs(own(mine, p, k) - t[k] / (F * F))));
        out.rsvg.push(Math.round(Math.abs(pm(ref, p, k) - t[k] / (F * F))));
      }
    }
  }
  return out;
}

const CAM: Camera = { cx: 0.5, cy: 0.5, zoom: 2, bearing: 0, width: 320, height: 240, scale: 2 };
/** lon,lat of world pixel (x, y) at z2, 1×. */
function pt(x: number, y: number): string {
  const lon = (x / 1024) * 360 - 180, lat = (Math.atan(Math.sinh(Math.PI * (1 - (2 * y) / 1024))) * 180) / Math.PI;
  return `${lon.toFixed(6)},${lat.toFixed(6)}`;
}
function synthetic(path: string[], marker: string[] = []): OverlaySvg {
  const req = parseStaticMapRequest(`${pt(512, 512)},2`, '160x120@2x.png', { path, marker }, DEFAULT_STATIC_MAP_LIMITS);
  return overlaySvg(CAM, req.paths, req.markers)!;
}

/**
 * Over all `overlays`: native against the area no further than `areaMax` and closer on average than
 * librsvg; native against librsvg at most `vs` (max, mean, share of channel values that differ).
 */
async function expectClose(overlays: OverlaySvg[], areaMax: number, vs: Stats): Promise<void> {
  const all = { native: [] as number[], rsvg: [] as number[], vsRsvg: [] as number[] };
  for (const o of overlays) {
    const r = await compare(o, true);
    for (const k of ['native', 'rsvg', 'vsRsvg'] as const) for (const e of r[k]) all[k].push(e);
  }
  const native = stats(all.native), rsvg = stats(all.rsvg), got = stats(all.vsRsvg);
  expect(native.mean).toBeLessThan(rsvg.mean);
  expect(native.max).toBeLessThanOrEqual(areaMax);
  expect(got.max).toBeLessThanOrEqual(vs.max);
  expect(got.mean).toBeLessThanOrEqual(vs.mean);
  expect(got.differ).toBeLessThanOrEqual(vs.differ);
}

describe('native overlay rasteriser', () => {
  it('draws the bench overlays as librsvg does, closer than librsvg to the exact area', async () => {
    const overlays = views([7.3, 43.6, 7.5, 43.8], 4).map((v) => {
      const { view, size, query } = viewParts(v);
      const req = parseStaticMapRequest(view, size, query, DEFAULT_STATIC_MAP_LIMITS);
      return overlaySvg(cameraFor(req, 18), req.paths, req.markers)!;
    });
    // Measured: against the area, native max 17 mean 0.0075, librsvg max 21 mean 0.028; native against
    // librsvg max 21 mean 0.028, 1.6 % of values differ (librsvg's AA and its seams where a stroke
    // overlaps itself, which an exact union has not).
    await expectClose(overlays, 20, { max: 24, mean: 0.035, differ: 0.02 });
  }, 60_000);

  it('sharp turns, widths 1–20 leaving the image, fills and pins', async () => {
    const cases = [
      synthetic([`stroke:%23102030|width:8|${pt(440, 450)}|${pt(590, 452)}|${pt(445, 455)}|${pt(590, 462)}|${pt(450, 560)}`].map(decodeURIComponent)),
      ...[1, 2, 7, 20].map((w) => synthetic([`stroke:%23e0245e|width:${w}|${pt(400, 430)}|${pt(600, 600)}|${pt(470, 470)}|${pt(640, 380)}|${pt(380, 560)}`].map(decodeURIComponent))),
      synthetic([`fill:%2300ff0060|stroke:%230000ffc0|width:3|${pt(450, 470)}|${pt(570, 480)}|${pt(470, 560)}|${pt(560, 540)}`].map(decodeURIComponent)),
      synthetic([], [pt(500, 520), `${pt(512, 505)}|color:#ffcc0080`, pt(590, 470)]),
    ];
    // Measured: against the area, native max 17 mean 0.0081, librsvg max 15 mean 0.040; native against
    // librsvg max 22 mean 0.046, 1.9 % of values differ.
    await expectClose(cases, 20, { max: 24, mean: 0.055, differ: 0.022 });
  }, 60_000);

  it('draws at the box\'s place in the image, over what is there, and nowhere else', async () => {
    const o = synthetic([`stroke:%230000ffc0|width:3|${pt(450, 470)}|${pt(570, 480)}|${pt(470, 560)}`].map(decodeURIComponent), [pt(500, 520)]);
    const box = await native(o);
    const W = o.width + 12, H = o.height + 9, left = 7, top = 5;
    for (const withAlpha of [false, true]) {
      let r = 7;
      const next = () => ((r = (r * 1103515245 + 12345) & 0x7fffffff), r >> 8);
      const alpha = withAlpha ? Buffer.from(Array.from({ length: W * H }, () => next() & 255)) : null;
      // Premultiplied: colour ≤ alpha.
      const rgb = Buffer.from(Array.from({ length: W * H * 3 }, (_, i) => (alpha ? Math.floor(((next() & 255) * alpha[Math.floor(i / 3)]) / 255) : next() & 255)));
      const base = { rgb: Buffer.from(rgb), alpha: alpha && Buffer.from(alpha), width: W };
      await drawOverlay(base, { ...o, left, top });
      let worst = 0;
      for (let y = 0; y < H; y++) {
        for (let x = 0; x < W; x++) {
          const k = y * W + x, inBox = x >= left && x < left + o.width && y >= top && y < top + o.height;
          const b = inBox ? (y - top) * o.width + (x - left) : -1;
          // The box drawn on a clear image, then "over" what was there (premultiplied).
          const over = (s: number, d: number) => s + (d * (255 - box.alpha[b])) / 255;
          for (let c = 0; c < 3; c++) {
            const got = base.rgb[k * 3 + c];
            if (!inBox) expect(got).toBe(rgb[k * 3 + c]);
            else worst = Math.max(worst, Math.abs(got - over(box.rgb[b * 3 + c], rgb[k * 3 + c])));
          }
          if (alpha) {
            if (!inBox) expect(base.alpha![k]).toBe(alpha[k]);
            else worst = Math.max(worst, Math.abs(base.alpha![k] - over(box.alpha[b], alpha[k])));
          }
        }
      }
      // Layers composited onto the image one by one, each rounded to 8 bits, against the box composited
      // first (the pin has three layers): measured at most 1.58 units.
      expect(worst).toBeLessThanOrEqual(2);
    }
    expect(box.alpha.some((a) => a === 255) && box.alpha.some((a) => a > 0 && a < 255)).toBe(true);
  });

  it('refuses a box reaching outside the image', async () => {
    const o = synthetic([], [pt(500, 520)]);
    const base = { rgb: Buffer.alloc(o.width * o.height * 3), alpha: null, width: o.width };
    await expect(drawOverlay(base, { ...o, left: 1, top: 0 })).rejects.toThrow(/inside the image/);
  });

  it('leaves labelled markers to librsvg', () => {
    expect(synthetic([], [`${pt(500, 520)}|label:A`]).ops).toBeUndefined();
    expect(synthetic([], [pt(500, 520)]).ops).toBeInstanceOf(Float64Array);
  });
});
