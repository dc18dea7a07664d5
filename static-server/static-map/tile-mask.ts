/**
 * The resampled alpha of a stitched region whose only transparency is missing tiles (every present
 * tile opaque), computed from the tile grid instead of resampling an alpha plane: the alpha plane is
 * a sum of rectangles (one per present tile), and a separable kernel turns each rectangle into the
 * outer product of two 1-D profiles. libvips resamples a one-band plane at nearly the cost of the RGB
 * one, so this halves the resampling of images reaching beyond the build (docs/static-map-speed.md).
 * The kernels are libvips' (lib/resample-kernel.ts): downsizing gives the bytes libvips' reduce (and the
 * native one) would give the alpha plane; upsizing rounds once per pass, so alpha is a unit or two off
 * along the edges of the data there.
 */
import { fixedTable, lanczos3Taps, linearTaps, type KernelAxis } from '../../lib/resample-kernel.ts';
import { pixelPool } from './pixel-pool.ts';

/** Which tiles of a stitched region are present: tile column k spans region columns colEdges[k] … colEdges[k+1]. */
export interface TileMask {
  colEdges: number[];
  rowEdges: number[];
  /** present[row * columns + column]. */
  present: boolean[];
}

/** The kernels compose.ts resamples with, as libvips applies them (lib/resample-kernel.ts, the native resamplers' taps too). */
const KERNELS = { lanczos3: lanczos3Taps, linear: linearTaps } as const;
export type MaskKernel = keyof typeof KERNELS;

/** 1/4096ths: lanczos3's weights in fixed point as libvips' (and the native) reduce sums them, so that the mask is its bytes exactly. */
const FIXED = 4096;

/**
 * For each interval [edges[k], edges[k+1]) the resampled indicator of that interval at every kept output
 * sample: lanczos3 in FIXED units (integers), bilinear as fractions.
 */
function profiles(edges: number[], axis: KernelAxis, kernel: MaskKernel): Float64Array[] {
  const taps = KERNELS[kernel](axis);
  const T = taps.taps, first = taps.first, index = taps.index, last = axis.n - 1;
  const out = edges.slice(1).map(() => new Float64Array(axis.m));
  // Doubles either way: one element type keeps the loop below monomorphic (3× faster than Int16Array or Float64Array).
  const table = kernel === 'lanczos3' ? Float64Array.from(fixedTable(taps)) : taps.table;
  for (let X = 0; X < axis.m; X++) {
    const row = index[X] * T;
    let k = 0;
    for (let t = 0; t < T; t++) {
      const w = table[row + t];
      if (w === 0) continue;
      const s = Math.min(last, Math.max(0, first[X] + t));
      // Taps run left to right (clamping keeps the order), so the interval only moves on.
      while (k < out.length - 1 && s >= edges[k + 1]) k++;
      out[k][X] += w;
    }
  }
  return out;
}

/** A sum of weights × bytes to a byte: lanczos3's fixed-point sums rounded as libvips' are, bilinear's fractions to nearest; clamped. */
function toByte(v: number, fixed: boolean): number {
  const b = fixed ? Math.floor((v + FIXED / 2) / FIXED) : Math.round(v);
  return b < 0 ? 0 : b > 255 ? 255 : b;
}

/** Whether row Y of every column profile equals row Y − 1. */
function sameAsAbove(vy: Uint8Array[], Y: number): boolean {
  for (let c = 0; c < vy.length; c++) if (vy[c][Y] !== vy[c][Y - 1]) return false;
  return true;
}

/**
 * The `x.m`×`y.m` alpha plane of the masked region resampled along `x` and `y`. As libvips does, the
 * vertical pass comes first and is rounded to bytes (clamping the kernel's overshoot) before the
 * horizontal one; for lanczos3 in libvips' integer arithmetic, so that the result is the bytes of the
 * region's alpha plane (255 where a tile is, 0 elsewhere) downsized by lib/resample-fast.ts or sharp.
 * Rows equal to the row above (all but a few near the edges of the data) are copied, runs of them by doubling copies.
 */
export function resampledMask(mask: TileMask, x: KernelAxis, y: KernelAxis, kernel: MaskKernel): Buffer {
  const px = profiles(mask.colEdges, x, kernel);
  const py = profiles(mask.rowEdges, y, kernel);
  const cols = px.length, fixed = kernel === 'lanczos3', W = x.m;
  // Per tile column: the vertical profile of its present tiles, in bytes.
  const vy = px.map((_, c) => {
    const v = new Float64Array(y.m);
    for (let r = 0; r < py.length; r++) {
      if (!mask.present[r * cols + c]) continue;
      const p = py[r];
      for (let Y = 0; Y < y.m; Y++) v[Y] += p[Y];
    }
    const b = new Uint8Array(y.m);
    for (let Y = 0; Y < y.m; Y++) b[Y] = toByte(v[Y] * 255, fixed);
    return b;
  });
  // Every byte is written below.
  const alpha = pixelPool.acquire(W * y.m);
  for (let Y = 0; Y < y.m; ) {
    for (let X = 0; X < W; X++) {
      let v = 0;
      for (let c = 0; c < cols; c++) v += px[c][X] * vy[c][Y];
      alpha[Y * W + X] = toByte(v, fixed);
    }
    // Rows Y + 1 … end − 1 repeat row Y.
    let end = Y + 1;
    while (end < y.m && sameAsAbove(vy, end)) end++;
    for (let done = Y + 1; done < end; ) {
      const n = Math.min(done - Y, end - done);
      alpha.copyWithin(done * W, Y * W, (Y + n) * W);
      done += n;
    }
    Y = end;
  }
  return alpha;
}
