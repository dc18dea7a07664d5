/**
 * Resampling in native code (lib/native/src/resample.c and reduce.c, the PNG encoder's addon) for static
 * maps: bilinear above the baked zooms and lanczos3 between them, the same pixels as sharp/libvips
 * within a unit or two in a fraction of its time (separable, SIMD; docs/static-map-speed.md).
 */
import { SIMD, loadNative, type SimdLevel } from './native.ts';
import { fixedTable, lanczos3Taps, linearTaps, TapArrays, type AxisTaps } from './resample-kernel.ts';

/** One axis of a resampling: output sample X reads source (X + offset) / scale − ½ (libvips' upsizing; scale 1: a shift). */
export interface ResampleAxis {
  scale: number;
  offset: number;
}

/**
 * Source pixels read in place from a grid of square tiles (row-major, `cols` a row, tileSize² pixels of
 * the resampling's channels each; null where there is no tile: zeros): the source is the grid's pixels
 * from (left, top) on. Static maps resample the decoded tiles under a view so, without stitching a copy.
 */
export interface TileGrid {
  tiles: (Uint8Array | null)[];
  cols: number;
  tileSize: number;
  left: number;
  top: number;
}

/** The addon's arguments for a source: the image or the tiles, and the grid's (none for an image). */
function source(src: Uint8Array | TileGrid): [Uint8Array | (Uint8Array | null)[], number[]] {
  return src instanceof Uint8Array ? [src, []] : [src.tiles, [src.cols, src.tileSize, src.left, src.top]];
}

/** The addon's promise, or its synchronous error (a grid outside its tiles) as a rejection. */
function settle(call: () => Promise<void>): Promise<void> {
  try {
    return call();
  } catch (e) {
    return Promise.reject(e);
  }
}

function checkSizes(name: string, src: Uint8Array | TileGrid, width: number, height: number, channels: number, dst: Uint8Array, dstWidth: number, dstHeight: number, x: ResampleAxis, y: ResampleAxis): RangeError | null {
  const srcOk = src instanceof Uint8Array ? src.length === width * height * channels : src.tiles.every((t) => t === null || t.length === src.tileSize * src.tileSize * channels);
  if (srcOk && dst.length === dstWidth * dstHeight * channels && x.scale > 0 && y.scale > 0) return null;
  return new RangeError(`${name}: ${src instanceof Uint8Array ? src.length : 'tiles of other'} bytes for ${width}×${height}×${channels}, ${dst.length} for ${dstWidth}×${dstHeight}, scales ${x.scale}, ${y.scale}`);
}

/** One axis' taps as the addon takes them: first source samples, table rows per output sample, 12-bit weights, taps per sample. */
function axisArgs(t: AxisTaps, into?: TapArrays): [Int32Array, Int32Array, Int16Array, number] {
  return [t.first, t.index, fixedTable(t, into), t.taps];
}

/**
 * Bilinear taps' arrays, one set per axis, reused by every call: the addon copies the taps when called.
 * (Allocating them per image cost ~0.03 ms and some GC: docs/static-map-speed.md.)
 */
const linearArrays = [new TapArrays(), new TapArrays()] as const;

/**
 * Resample `src` (`width`×`height`, 1 or 3 bytes per pixel; or read from tiles) bilinearly into `dst` (`dstWidth`×`dstHeight`),
 * edge pixels repeated, on libuv's thread pool; neither buffer may change until the promise settles.
 * The sample positions and weights are `linearTaps`' (the tile mask's too). `simd` caps the instruction set (the bytes are the same).
 */
export function resizeLinear(src: Uint8Array | TileGrid, width: number, height: number, channels: 1 | 3, dst: Uint8Array, dstWidth: number, dstHeight: number, x: ResampleAxis, y: ResampleAxis, simd?: SimdLevel): Promise<void> {
  const bad = checkSizes('resizeLinear', src, width, height, channels, dst, dstWidth, dstHeight, x, y);
  if (bad) return Promise.reject(bad);
  const [pixels, grid] = source(src);
  const [ax, ay] = linearArrays;
  const tx = linearTaps({ n: width, scale: x.scale, offset: x.offset, m: dstWidth }, ax);
  const ty = linearTaps({ n: height, scale: y.scale, offset: y.offset, m: dstHeight }, ay);
  return settle(() => loadNative().resizeLinear(pixels, width, height, channels, dst, dstWidth, dstHeight, ...axisArgs(tx, ax), ...axisArgs(ty, ay), simd ? SIMD[simd] : 0, ...grid));
}

/**
 * Downsize `src` (`width`×`height`, 1 or 3 bytes per pixel; or read from tiles) into `dst` (`dstWidth`×`dstHeight`) with
 * lanczos3 as libvips' reduce does (output X centred on source (X + offset + ½)/scale − ½, scales in
 * (0, 1]; vertical pass first, rounded to bytes), edge pixels repeated, on libuv's thread pool; neither
 * buffer may change until the promise settles. `simd` caps the instruction set (the bytes are the same).
 */
export function resizeLanczos3(src: Uint8Array | TileGrid, width: number, height: number, channels: 1 | 3, dst: Uint8Array, dstWidth: number, dstHeight: number, x: ResampleAxis, y: ResampleAxis, simd?: SimdLevel): Promise<void> {
  const bad = checkSizes('resizeLanczos3', src, width, height, channels, dst, dstWidth, dstHeight, x, y) ?? (x.scale > 1 || y.scale > 1 ? new RangeError(`resizeLanczos3: scales must be at most 1, got ${x.scale}, ${y.scale}`) : null);
  if (bad) return Promise.reject(bad);
  const tx = lanczos3Taps({ n: width, scale: x.scale, offset: x.offset, m: dstWidth });
  const ty = lanczos3Taps({ n: height, scale: y.scale, offset: y.offset, m: dstHeight });
  const [pixels, grid] = source(src);
  return settle(() => loadNative().resizeReduce(pixels, width, height, channels, dst, dstWidth, dstHeight, ...axisArgs(tx), ...axisArgs(ty), simd ? SIMD[simd] : 0, ...grid));
}
