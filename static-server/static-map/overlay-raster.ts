/**
 * Overlays as pixels: the overlay SVG rasterised by librsvg (through sharp) and blended over the
 * base image in place, only over the overlay's box (straight alpha). Blending here costs
 * a fraction of sharp's composite, which converts and blends every pixel of the image in float.
 */
import sharp from 'sharp';
import type { RawImage } from './compose.ts';
import type { OverlaySvg } from './overlay.ts';

/** RGBA pixels (straight alpha) to draw at (left, top) of the image. */
export interface OverlayRaster {
  data: Buffer;
  left: number;
  top: number;
  width: number;
  height: number;
}

/** Rasterise the overlay SVG at its own size (one SVG pixel per image pixel). */
export async function rasteriseOverlay(o: OverlaySvg): Promise<OverlayRaster> {
  const { data, info } = await sharp(o.svg).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  if (info.width !== o.width || info.height !== o.height || info.channels !== 4) {
    throw new Error(`overlay rasterised to ${info.width}x${info.height}x${info.channels}, expected ${o.width}x${o.height}x4`);
  }
  return { data, left: o.left, top: o.top, width: o.width, height: o.height };
}

/** Blend `o` over `base` in place ("over", straight alpha; the overlay lies inside the base). */
export function blendOverlay(base: RawImage, o: OverlayRaster): void {
  const b = base.data, s = o.data, bc = base.channels;
  for (let row = 0; row < o.height; row++) {
    let si = row * o.width * 4;
    let bi = ((o.top + row) * base.width + o.left) * bc;
    for (let i = 0; i < o.width; i++, si += 4, bi += bc) {
      const a = s[si + 3];
      if (a === 0) continue;
      if (bc === 3 || b[bi + 3] === 255) {
        // Opaque below: out = src·a + dst·(1 − a), rounded.
        const keep = 255 - a;
        b[bi] = (s[si] * a + b[bi] * keep + 127) / 255;
        b[bi + 1] = (s[si + 1] * a + b[bi + 1] * keep + 127) / 255;
        b[bi + 2] = (s[si + 2] * a + b[bi + 2] * keep + 127) / 255;
        continue;
      }
      // Translucent below: outA = a + dA·(1 − a); outC = (src·a + dst·dA·(1 − a)) / outA.
      const da = (b[bi + 3] * (255 - a)) / 255;
      const oa = a + da;
      b[bi] = (s[si] * a + b[bi] * da) / oa + 0.5;
      b[bi + 1] = (s[si + 1] * a + b[bi + 1] * da) / oa + 0.5;
      b[bi + 2] = (s[si + 2] * a + b[bi + 2] * da) / oa + 0.5;
      b[bi + 3] = oa + 0.5;
    }
  }
}
