/**
 * Resampling in native code (lib/native/src/resample.c and reduce.c, the PNG encoder's addon) for static
 * maps: bilinear above the baked zooms and lanczos3 between them, the same pixels as sharp/libvips
 * within a unit or two in a fraction of its time (separable, SIMD; docs/static-map-speed.md).
 */
import { SIMD, loadNative, type SimdLevel } from './png-fast.ts';
import { fixedTable, lanczos3Taps } from './resample-kernel.ts';

/** One axis of a resampling: output sample X reads source (X + offset) / scale − ½ (libvips' upsizing; scale 1: a shift). */
export interface ResampleAxis {
  scale: number;
  offset: number;
}

function checkSizes(name: string, src: Uint8Array, width: number, height: number, channels: number, dst: Uint8Array, dstWidth: number, dstHeight: number, x: ResampleAxis, y: ResampleAxis): RangeError | null {
  if (src.length === width * height * channels && dst.length === dstWidth * dstHeight * channels && x.scale > 0 && y.scale > 0) return null;
  return new RangeError(`${name}: ${src.length} bytes for ${width}×${height}×${channels}, ${dst.length} for ${dstWidth}×${dstHeight}, scales ${x.scale}, ${y.scale}`);
}

/**
 * Resample `src` (`width`×`height`, 1 or 3 bytes per pixel) bilinearly into `dst` (`dstWidth`×`dstHeight`),
 * edge pixels repeated, on libuv's thread pool; neither buffer may change until the promise settles.
 * `simd` caps the instruction set (the bytes are the same).
 */
export function resizeLinear(src: Uint8Array, width: number, height: number, channels: 1 | 3, dst: Uint8Array, dstWidth: number, dstHeight: number, x: ResampleAxis, y: ResampleAxis, simd?: SimdLevel): Promise<void> {
  const bad = checkSizes('resizeLinear', src, width, height, channels, dst, dstWidth, dstHeight, x, y);
  if (bad) return Promise.reject(bad);
  return loadNative().resizeLinear(src, width, height, channels, dst, dstWidth, dstHeight, x.scale, y.scale, x.offset, y.offset, simd ? SIMD[simd] : 0);
}

/**
 * Downsize `src` (`width`×`height`, 1 or 3 bytes per pixel) into `dst` (`dstWidth`×`dstHeight`) with
 * lanczos3 as libvips' reduce does (output X centred on source (X + offset + ½)/scale − ½, scales in
 * (0, 1]; vertical pass first, rounded to bytes), edge pixels repeated, on libuv's thread pool; neither
 * buffer may change until the promise settles. `simd` caps the instruction set (the bytes are the same).
 */
export function resizeLanczos3(src: Uint8Array, width: number, height: number, channels: 1 | 3, dst: Uint8Array, dstWidth: number, dstHeight: number, x: ResampleAxis, y: ResampleAxis, simd?: SimdLevel): Promise<void> {
  const bad = checkSizes('resizeLanczos3', src, width, height, channels, dst, dstWidth, dstHeight, x, y) ?? (x.scale > 1 || y.scale > 1 ? new RangeError(`resizeLanczos3: scales must be at most 1, got ${x.scale}, ${y.scale}`) : null);
  if (bad) return Promise.reject(bad);
  const tx = lanczos3Taps({ n: width, scale: x.scale, offset: x.offset, m: dstWidth });
  const ty = lanczos3Taps({ n: height, scale: y.scale, offset: y.offset, m: dstHeight });
  return loadNative().resizeReduce(src, width, height, channels, dst, dstWidth, dstHeight, tx.first, tx.index, fixedTable(tx), tx.taps, ty.first, ty.index, fixedTable(ty), ty.taps, simd ? SIMD[simd] : 0);
}
