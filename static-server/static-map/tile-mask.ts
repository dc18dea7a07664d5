/**
 * The resampled alpha of a stitched region whose only transparency is missing tiles (every present
 * tile opaque), computed from the tile grid instead of resampling an alpha plane: the alpha plane is
 * a sum of rectangles (one per present tile), and a separable kernel turns each rectangle into the
 * outer product of two 1-D profiles. libvips resamples a one-band plane at nearly the cost of the RGB
 * one, so this halves the resampling of images reaching beyond the build (docs/static-map-speed.md).
 * The kernels mirror libvips' (centre-aligned sampling, kernel stretched when downsizing, edge pixels
 * repeated); where their rounding differs, alpha is a few units off along the edges of the data.
 */
import { pixelPool } from './pixel-pool.ts';

/** Which tiles of a stitched region are present: tile column k spans region columns colEdges[k] … colEdges[k+1]. */
export interface TileMask {
  colEdges: number[];
  rowEdges: number[];
  /** present[row * columns + column]. */
  present: boolean[];
}

/**
 * The kernels compose.ts resamples with, as libvips applies them: lanczos3 downsizing (vips_reduce,
 * output sample X centred on source (X + ½)/scale − ½, kernel stretched by 1/scale) and bilinear
 * upsizing (vips_affine as vips_resize sets it up, which samples source X/scale − ½; measured).
 */
const KERNELS = {
  lanczos3: { support: 3, shift: 0.5, at: (x: number) => (x === 0 ? 1 : Math.abs(x) >= 3 ? 0 : (3 * Math.sin(Math.PI * x) * Math.sin((Math.PI * x) / 3)) / (Math.PI * Math.PI * x * x)) },
  linear: { support: 1, shift: 0, at: (x: number) => Math.max(0, 1 - Math.abs(x)) },
} as const;
export type MaskKernel = keyof typeof KERNELS;

/** How one axis is resampled: `n` source samples scaled by `scale`, output samples offset..offset+m-1 kept. */
interface Axis {
  n: number;
  scale: number;
  offset: number;
  m: number;
}

/** For each interval [edges[k], edges[k+1]) the resampled indicator of that interval at every kept output sample. */
function profiles(edges: number[], axis: Axis, kernel: MaskKernel): Float64Array[] {
  const { support, shift, at } = KERNELS[kernel];
  const stretch = axis.scale < 1 ? 1 / axis.scale : 1;
  const reach = support * stretch;
  const out = edges.slice(1).map(() => new Float64Array(axis.m));
  const sums = new Float64Array(out.length);
  for (let X = 0; X < axis.m; X++) {
    const u = (X + axis.offset + shift) / axis.scale - 0.5;
    sums.fill(0);
    let total = 0;
    for (let i = Math.ceil(u - reach); i <= Math.floor(u + reach); i++) {
      const w = at((u - i) / stretch);
      if (w === 0) continue;
      const s = Math.min(axis.n - 1, Math.max(0, i));
      let k = 0;
      while (k < out.length - 1 && s >= edges[k + 1]) k++;
      sums[k] += w;
      total += w;
    }
    for (let k = 0; k < out.length; k++) out[k][X] = sums[k] / total;
  }
  return out;
}

const byte = (v: number) => Math.min(255, Math.max(0, Math.round(v * 255)));

/**
 * The `x.m`×`y.m` alpha plane of the masked region resampled along `x` and `y`. As libvips does, the
 * vertical pass comes first and is rounded to bytes (clamping the kernel's overshoot) before the
 * horizontal one.
 */
export function resampledMask(mask: TileMask, x: Axis, y: Axis, kernel: MaskKernel): Buffer {
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
