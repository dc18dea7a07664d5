/**
 * Bilinear resampling in native code (lib/native/src/resample.c, the PNG encoder's addon), for static
 * maps above the baked zooms: the same pixels as sharp/libvips' bilinear upsizing within 1 unit, in
 * about a fifth of its time (separable, each vertical blend computed once; docs/static-map-speed.md).
 */
import { loadNative } from './png-fast.ts';

/** One axis of a resampling: output sample X reads source (X + offset) / scale − ½ (libvips' upsizing; scale 1: a shift). */
export interface ResampleAxis {
  scale: number;
  offset: number;
}

/**
 * Resample `src` (`width`×`height`, 1 or 3 bytes per pixel) bilinearly into `dst` (`dstWidth`×`dstHeight`),
 * edge pixels repeated, on libuv's thread pool; neither buffer may change until the promise settles.
 */
export function resizeLinear(src: Uint8Array, width: number, height: number, channels: 1 | 3, dst: Uint8Array, dstWidth: number, dstHeight: number, x: ResampleAxis, y: ResampleAxis): Promise<void> {
  if (src.length !== width * height * channels || dst.length !== dstWidth * dstHeight * channels || !(x.scale > 0) || !(y.scale > 0)) {
    return Promise.reject(new RangeError(`resizeLinear: ${src.length} bytes for ${width}×${height}×${channels}, ${dst.length} for ${dstWidth}×${dstHeight}, scales ${x.scale}, ${y.scale}`));
  }
  return loadNative().resizeLinear(src, width, height, channels, dst, dstWidth, dstHeight, x.scale, y.scale, x.offset, y.offset);
}
