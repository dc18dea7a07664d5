/**
 * Overlays as pixels: the overlay SVG rasterised by librsvg (through sharp) and blended over the
 * base image in place (natively), only over the overlay's box. Blending here costs
 * a fraction of sharp's composite, which converts and blends every pixel of the image in float.
 */
import sharp from 'sharp';
import { loadNative } from '../../lib/png-fast.ts';
import type { OverlaySvg } from './overlay.ts';

/** RGBA pixels (straight alpha) to draw at (left, top) of the image. */
export interface OverlayRaster {
  data: Buffer;
  left: number;
  top: number;
  width: number;
  height: number;
}

/** Rasterise the overlay at its own size (one SVG pixel per image pixel): natively when it has operations (lib/native/src/raster.c), else the SVG by librsvg. */
export async function rasteriseOverlay(o: OverlaySvg): Promise<OverlayRaster> {
  if (o.ops) return { data: loadNative().rasterOverlay(o.width, o.height, o.ops), left: o.left, top: o.top, width: o.width, height: o.height };
  const { data, info } = await sharp(o.svg).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  if (info.width !== o.width || info.height !== o.height || info.channels !== 4) {
    throw new Error(`overlay rasterised to ${info.width}x${info.height}x${info.channels}, expected ${o.width}x${o.height}x4`);
  }
  return { data, left: o.left, top: o.top, width: o.width, height: o.height };
}

/**
 * Blend `o` over an image `width` px wide in place: `rgb` premultiplied by `alpha` (null: opaque); the
 * overlay lies inside it. Premultiplied "over" (out = src·a + dst·(1 − a), alpha likewise), natively
 * (lib/native/src/blend.c: ~0.1 ms for the bench's boxes, 0.6 in a JavaScript loop).
 */
export function blendOverlay(base: { rgb: Buffer; alpha: Buffer | null; width: number }, o: OverlayRaster): void {
  loadNative().blend(base.rgb, base.alpha, base.width, base.rgb.length / 3 / base.width, o.data, o.left, o.top, o.width, o.height);
}
