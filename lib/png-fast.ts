/**
 * A fast PNG encoder (native: lib/native/ through lib/native.ts, C with SSE2/AVX2) for images encoded
 * per request (static maps, upscaled tiles): ~2.5 ms of CPU for a 1280×960 RGBA image where sharp/libvips'
 * zlib takes ~14 at level 3, for ~39 % larger files (a little smaller than zlib level 1's). Each row gets
 * the one of PNG's Sub, Up and Paeth filters that is cheapest on a sample of the row, then a deflate
 * stream of literals and runs with Huffman codes (from a sample of the tokens) per ~512 KB block
 * (docs/static-map-speed.md). Lossless: decoding gives the input back exactly.
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

/** The PNG signature, and where encodePng's files keep their checksums. */
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
/** IHDR's CRC-32 ends the 25-byte chunk after the signature. */
const IHDR_CRC_AT = 8 + 25 - 4;

/**
 * A 16-byte digest of a PNG from encodePng read from the file itself: the CRC-32s of its IHDR and
 * IDAT chunks (every compressed byte), the Adler-32 of its pixel rows and its length. A strong
 * HTTP validator at no cost, where hashing a 470 KB static map with SHA-256 was 3 % of the server's
 * CPU (docs/static-map-speed.md). Throws for a file not laid out as encodePng writes it (one IDAT).
 */
export function pngDigest(png: Buffer): Buffer {
  const n = png.length;
  const ok = n >= 8 + 25 + 12 + 12 + 6 && png.subarray(0, 8).equals(PNG_SIGNATURE) && png.toString('latin1', 12, 16) === 'IHDR' &&
    png.toString('latin1', 37, 41) === 'IDAT' && png.readUInt32BE(33) === n - 8 - 25 - 12 - 12 && png.toString('latin1', n - 8, n - 4) === 'IEND';
  if (!ok) throw new Error('pngDigest: not a PNG written by encodePng (signature, IHDR, one IDAT, IEND)');
  const d = Buffer.allocUnsafe(16);
  png.copy(d, 0, IHDR_CRC_AT, IHDR_CRC_AT + 4);
  png.copy(d, 4, n - 16, n - 12); // IDAT's CRC-32
  png.copy(d, 8, n - 20, n - 16); // zlib's Adler-32 of the rows, ending IDAT's data
  d.writeUInt32BE(n, 12);
  return d;
}
