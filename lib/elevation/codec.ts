import { deflateSync, inflateSync } from 'node:zlib';
import { BlockCompression, CodeWidth, nodataCode } from './format.ts';

/** Result of quantising one block. */
export interface EncodedBlock {
  base: number;
  width: CodeWidth;
  compression: BlockCompression;
  /** Compressed payload (empty for CodeWidth.Empty). */
  payload: Uint8Array;
}

/** zlib level used for blocks. */
export const ZLIB_LEVEL = 6;
const MAX_QUANTUM = 2 ** 31 - 1;

/** Height -> integer quantum at `precision` metres. */
export function quantum(h: number, precision: number): number {
  return Math.round(h / precision);
}

/** Integer quantum -> metres; exact division when 1/precision is an integer (0.1, 0.01, 1). */
export function dequantiser(precision: number): (q: number) => number {
  const inv = Math.round(1 / precision);
  if (Math.abs(inv * precision - 1) < 1e-12) return (q) => q / inv;
  return (q) => q * precision;
}

/**
 * Quantise and compress a block of heights (row-major, NaN = nodata).
 * Codes = quantum - base (base = smallest quantum); the nodata code is the width's maximum.
 * Codes are delta-coded (left neighbour, first column: the one above), split in byte planes
 * (all low bytes, then the next ...) and zlib-compressed.
 */
export function encodeBlock(heights: Float32Array | Float64Array, rows: number, cols: number, precision: number, where = 'block'): EncodedBlock {
  const n = rows * cols;
  const q = new Int32Array(n);
  const valid = new Uint8Array(n);
  let qmin = Infinity, qmax = -Infinity;
  for (let i = 0; i < n; i++) {
    const h = heights[i];
    if (h !== h) continue;
    const v = quantum(h, precision);
    if (Math.abs(v) > MAX_QUANTUM) throw new Error(`${where}: height ${h} m does not fit 32-bit codes at precision ${precision} m`);
    q[i] = v;
    valid[i] = 1;
    if (v < qmin) qmin = v;
    if (v > qmax) qmax = v;
  }
  if (qmin === Infinity) return { base: 0, width: CodeWidth.Empty, compression: BlockCompression.Zlib, payload: new Uint8Array(0) };
  const width = qmax - qmin < 0xffff ? CodeWidth.U16 : CodeWidth.U32;
  const nd = nodataCode(width);
  const code = (i: number) => (valid[i] ? q[i] - qmin : nd);
  const planes = new Uint8Array(n * width);
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) {
      const i = r * cols + c;
      const prev = c > 0 ? code(i - 1) : r > 0 ? code(i - cols) : 0;
      // The delta modulo 2^(8·width), as an unsigned integer.
      if (width === CodeWidth.U16) {
        const d = (code(i) - prev) & 0xffff;
        planes[i] = d & 0xff;
        planes[n + i] = d >> 8;
      } else {
        const d = (code(i) - prev) >>> 0;
        planes[i] = d & 0xff;
        planes[n + i] = (d >>> 8) & 0xff;
        planes[2 * n + i] = (d >>> 16) & 0xff;
        planes[3 * n + i] = d >>> 24;
      }
    }
  }
  return { base: qmin, width, compression: BlockCompression.Zlib, payload: deflateSync(planes, { level: ZLIB_LEVEL }) };
}

/** A decoded block: heights row-major, NaN = nodata. An empty block has `data.length === 0`. */
export interface DecodedBlock {
  rows: number;
  cols: number;
  data: Float32Array;
}

/** Decompress and dequantise a block into heights (NaN = nodata). */
export function decodeBlock(payload: Uint8Array, base: number, width: CodeWidth, rows: number, cols: number, precision: number): Float32Array {
  const n = rows * cols;
  const out = new Float32Array(n);
  if (width === CodeWidth.Empty) return out.fill(NaN);
  const planes = inflateSync(payload);
  if (planes.length !== n * width) throw new Error(`elevation block: expected ${n * width} bytes, got ${planes.length}`);
  const nd = nodataCode(width);
  const deq = dequantiser(precision);
  const codes = width === CodeWidth.U16 ? new Uint16Array(n) : new Uint32Array(n);
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) {
      const i = r * cols + c;
      const prev = c > 0 ? codes[i - 1] : r > 0 ? codes[i - cols] : 0;
      const code = width === CodeWidth.U16
        ? (prev + (planes[i] | (planes[n + i] << 8))) & 0xffff
        : (prev + ((planes[i] | (planes[n + i] << 8) | (planes[2 * n + i] << 16)) + planes[3 * n + i] * 0x1000000)) % 0x100000000;
      codes[i] = code;
      out[i] = code === nd ? NaN : deq(base + code);
    }
  }
  return out;
}
