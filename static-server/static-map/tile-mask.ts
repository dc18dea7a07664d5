/**
 * The resampled alpha of a stitched region whose only transparency is missing tiles (every present
 * tile opaque), computed from the tile grid instead of resampling an alpha plane: the alpha plane is
 * a sum of rectangles (one per present tile), and a separable kernel turns each rectangle into the
 * outer product of two 1-D profiles. libvips resamples a one-band plane at nearly the cost of the RGB
 * one, so this halves the resampling of images reaching beyond the build (docs/static-map-speed.md).
 * The kernels are libvips' (lib/resample-kernel.ts), as taps that the native resamplers
 * (lib/resample-fast.ts) take too: the mask reads the source samples the RGB reads, with the same
 * fixed-point weights and roundings, so it is the bytes those resamplers give the alpha plane (for
 * lanczos3 downsizing libvips' reduce's too; bilinear upsizing is libvips' within a unit).
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

/** 1/4096ths: the weights in fixed point as the native resamplers (and libvips' reduce) sum them, so that the mask is their bytes exactly. */
const FIXED = 4096;

/**
 * What each pass's sums are divided by (rounded to nearest, clamped) as the native resamplers do (0:
 * kept whole): lanczos3 (reduce.c) rounds the vertical pass to bytes and then the horizontal one;
 * bilinear (resample.c) keeps the vertical sums whole and rounds once, at the end.
 */
const DIVISORS: Record<MaskKernel, { vertical: number; horizontal: number }> = {
  lanczos3: { vertical: FIXED, horizontal: FIXED },
  linear: { vertical: 0, horizontal: FIXED * FIXED },
};

/** For each interval [edges[k], edges[k+1]) the resampled indicator of that interval at every kept output sample, in FIXED units (integers). */
function profiles(edges: number[], axis: KernelAxis, kernel: MaskKernel): Float64Array[] {
  const taps = KERNELS[kernel](axis);
  const T = taps.taps, first = taps.first, index = taps.index, last = axis.n - 1;
  const out = edges.slice(1).map(() => new Float64Array(axis.m));
  // Doubles: one element type keeps the loops monomorphic (3× faster than Int16Array or Float64Array).
  const table = Float64Array.from(fixedTable(taps));
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

/** A fixed-point sum divided by `d`, rounded to nearest (½ up) and clamped to a byte. */
function toByte(v: number, d: number): number {
  const b = Math.floor((v + d / 2) / d);
  return b < 0 ? 0 : b > 255 ? 255 : b;
}

/** Whether row Y of every column profile equals row Y − 1. */
function sameAsAbove(vy: Float64Array[], Y: number): boolean {
  for (let c = 0; c < vy.length; c++) if (vy[c][Y] !== vy[c][Y - 1]) return false;
  return true;
}

/**
 * The `x.m`×`y.m` alpha plane of the masked region resampled along `x` and `y`: the bytes of the
 * region's alpha plane (255 where a tile is, 0 elsewhere) resampled by lib/resample-fast.ts. The
 * vertical pass comes first, in the native resamplers' integer arithmetic (DIVISORS); lanczos3 clamps
 * its overshoot to bytes there, as libvips' reduce does.
 * Rows equal to the row above (all but a few near the edges of the data) are copied, runs of them by doubling copies.
 */
export function resampledMask(mask: TileMask, x: KernelAxis, y: KernelAxis, kernel: MaskKernel): Buffer {
  const px = profiles(mask.colEdges, x, kernel);
  const py = profiles(mask.rowEdges, y, kernel);
  const cols = px.length, div = DIVISORS[kernel], W = x.m;
  // Per tile column: the vertical profile of its present tiles, as the horizontal pass reads it.
  const vy = px.map((_, c) => {
    const v = new Float64Array(y.m);
    for (let r = 0; r < py.length; r++) {
      if (!mask.present[r * cols + c]) continue;
      const p = py[r];
      for (let Y = 0; Y < y.m; Y++) v[Y] += p[Y];
    }
    for (let Y = 0; Y < y.m; Y++) v[Y] = div.vertical ? toByte(v[Y] * 255, div.vertical) : v[Y] * 255;
    return v;
  });
  // Every byte is written below.
  const alpha = pixelPool.acquire(W * y.m);
  for (let Y = 0; Y < y.m; ) {
    for (let X = 0; X < W; X++) {
      let v = 0;
      for (let c = 0; c < cols; c++) v += px[c][X] * vy[c][Y];
      alpha[Y * W + X] = toByte(v, div.horizontal);
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
