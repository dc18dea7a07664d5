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
  const table = kernel === 'lanczos3' ? fixedTable(taps) : taps.table;
  const out = edges.slice(1).map(() => new Float64Array(axis.m));
  for (let X = 0; X < axis.m; X++) {
    let k = 0;
    for (let t = 0; t < taps.taps; t++) {
      const w = table[taps.index[X] * taps.taps + t];
      if (w === 0) continue;
      const s = Math.min(axis.n - 1, Math.max(0, taps.first[X] + t));
      // Taps run left to right (clamping keeps the order), so the interval only moves on.
      while (k < out.length - 1 && s >= edges[k + 1]) k++;
      out[k][X] += w;
    }
  }
  return out;
}

const clampByte = (v: number) => Math.min(255, Math.max(0, v));

/**
 * The `x.m`×`y.m` alpha plane of the masked region resampled along `x` and `y`. As libvips does, the
 * vertical pass comes first and is rounded to bytes (clamping the kernel's overshoot) before the
 * horizontal one; for lanczos3 in libvips' integer arithmetic, so that the result is the bytes of the
 * region's alpha plane (255 where a tile is, 0 elsewhere) downsized by lib/resample-fast.ts or sharp.
 */
export function resampledMask(mask: TileMask, x: KernelAxis, y: KernelAxis, kernel: MaskKernel): Buffer {
  const px = profiles(mask.colEdges, x, kernel);
  const py = profiles(mask.rowEdges, y, kernel);
  const cols = px.length;
  // A sum of weights × bytes to a byte: rounded as the fixed-point sums are, or to nearest.
  const toByte = kernel === 'lanczos3' ? (v: number) => clampByte(Math.floor((v + FIXED / 2) / FIXED)) : (v: number) => clampByte(Math.round(v));
  // Per tile column: the vertical profile of its present tiles, in bytes.
  const vy = px.map((_, c) => {
    const v = new Float64Array(y.m);
    for (let r = 0; r < py.length; r++) if (mask.present[r * cols + c]) for (let Y = 0; Y < y.m; Y++) v[Y] += py[r][Y];
    return Uint8Array.from(v, (w) => toByte(w * 255));
  });
  // Every byte is written below.
  const alpha = pixelPool.acquire(x.m * y.m);
  for (let Y = 0; Y < y.m; Y++) {
    // Rows inside one band of tile rows repeat the row above.
    if (Y > 0 && vy.every((v) => v[Y] === v[Y - 1])) {
      alpha.copyWithin(Y * x.m, (Y - 1) * x.m, Y * x.m);
      continue;
    }
    for (let X = 0; X < x.m; X++) {
      let v = 0;
      for (let c = 0; c < cols; c++) v += px[c][X] * vy[c][Y];
      alpha[Y * x.m + X] = toByte(v);
    }
  }
  return alpha;
}
