/**
 * Overlays as pixels, over the base image in place: paths and unlabelled pins drawn natively
 * (lib/native/src/raster.c) straight onto the image's planes; an overlay with a label (text) rasterised
 * by librsvg through sharp and blended natively (lib/native/src/blend.c), only over the overlay's box —
 * a fraction of sharp's composite, which converts and blends every pixel of the image in float.
 */
import sharp from 'sharp';
import { loadNative } from '../../lib/native.ts';
import type { OverlaySvg } from './overlay.ts';

/** The base image: RGB premultiplied by `alpha` (null: opaque), `width` px wide. */
export interface OverlayBase {
  rgb: Buffer;
  alpha: Buffer | null;
  width: number;
}

/** Straight RGBA pixels to blend at (left, top) of the image. */
export interface OverlayRaster {
  data: Buffer;
  left: number;
  top: number;
  width: number;
  height: number;
}

/** The overlay's SVG rasterised by librsvg at its own size (one SVG pixel per image pixel). */
export async function rasteriseSvg(o: OverlaySvg): Promise<OverlayRaster> {
  const { data, info } = await sharp(o.svg).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  if (info.width !== o.width || info.height !== o.height || info.channels !== 4) {
    throw new Error(`overlay rasterised to ${info.width}x${info.height}x${info.channels}, expected ${o.width}x${o.height}x4`);
  }
  return { data, left: o.left, top: o.top, width: o.width, height: o.height };
}

/**
 * Blend `o` over the image in place; the overlay lies inside it. Premultiplied "over" (out = src·a +
 * dst·(1 − a), alpha likewise), natively (~0.1 ms for the bench's boxes, 0.6 in a JavaScript loop).
 */
export function blendOverlay(base: OverlayBase, o: OverlayRaster): void {
  loadNative().blend(base.rgb, base.alpha, base.width, base.rgb.length / 3 / base.width, o.data, o.left, o.top, o.width, o.height);
}

/** Draw overlay `o` onto `base` in place: natively when it has operations, else through librsvg. */
export async function drawOverlay(base: OverlayBase, o: OverlaySvg): Promise<void> {
  if (o.ops) loadNative().drawOverlay(base.rgb, base.alpha, base.width, base.rgb.length / 3 / base.width, o.ops, o.left, o.top, o.width, o.height);
  else blendOverlay(base, await rasteriseSvg(o));
}
