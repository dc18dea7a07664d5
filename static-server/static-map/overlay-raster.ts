/**
 * Overlays as pixels: the overlay SVG rasterised by librsvg (through sharp) and blended over the
 * base image in place, only over the overlay's box. Blending here costs
 * a fraction of sharp's composite, which converts and blends every pixel of the image in float.
 */
import sharp from 'sharp';
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

/** Blend `o` over an image `width` px wide in place: `rgb` premultiplied by `alpha` (null: opaque); the overlay lies inside it. */
export function blendOverlay(base: { rgb: Buffer; alpha: Buffer | null; width: number }, o: OverlayRaster): void {
  const rgb = base.rgb, alpha = base.alpha, s = o.data;
  for (let row = 0; row < o.height; row++) {
    let si = row * o.width * 4;
    let k = (o.top + row) * base.width + o.left;
    for (let i = 0; i < o.width; i++, si += 4, k++) {
      const a = s[si + 3];
      if (a === 0) continue;
      // Premultiplied "over": out = src·a + dst·(1 − a), alpha likewise.
      const keep = 255 - a, j = k * 3;
      rgb[j] = (s[si] * a + rgb[j] * keep + 127) / 255;
      rgb[j + 1] = (s[si + 1] * a + rgb[j + 1] * keep + 127) / 255;
      rgb[j + 2] = (s[si + 2] * a + rgb[j + 2] * keep + 127) / 255;
      if (alpha) alpha[k] = (a * 255 + alpha[k] * keep + 127) / 255;
    }
  }
}
