// Static map composition without HTTP (static-server/static-map/compose.ts, tile-mask.ts): images
// reaching beyond the build are resampled as RGB with the alpha of the missing tiles computed from the
// tile grid; they must match what sharp gives resampling the stitched RGBA region itself.
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import type { Camera } from '../static-server/static-map/camera.ts';
import { resizeLanczos3, resizeLinear } from '../lib/resample-fast.ts';
import { composeBase, planRegion, resampling, stitchRegion, type RasterSource } from '../static-server/static-map/compose.ts';
import type { DecodedTile } from '../static-server/static-map/decoded-tiles.ts';
import { pixelPool } from '../static-server/static-map/pixel-pool.ts';
import { resampledMask } from '../static-server/static-map/tile-mask.ts';

const T = 256;
const Z = 3;

/** Deterministic tile pixels: gradients, hard-edged stripes and noise, so kernels' differences show. */
function tilePixels(x: number, y: number, alpha: boolean): DecodedTile {
  const rgb = Buffer.alloc(T * T * 3);
  const a = alpha ? Buffer.alloc(T * T) : null;
  for (let j = 0; j < T; j++) {
    for (let i = 0; i < T; i++) {
      const k = j * T + i;
      const noise = ((k * 2654435761 + x * 97 + y * 13) >>> 24) & 63;
      const stripe = ((i >> 4) + (j >> 5)) % 2 ? 180 : 40;
      const v = [(i + x * 60) & 255, (stripe + noise) & 255, (j + y * 50) & 255];
      const av = a ? (i < 128 ? 255 : 64 + (j % 128)) : 255;
      if (a) a[k] = av;
      for (let c = 0; c < 3; c++) rgb[k * 3 + c] = Math.round((v[c] * av) / 255);
    }
  }
  return { rgb, alpha: a, size: T };
}

/** Tiles of zoom Z; `missing` and `translucent` name x/y of tiles absent or with alpha of their own. */
function source(missing: string[], translucent: string[] = []): RasterSource {
  const cache = new Map<string, DecodedTile>();
  return {
    tileSize: T,
    minzoom: 0,
    maxzoom: Z,
    tile: async (z, x, y) => {
      if (z !== Z || missing.includes(`${x}/${y}`)) return null;
      const key = `${x}/${y}`;
      if (!cache.has(key)) cache.set(key, tilePixels(x, y, translucent.includes(key)));
      return cache.get(key)!;
    },
  };
}

/** The reference: the stitched region as straight RGBA, resampled by sharp itself (which premultiplies). */
async function reference(cam: Camera, src: RasterSource, kernel: 'lanczos3' | 'linear'): Promise<Buffer> {
  const plan = planRegion(cam, src, cam.width, cam.height);
  const st = await stitchRegion(src, plan);
  const n = st.width * st.height;
  const rgba = Buffer.alloc(n * 4);
  for (let k = 0; k < n; k++) {
    const a = st.alpha ? st.alpha[k] : 255;
    for (let c = 0; c < 3; c++) rgba[k * 4 + c] = a === 0 ? 0 : Math.min(255, Math.round((st.rgb[k * 3 + c] * 255) / a));
    rgba[k * 4 + 3] = a;
  }
  const f = plan.f;
  const sw = Math.round(st.width * f), sh = Math.round(st.height * f);
  const left = Math.min(sw - plan.w, Math.max(0, Math.round((plan.sxL - plan.x0) * f)));
  const top = Math.min(sh - plan.h, Math.max(0, Math.round((plan.syT - plan.y0) * f)));
  return sharp(rgba, { raw: { width: st.width, height: st.height, channels: 4 } })
    .resize(sw, sh, { fit: 'fill', kernel })
    .extract({ left, top, width: plan.w, height: plan.h })
    .raw()
    .toBuffer();
}

/** Worst differences of the composed image from the reference: alpha, colour where opaque, colour where alpha ≥ 64. */
async function compare(cam: Camera, src: RasterSource, kernel: 'lanczos3' | 'linear'): Promise<{ alpha: number; opaque: number; edge: number; partial: number; transparent: number }> {
  const got = await composeBase(cam, src);
  const want = await reference(cam, src, kernel);
  const r = { alpha: 0, opaque: 0, edge: 0, partial: 0, transparent: 0 };
  for (let k = 0; k < cam.width * cam.height; k++) {
    const a = got.alpha ? got.alpha[k] : 255;
    r.alpha = Math.max(r.alpha, Math.abs(a - want[k * 4 + 3]));
    if (a === 0) r.transparent++;
    else if (a < 255) r.partial++;
    if (a < 64) continue;
    for (let c = 0; c < 3; c++) {
      const v = Math.min(255, Math.round((got.rgb[k * 3 + c] * 255) / a));
      const d = Math.abs(v - want[k * 4 + c]);
      if (a === 255 && want[k * 4 + 3] === 255) r.opaque = Math.max(r.opaque, d);
      else r.edge = Math.max(r.edge, d);
    }
  }
  return r;
}

/** A camera over world pixel (x, y) of zoom Z at zoom `zoom`. */
function camera(x: number, y: number, zoom: number, width = 300, height = 200): Camera {
  const world = T * 2 ** Z;
  return { cx: x / world, cy: y / world, zoom, bearing: 0, width, height, scale: 1 };
}

