/**
 * A fast PNG encoder (native: lib/native/ through lib/native.ts, C with SSE2/AVX2) for images encoded
 * per request (static maps, upscaled tiles): ~5 ms for a 1280×960 RGBA image where sharp/libvips'
 * zlib takes ~15 at level 3, for ~35 % larger files (about zlib level 1's size). Each row gets the
 * best of PNG's Sub, Up and Paeth filters, then a deflate stream of literals and runs with Huffman
 * codes per ~256 KB block (docs/static-map-speed.md). Lossless: decoding gives the input back exactly.
 */
import { loadNative, SIMD, type Addon, type SimdLevel } from './native.ts';

export interface PngOptions {
  /** A separate alpha plane (one byte per pixel) for 3-channel `pixels`. */
  alpha?: Uint8Array | null;
  /** Colour is premultiplied by alpha (it is divided back, rounded, as PNG stores straight alpha). */
  premultiplied?: boolean;
  /** Use at most this instruction set (default: the best the machine has); the output is the same. */
  simd?: SimdLevel;
  /**
   * Where the PNG goes: called with its size once encoded, returns a buffer of exactly that many bytes
   * (e.g. from a pool, so that a server encoding many images allocates no new memory each time);
   * default: a new Buffer. What it throws rejects the encoding.
   */
  allocate?: (bytes: number) => Buffer;
}

function args(pixels: Uint8Array, width: number, height: number, channels: 3 | 4, opts: PngOptions, async: boolean): Parameters<Addon['encode']> {
  if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1) throw new RangeError(`encodePng: width and height must be positive integers, got ${width}×${height}`);
  if (channels !== 3 && channels !== 4) throw new RangeError(`encodePng: channels must be 3 or 4, got ${channels}`);
  if (!(pixels instanceof Uint8Array) || pixels.length !== width * height * channels) throw new RangeError(`encodePng: pixels must be a Uint8Array of ${width}×${height}×${channels} bytes`);
  const alpha = opts.alpha ?? null;
  if (alpha && (channels !== 3 || !(alpha instanceof Uint8Array) || alpha.length !== width * height)) throw new RangeError(`encodePng: an alpha plane needs 3-channel pixels and ${width}×${height} bytes`);
  if (opts.simd !== undefined && !(opts.simd in SIMD)) throw new RangeError(`encodePng: simd must be one of ${Object.keys(SIMD).join(', ')}`);
  if (opts.allocate !== undefined && typeof opts.allocate !== 'function') throw new TypeError('encodePng: allocate must be a function');
  return [pixels, width, height, channels, alpha, opts.premultiplied ?? false, async, opts.simd ? SIMD[opts.simd] : 0, opts.allocate];
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
