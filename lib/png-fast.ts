/**
 * A fast PNG encoder (native: lib/native/, C with SSE2/AVX2, built by `make setup`) for images encoded
 * per request (static maps, upscaled tiles): ~2.5 ms of CPU for a 1280×960 RGBA image where sharp/libvips'
 * zlib takes ~14 at level 3, for ~39 % larger files (a little smaller than zlib level 1's). Each row gets
 * the one of PNG's Sub, Up and Paeth filters that is cheapest on a sample of the row, then a deflate
 * stream of literals and runs with Huffman codes (from a sample of the tokens) per ~512 KB block
 * (docs/static-map-speed.md). Lossless: decoding gives the input back exactly.
 */
import { existsSync } from 'node:fs';
import { packagePath, packageRequire } from './package-root.ts';

/** The addon's file, built from lib/native/ by scripts/build-native.mjs (it also resamples: lib/resample-fast.ts). */
export const PNG_ADDON = packagePath('lib', 'native', 'build', 'Release', 'tilebake_png.node');

/** Instruction sets of the native code, best last (`PngOptions.simd`). */
export const SIMD = { none: 1, sse2: 2, avx2: 3 } as const;
export type SimdLevel = keyof typeof SIMD;

export interface Addon {
  /** `src`: an image, or tiles with `grid` = cols, tileSize, left, top (lib/resample-fast.ts's TileGrid). */
  resizeLinear(src: Uint8Array | (Uint8Array | null)[], sw: number, sh: number, channels: 1 | 3, dst: Uint8Array, dw: number, dh: number, sx: number, sy: number, ox: number, oy: number, simd: number, ...grid: number[]): Promise<void>;
  resizeReduce(src: Uint8Array | (Uint8Array | null)[], sw: number, sh: number, channels: 1 | 3, dst: Uint8Array, dw: number, dh: number, xFirst: Int32Array, xIndex: Int32Array, xTable: Int16Array, xTaps: number, yFirst: Int32Array, yIndex: Int32Array, yTable: Int16Array, yTaps: number, simd: number, ...grid: number[]): Promise<void>;
  encode(pixels: Uint8Array, width: number, height: number, channels: 3 | 4, alpha: Uint8Array | null, premultiplied: boolean, async: boolean, simd: number): Buffer | Promise<Buffer>;
  /** Blend straight RGBA `overlay` (ow×oh at left, top) over premultiplied `rgb` and `alpha` in place. */
  blend(rgb: Uint8Array, alpha: Uint8Array | null, width: number, height: number, overlay: Uint8Array, left: number, top: number, ow: number, oh: number): void;
  /** Overlay operations (static-server/static-map/overlay-ops.ts) drawn into a width×height straight RGBA box. */
  rasterOverlay(width: number, height: number, ops: Float64Array): Buffer;
  simdLevel(): number;
}

let addon: Addon | undefined;

/** The addon (lib/native/), loaded on first use; a clear error when it is not built. */
export function loadNative(): Addon {
  if (!addon) {
    if (!existsSync(PNG_ADDON)) throw new Error(`tilebake: the native PNG encoder is not built (${PNG_ADDON} is missing): run \`make setup\` (it needs a C compiler)`);
    addon = packageRequire(PNG_ADDON) as Addon;
  }
  return addon;
}

/** The instruction set the encoder uses on this machine. */
export function simdLevel(): SimdLevel {
  const level = loadNative().simdLevel();
  return (Object.keys(SIMD) as SimdLevel[]).find((k) => SIMD[k] === level)!;
}

export interface PngOptions {
  /** A separate alpha plane (one byte per pixel) for 3-channel `pixels`. */
  alpha?: Uint8Array | null;
  /** Colour is premultiplied by alpha (it is divided back, rounded, as PNG stores straight alpha). */
  premultiplied?: boolean;
  /** Use at most this instruction set (default: the best the machine has); the output is the same. */
  simd?: SimdLevel;
}

function args(pixels: Uint8Array, width: number, height: number, channels: 3 | 4, opts: PngOptions, async: boolean): Parameters<Addon['encode']> {
  if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1) throw new RangeError(`encodePng: width and height must be positive integers, got ${width}×${height}`);
  if (channels !== 3 && channels !== 4) throw new RangeError(`encodePng: channels must be 3 or 4, got ${channels}`);
  if (!(pixels instanceof Uint8Array) || pixels.length !== width * height * channels) throw new RangeError(`encodePng: pixels must be a Uint8Array of ${width}×${height}×${channels} bytes`);
  const alpha = opts.alpha ?? null;
  if (alpha && (channels !== 3 || !(alpha instanceof Uint8Array) || alpha.length !== width * height)) throw new RangeError(`encodePng: an alpha plane needs 3-channel pixels and ${width}×${height} bytes`);
  if (opts.simd !== undefined && !(opts.simd in SIMD)) throw new RangeError(`encodePng: simd must be one of ${Object.keys(SIMD).join(', ')}`);
  return [pixels, width, height, channels, alpha, opts.premultiplied ?? false, async, opts.simd ? SIMD[opts.simd] : 0];
}

/**
 * Encode 8-bit pixels (rows top first, `channels` interleaved bytes per pixel; or RGB and
 * `opts.alpha`) as a PNG: RGBA for 4 channels or an alpha plane with a byte below 255, else RGB.
 * Runs on libuv's thread pool; the buffers must not change until the promise settles.
 */
export function encodePng(pixels: Uint8Array, width: number, height: number, channels: 3 | 4, opts: PngOptions = {}): Promise<Buffer> {
  try {
    return loadNative().encode(...args(pixels, width, height, channels, opts, true)) as Promise<Buffer>;
  } catch (e) {
    return Promise.reject(e);
  }
}

/** `encodePng` on the calling thread. */
export function encodePngSync(pixels: Uint8Array, width: number, height: number, channels: 3 | 4, opts: PngOptions = {}): Buffer {
  return loadNative().encode(...args(pixels, width, height, channels, opts, false)) as Buffer;
}
