/**
 * The resampled alpha of a stitched region whose only transparency is missing tiles (every present
 * tile opaque), computed from the tile grid instead of resampling an alpha plane: the alpha plane is
 * a sum of rectangles (one per present tile), and a separable kernel turns each rectangle into the
 * outer product of two 1-D profiles. libvips resamples a one-band plane at nearly the cost of the RGB
 * one, so this halves the resampling of images reaching beyond the build (docs/static-map-speed.md).
 * The kernels mirror libvips' (centre-aligned sampling, kernel stretched when downsizing, edge pixels
 * repeated); where their rounding differs, alpha is a few units off along the edges of the data.
 */
import { lanczos3Taps, linearTaps, type KernelAxis } from '../../lib/resample-kernel.ts';
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

/** For each interval [edges[k], edges[k+1]) the resampled indicator of that interval at every kept output sample. */
function profiles(edges: number[], axis: KernelAxis, kernel: MaskKernel): Float64Array[] {
  const { taps, first, index, table } = KERNELS[kernel](axis);
  const out = edges.slice(1).map(() => new Float64Array(axis.m));
  for (let X = 0; X < axis.m; X++) {
    let k = 0;
    for (let t = 0; t < taps; t++) {
      const w = table[index[X] * taps + t];
      if (w === 0) continue;
      const s = Math.min(axis.n - 1, Math.max(0, first[X] + t));
      // Taps run left to right (clamping keeps the order), so the interval only moves on.
      while (k < out.length - 1 && s >= edges[k + 1]) k++;
      out[k][X] += w;
    }
  }
  return out;
}

const byte = (v: number) => Math.min(255, Math.max(0, Math.round(v * 255)));

/**
 * The `x.m`×`y.m` alpha plane of the masked region resampled along `x` and `y`. As libvips does, the
 * vertical pass comes first and is rounded to bytes (clamping the kernel's overshoot) before the
 * horizontal one.
 */
export function resampledMask(mask: TileMask, x: KernelAxis, y: KernelAxis, kernel: MaskKernel): Buffer {
  const px = profiles(mask.colEdges, x, kernel);
  const py = profiles(mask.rowEdges, y, kernel);
  const cols = px.length;
  // Per tile column: the vertical profile of its present tiles, in bytes.
  const vy = px.map((_, c) => {
    const v = new Float64Array(y.m);
    for (let r = 0; r < py.length; r++) if (mask.present[r * cols + c]) for (let Y = 0; Y < y.m; Y++) v[Y] += py[r][Y];
    return Uint8Array.from(v, byte);
  });
  // Every byte is written below.
  const alpha = pixelPool.acquire(x.m * y.m);
  const row = new Float64Array(cols);
  for (let Y = 0; Y < y.m; Y++) {
    // Rows inside one band of tile rows repeat the row above.
    if (Y > 0 && vy.every((v) => v[Y] === v[Y - 1])) {
      alpha.copyWithin(Y * x.m, (Y - 1) * x.m, Y * x.m);
      continue;
    }
    for (let c = 0; c < cols; c++) row[c] = vy[c][Y] / 255;
    for (let X = 0; X < x.m; X++) {
      let v = 0;
      for (let c = 0; c < cols; c++) v += px[c][X] * row[c];
      alpha[Y * x.m + X] = byte(v);
    }
  }
  return alpha;
}
