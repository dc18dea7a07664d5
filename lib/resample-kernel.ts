/**
 * The resampling kernels of static maps, per output sample as taps (first source sample, weights), for
 * the tile-grid alpha (static-server/static-map/tile-mask.ts) and the native resamplers alike
 * (lib/resample-fast.ts passes these taps to lib/native/src/reduce.c and resample.c), so that the two
 * read the same source samples with the same weights. Both mirror sharp/libvips (8.18): lanczos3
 * downsizing as vips_reduceh/v apply it, bilinear upsizing as vips_affine as vips_resize sets it up.
 */

/** One axis: `n` source samples scaled by `scale`; output samples offset … offset + m − 1 kept. */
export interface KernelAxis {
  n: number;
  scale: number;
  offset: number;
  m: number;
}

/**
 * Output sample X is Σ_t table[index[X]·taps + t] × source sample first[X] + t (clamped to 0 … n − 1:
 * edges repeated); each row of the table sums to 1. libvips' reduce has one row per phase (65).
 */
export interface AxisTaps {
  taps: number;
  first: Int32Array;
  index: Int32Array;
  table: Float64Array;
}

/** 1/4096ths: the native resamplers' (and libvips' integer paths') fixed-point weights. */
const FIXED = 4096;

const sinc = (x: number) => (x === 0 ? 1 : Math.sin(x * Math.PI) / (x * Math.PI));

/** Lanczos with 3 lobes, computed as libvips does (templates.h), so that its truncated fixed-point weights come out the same. */
function lanczos3(x: number): number {
  return x >= -3 && x <= 3 ? sinc(x) * sinc(x / 3) : 0;
}

/** libvips' phases of a sample between two source samples: 1/64ths (VIPS_TRANSFORM_SCALE). */
const PHASES = 64;

/**
 * lanczos3 downsizing (scale < 1) as vips_reduce: output sample X is centred on source
 * (X + offset + ½)/scale − ½ (less libvips' correction for a rounded output size), its fraction rounded
 * to 1/64; 2·rint(3/scale) + 1 taps of the kernel stretched by 1/scale, normalised. A scale of 1 is
 * the identity (libvips skips the axis).
 */
export function lanczos3Taps(axis: KernelAxis): AxisTaps {
  const { n, scale, offset, m } = axis;
  if (!(scale > 0 && scale <= 1)) throw new RangeError(`lanczos3Taps: scale must be in (0, 1], got ${scale}`);
  const first = new Int32Array(m);
  const index = new Int32Array(m);
  if (scale === 1) {
    for (let X = 0; X < m; X++) first[X] = X + offset;
    return { taps: 1, first, index, table: Float64Array.of(1) };
  }
  // sharp passes libvips 1/(n/size) and vips_resize hands vips_reduce its inverse: the same doubles here.
  const size = Math.round(n * scale);
  const shrink = 1 / (1 / (n / size));
  const kscale = 1 / shrink;
  const taps = 2 * Math.round(3 * shrink) + 1;
  const k = (taps - 1) / 2;
  // vips_reduce: the rounded output size leaves `extra` source pixels, half of them on each side.
  const extra = Math.round(n / shrink) * shrink - n;
  const origin = (1 + extra) / 2 - 1;
  for (let X = 0; X < m; X++) {
    // In libvips' input, padded with k samples before the first.
    const u = (X + offset + 0.5) * shrink - 0.5 - origin;
    first[X] = Math.trunc(u) - k;
    index[X] = ((Math.trunc(u * 2 * PHASES) & (2 * PHASES - 1)) + 1) >> 1;
  }
  // libvips' masks, one per phase.
  const table = new Float64Array((PHASES + 1) * taps);
  for (let phase = 0; phase <= PHASES; phase++) {
    const c = table.subarray(phase * taps, (phase + 1) * taps);
    const half = phase / PHASES + taps / 2 - 1;
    let sum = 0;
    for (let i = 0; i < taps; i++) sum += c[i] = lanczos3((i - half) * kscale);
    for (let i = 0; i < taps; i++) c[i] /= sum;
  }
  return { taps, first, index, table };
}

/**
 * Arrays that taps are written into (views of their first elements) instead of new ones, grown as
 * needed: for a caller whose consumer copies the taps at once (lib/resample-fast.ts; the addon does),
 * so that resampling an image allocates nothing here.
 */
export class TapArrays {
  first = new Int32Array(0);
  index = new Int32Array(0);
  table = new Float64Array(0);
  fixed = new Int16Array(0);

  /** Room for `m` output samples of `taps` taps. */
  fit(m: number, taps: number): void {
    if (this.first.length < m) (this.first = new Int32Array(m)), (this.index = new Int32Array(m));
    if (this.table.length < m * taps) (this.table = new Float64Array(m * taps)), (this.fixed = new Int16Array(m * taps));
  }
}

/**
 * Bilinear upsizing (scale ≥ 1) as vips_affine samples it for vips_resize: output sample X reads source
 * (X + offset)/scale − ½; a scale of exactly 1 is a shift by whole samples (libvips leaves the axis alone).
 * The upper sample's weight is rounded to 1/4096ths (libvips' bilinear interpolator), so the table holds
 * exactly what `fixedTable` hands the native resampler (lib/resample-fast.ts) and the tile mask sums:
 * a weight rounding up to a whole sample reads that sample alone (first moves on, its weight 0).
 * One row per output sample; written into `into`'s arrays when given.
 */
export function linearTaps(axis: KernelAxis, into?: TapArrays): AxisTaps {
  const { scale, offset, m } = axis;
  into?.fit(m, 2);
  const first = into ? into.first.subarray(0, m) : new Int32Array(m);
  const index = into ? into.index.subarray(0, m) : new Int32Array(m);
  const table = into ? into.table.subarray(0, m * 2) : new Float64Array(m * 2);
  for (let X = 0; X < m; X++) {
    const u = scale === 1 ? X + offset : (X + offset) / scale - 0.5;
    let i = Math.floor(u);
    let w = Math.floor((u - i) * FIXED + 0.5);
    if (w === FIXED) i++, (w = 0);
    first[X] = i;
    index[X] = X;
    table[2 * X] = (FIXED - w) / FIXED;
    table[2 * X + 1] = w / FIXED;
  }
  return { taps: 2, first, index, table };
}

/**
 * 12-bit fixed point (1/4096ths) as libvips' integer paths make it: each weight truncated towards zero,
 * not renormalised (a sample's weights may sum to a few 4096ths less than one), which gives sharp's
 * bytes exactly; rounding and renormalising gave up to 2 units of difference on 0.4–8 % of bytes.
 * Written into `into`'s `fixed` (the taps written there too) when given.
 */
export function fixedTable(t: AxisTaps, into?: TapArrays): Int16Array {
  into?.fit(t.first.length, t.taps);
  const out = into ? into.fixed.subarray(0, t.table.length) : new Int16Array(t.table.length);
  for (let i = 0; i < out.length; i++) out[i] = Math.trunc(t.table[i] * FIXED);
  return out;
}