describe('images reaching beyond the build', () => {
  // Tiles 3/4 and 4/3 missing: the views below straddle their edges and the corner between them.
  const src = source(['4/3', '3/4', '4/4']);
  for (const zoom of [2.3, 2.76, 2.95, 3.4, 4.2, 5.1]) {
    it(`zoom ${zoom}: alpha from the tile grid matches sharp's RGBA resampling`, async () => {
      const r = await compare(camera(1024 + 7.3, 1024 - 3.1, zoom), src, zoom < Z ? 'lanczos3' : 'linear');
      expect(r.transparent).toBeGreaterThan(1000);
      expect(r.partial).toBeGreaterThan(0);
      expect(r.alpha).toBeLessThanOrEqual(3);
      expect(r.opaque).toBeLessThanOrEqual(1);
      expect(r.edge).toBeLessThanOrEqual(8);
    });
  }

  // Down: libvips' reduce's bytes too; up (bilinear): the native resampler's, libvips' within a unit.
  for (const zoom of [2.05, 2.3, 2.76, 2.95, 3.4, 4.2, 5.1]) {
    const kernel = zoom < Z ? 'lanczos3' : 'linear';
    it(`zoom ${zoom}: the ${kernel} tile mask is the region's alpha plane resampled natively, byte for byte`, async () => {
      const cam = camera(1024 + 7.3, 1024 - 3.1, zoom, 333, 211);
      const plan = planRegion(cam, src, cam.width, cam.height);
      const region = await stitchRegion(src, plan);
      const { x, y } = resampling(region, plan);
      const want = Buffer.alloc(x.m * y.m);
      await (kernel === 'linear' ? resizeLinear : resizeLanczos3)(region.alpha!, region.width, region.height, 1, want, x.m, y.m, x, y);
      const got = resampledMask(region.mask, x, y, kernel);
      expect(got.equals(want)).toBe(true);
      expect(want.includes(0) && want.some((a) => a > 0 && a < 255)).toBe(true);
    });
  }

  it('the world\'s top edge is transparent above it', async () => {
    const r = await compare(camera(300, 20, 2.6), source([]), 'lanczos3');
    expect(r.transparent).toBeGreaterThan(300 * 20);
    expect(r.alpha).toBeLessThanOrEqual(3);
    expect(r.opaque).toBeLessThanOrEqual(1);
  });

  // Resampled natively both ways (lib/resample-fast.ts): the alpha plane like the colour.
  for (const [zoom, kernel] of [[2.7, 'lanczos3'], [3.6, 'linear']] as const) {
    it(`tiles with alpha of their own are resampled with their alpha plane (zoom ${zoom}, ${kernel})`, async () => {
      const r = await compare(camera(1024 + 100, 1024 - 50, zoom), source(['4/4'], ['3/3', '4/3']), kernel);
      expect(r.partial).toBeGreaterThan(10_000);
      expect(r.alpha).toBeLessThanOrEqual(3);
      expect(r.opaque).toBeLessThanOrEqual(1);
      // Colours of translucent pixels come back through premultiplication: a few units off where alpha is low.
      expect(r.edge).toBeLessThanOrEqual(12);
    });
  }

  it('a region stitched into reused pool buffers is 0 where tiles are missing and the tiles\' pixels elsewhere', async () => {
    const src = source(['4/4']);
    // At the tile grid at zoom Z: the region is the image, 2x2 tiles from 3/3.
    const plan = planRegion(camera(1024, 1024, Z, 2 * T, 2 * T), src, 2 * T, 2 * T);
    expect(plan.exact).toBe(true);
    // Dirty buffers of the sizes the region takes go back to the pool first.
    const dirty = [pixelPool.acquire(4 * T * T * 3).fill(0xab), pixelPool.acquire(4 * T * T).fill(0xab)];
    for (const b of dirty) pixelPool.release(b);
    const st = await stitchRegion(src, plan);
    expect(st.rgb.buffer === dirty[0].buffer || st.alpha!.buffer === dirty[1].buffer).toBe(true);
    const t33 = (await src.tile(Z, 3, 3))!;
    for (let row = 0; row < 2 * T; row += 17) {
      for (let col = 0; col < 2 * T; col += 13) {
        const k = row * 2 * T + col;
        const missing = row >= T && col >= T;
        expect(st.alpha![k]).toBe(missing ? 0 : 255);
        if (missing) expect([st.rgb[k * 3], st.rgb[k * 3 + 1], st.rgb[k * 3 + 2]]).toEqual([0, 0, 0]);
        if (row < T && col < T) expect(st.rgb.subarray(k * 3, k * 3 + 3)).toEqual(t33.rgb.subarray((row * T + col) * 3, (row * T + col) * 3 + 3));
      }
    }
  });

  it('a rotated view keeps the missing tiles transparent and the rest opaque', async () => {
    const cam = { ...camera(1024, 1024, 2.5, 200, 200), bearing: 45 };
    const img = await composeBase(cam, source(['4/4']));
    expect(img.alpha).not.toBeNull();
    // Bearing 45: north-east is up, so the missing south-east tile 4/4 is right of the centre, tile 3/3 left.
    expect(img.alpha![100 * 200 + 140]).toBe(0);
    expect(img.alpha![100 * 200 + 60]).toBe(255);
    expect(img.alpha![60 * 200 + 100]).toBe(255);
  });
});
