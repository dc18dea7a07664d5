/**
 * Overlays as pixels: paths and unlabelled pins drawn natively (lib/native/src/raster.c) into a pooled
 * box, premultiplied; an overlay with a label (text) by librsvg through sharp, straight. Either is
 * blended over the base image in place (natively), only over the overlay's box: a fraction of sharp's
 * composite, which converts and blends every pixel of the image in float.
 */
import sharp from 'sharp';
import { loadNative } from '../../lib/png-fast.ts';
import type { OverlaySvg } from './overlay.ts';
import { pixelPool } from './pixel-pool.ts';

/** RGBA pixels to draw at (left, top) of the image. */
export interface OverlayRaster {
  data: Buffer;
  /** Colour premultiplied by alpha (the native rasteriser's box), else straight (librsvg's). */
  premultiplied: boolean;
  left: number;
  top: number;
  width: number;
  height: number;
}

/**
 * Rasterise the overlay at its own size (one SVG pixel per image pixel): natively when it has
 * operations, into a buffer of the pixel pool (hand it back with `releaseOverlay`), else the SVG by librsvg.
 */
export async function rasteriseOverlay(o: OverlaySvg): Promise<OverlayRaster> {
  const box = { left: o.left, top: o.top, width: o.width, height: o.height };
  if (o.ops) return { data: loadNative().rasterOverlay(o.width, o.height, o.ops, pixelPool.acquire(o.width * o.height * 4)), premultiplied: true, ...box };
  const { data, info } = await sharp(o.svg).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  if (info.width !== o.width || info.height !== o.height || info.channels !== 4) {
    throw new Error(`overlay rasterised to ${info.width}x${info.height}x${info.channels}, expected ${o.width}x${o.height}x4`);
  }
  return { data, premultiplied: false, ...box };
}

/** Hand a rasterised overlay's pixels back to the pixel pool (nothing may read them afterwards). */
export function releaseOverlay(o: OverlayRaster): void {
  pixelPool.release(o.data);
}

/**
 * Blend `o` over an image `width` px wide in place: `rgb` premultiplied by `alpha` (null: opaque); the
 * overlay lies inside it. Premultiplied "over" (out = src·a + dst·(1 − a), alpha likewise), natively
 * (lib/native/src/blend.c: ~0.1 ms for the bench's boxes, 0.6 in a JavaScript loop).
 */
export function blendOverlay(base: { rgb: Buffer; alpha: Buffer | null; width: number }, o: OverlayRaster): void {
  loadNative().blend(base.rgb, base.alpha, base.width, base.rgb.length / 3 / base.width, o.data, o.left, o.top, o.width, o.height, o.premultiplied);
}

/** Rasterise `o`, blend it over `base` and hand the overlay's pixels back to the pool. */
export async function drawOverlay(base: { rgb: Buffer; alpha: Buffer | null; width: number }, o: OverlaySvg): Promise<void> {
  const raster = await rasteriseOverlay(o);
  try {
    blendOverlay(base, raster);
  } finally {
    releaseOverlay(raster);
  }
}
