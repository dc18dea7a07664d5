/**
 * Interpolating a regular grid (a tile's pixel centres: rows share a latitude, columns a longitude)
 * from one layer of the elevation index: each axis is located once (`axisPlan`), then every grid
 * point is interpolated from the decoded blocks (`fillFromLayer`), with a fast path for runs of
 * columns inside one block. `ElevationIndex.sampleGrid` loads the blocks and calls these per layer.
 */
import { bilinear, locateAxis } from './bilinear.ts';
import type { DecodedBlock } from './codec.ts';

/**
 * One axis of a grid located in a layer: per grid line, the block (index into `blocks`) and in-block
 * offset of the post before it and of the one after it (-1: none), and the interpolation weight.
 */
export interface AxisPlan {
  inside: Uint8Array;
  b0: Int32Array;
  o0: Int32Array;
  b1: Int32Array;
  o1: Int32Array;
  d: Float64Array;
  /** Block rows (or columns) touched, in order. */
  blocks: number[];
}

/** Locate every grid line of one axis in a layer (null when none falls inside it). */
export function axisPlan(values: Float64Array, toIndex: (v: number) => number, posts: number, shift: number, mask: number): AxisPlan | null {
  const n = values.length;
  const p: AxisPlan = { inside: new Uint8Array(n), b0: new Int32Array(n), o0: new Int32Array(n), b1: new Int32Array(n), o1: new Int32Array(n), d: new Float64Array(n), blocks: [] };
  const slot = new Map<number, number>();
  const blockOf = (post: number) => {
    const b = post >> shift;
    let s = slot.get(b);
    if (s === undefined) {
      s = p.blocks.length;
      slot.set(b, s);
      p.blocks.push(b);
    }
    return s;
  };
  let any = false;
  for (let i = 0; i < n; i++) {
    const cell = locateAxis(toIndex(values[i]), posts);
    if (!cell) continue;
    any = true;
    p.inside[i] = 1;
    p.d[i] = cell.d;
    p.b0[i] = blockOf(cell.i0);
    p.o0[i] = cell.i0 & mask;
    const i1 = cell.i0 + 1;
    if (i1 < posts) {
      p.b1[i] = blockOf(i1);
      p.o1[i] = i1 & mask;
    } else p.b1[i] = -1;
  }
  return any ? p : null;
}

/** A post of a located grid: NaN for a missing post or block. */
function postOf(blocks: DecodedBlock[], nbc: number, rb: number, ro: number, cb: number, co: number): number {
  if (rb < 0 || cb < 0) return NaN;
  const b = blocks[rb * nbc + cb];
  return b.data.length === 0 ? NaN : b.data[ro * b.cols + co];
}

/**
 * Interpolate one layer into the grid points `out` still lacks (NaN; every point when `fresh`);
 * returns how many it filled.
 */
export function fillFromLayer(rows: AxisPlan, cols: AxisPlan, nbc: number, blocks: DecodedBlock[], out: Float64Array, nc: number, fresh: boolean): number {
  // Columns whose two posts lie in one block, grouped in runs of one block column (the fast path).
  const runs: number[] = [];
  for (let c = 0; c < nc; ) {
    if (!cols.inside[c] || cols.b0[c] !== cols.b1[c]) {
      c++;
      continue;
    }
    const b = cols.b0[c];
    let e = c + 1;
    while (e < nc && cols.inside[e] && cols.b0[e] === b && cols.b1[e] === b) e++;
    runs.push(c, e, b);
    c = e;
  }
  const { o0, d: dxs } = cols;
  let filled = 0;
  for (let r = 0; r < rows.inside.length; r++) {
    if (!rows.inside[r]) continue;
    const rb0 = rows.b0[r], ro0 = rows.o0[r], rb1 = rows.b1[r], ro1 = rows.o1[r], dy = rows.d[r];
    const base = r * nc;
    if (rb0 === rb1) {
      for (let k = 0; k < runs.length; k += 3) {
        const blk = blocks[rb0 * nbc + runs[k + 2]];
        if (blk.data.length === 0) continue;
        const d = blk.data, w = blk.cols, top = ro0 * w, down = (ro1 - ro0) * w;
        for (let c = runs[k]; c < runs[k + 1]; c++) {
          if (!fresh && out[base + c] === out[base + c]) continue;
          const i = top + o0[c];
          const h = bilinear(d[i], d[i + 1], d[i + down], d[i + down + 1], dxs[c], dy);
          if (h === h) {
            out[base + c] = h;
            filled++;
          }
        }
      }
    }
    for (let c = 0; c < nc; c++) {
      // Columns the runs above did not cover (posts in two blocks, or the row's posts in two blocks).
      if (!cols.inside[c] || (rb0 === rb1 && cols.b0[c] === cols.b1[c])) continue;
      if (!fresh && out[base + c] === out[base + c]) continue;
      const cb0 = cols.b0[c], co0 = cols.o0[c], cb1 = cols.b1[c], co1 = cols.o1[c];
      const h = bilinear(
        postOf(blocks, nbc, rb0, ro0, cb0, co0), postOf(blocks, nbc, rb0, ro0, cb1, co1),
        postOf(blocks, nbc, rb1, ro1, cb0, co0), postOf(blocks, nbc, rb1, ro1, cb1, co1),
        dxs[c], dy,
      );
      if (h === h) {
        out[base + c] = h;
        filled++;
      }
    }
  }
  return filled;
}
