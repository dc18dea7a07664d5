/**
 * Marching squares for many levels in one pass over a grid. d3-contour walks the whole grid once
 * per level; here each cell visits only the levels between its lowest and highest corner, which is
 * what makes contour tiles affordable (25–300 levels per tile). The case table (saddles included)
 * and the stitching of segments into chains are d3-contour's (ISC, Mike Bostock), so inside the grid
 * the segments are exactly d3's (test/elevation-contours.quick.test.ts checks it on real data). Unlike
 * d3, the grid is not closed by an outer frame: a chain that reaches the border stays open.
 *
 * Points are grid edges: `H(x, y) = 2·(y·w + x)` between samples (x, y) and (x+1, y), and
 * `V(x, y) = H(x, y) + 1` between (x, y) and (x, y+1).
 */

/** Cell edges: left, right, top, bottom. */
const enum Edge {
  L,
  R,
  T,
  B,
}

/**
 * d3-contour's cases: the segments (from edge, to edge) of a cell by its corners at or above the
 * level: 8 top-left, 4 top-right, 2 bottom-right, 1 bottom-left. The direction keeps the higher
 * side on the same hand, so segments chain head to tail.
 */
const CASES: readonly (readonly [Edge, Edge])[][] = [
  [],
  [[Edge.B, Edge.L]],
  [[Edge.R, Edge.B]],
  [[Edge.R, Edge.L]],
  [[Edge.T, Edge.R]],
  [[Edge.B, Edge.L], [Edge.T, Edge.R]],
  [[Edge.T, Edge.B]],
  [[Edge.T, Edge.L]],
  [[Edge.L, Edge.T]],
  [[Edge.B, Edge.T]],
  [[Edge.L, Edge.T], [Edge.R, Edge.B]],
  [[Edge.R, Edge.T]],
  [[Edge.L, Edge.R]],
  [[Edge.B, Edge.R]],
  [[Edge.L, Edge.B]],
  [],
];

/** A stitched isoline: its points as edge ids; a closed chain ends on its first point. */
export interface Chain {
  ids: number[];
  closed: boolean;
}

interface Fragment {
  start: number;
  end: number;
  ids: number[];
}

/** Segments of one level stitched into chains (d3-contour's stitch, with numeric keys). */
class Stitcher {
  private readonly byStart = new Map<number, Fragment>();
  private readonly byEnd = new Map<number, Fragment>();
  readonly closed: number[][] = [];

  add(start: number, end: number): void {
    const { byStart, byEnd } = this;
    let f = byEnd.get(start), g: Fragment | undefined;
    if (f) {
      if ((g = byStart.get(end))) {
        byEnd.delete(f.end);
        byStart.delete(g.start);
        if (f === g) {
          f.ids.push(end);
          this.closed.push(f.ids);
        } else {
          const m = { start: f.start, end: g.end, ids: f.ids.concat(g.ids) };
          byStart.set(m.start, m);
          byEnd.set(m.end, m);
        }
      } else {
        byEnd.delete(f.end);
        f.ids.push(end);
        byEnd.set((f.end = end), f);
      }
    } else if ((f = byStart.get(end))) {
      byStart.delete(f.start);
      f.ids.unshift(start);
      byStart.set((f.start = start), f);
    } else {
      const m = { start, end, ids: [start, end] };
      byStart.set(start, m);
      byEnd.set(end, m);
    }
  }

  /** Closed rings, then the chains left open at the grid's border. */
  chains(): Chain[] {
    return [...this.closed.map((ids) => ({ ids, closed: true })), ...[...this.byStart.values()].map((f) => ({ ids: f.ids, closed: false }))];
  }
}

/**
 * Isoline chains of a `w`×`h` row-major grid (NaN = no data, below every level) at the levels
 * `first + k·step` for k = 0..count-1; `out[k]` holds level k's chains.
 */
export function isolineChains(values: Float64Array, w: number, h: number, first: number, step: number, count: number): Chain[][] {
  const levels: (Stitcher | undefined)[] = new Array(count);
  const level = (k: number) => first + k * step;
  const edgeIds = new Int32Array(4);
  for (let y = 0; y + 1 < h; y++) {
    for (let x = 0; x + 1 < w; x++) {
      const i = y * w + x;
      const tl = values[i], tr = values[i + 1], br = values[i + w + 1], bl = values[i + w];
      // Lowest and highest corner with data; a corner without data counts as below every level.
      const gap = tl !== tl || tr !== tr || br !== br || bl !== bl;
      let lo = Infinity, hi = -Infinity;
      if (tl < lo) lo = tl;
      if (tr < lo) lo = tr;
      if (br < lo) lo = br;
      if (bl < lo) lo = bl;
      if (tl > hi) hi = tl;
      if (tr > hi) hi = tr;
      if (br > hi) hi = br;
      if (bl > hi) hi = bl;
      if (hi === -Infinity) continue;
      // The levels crossing the cell: above its lowest corner (all, with a gap) and at or below its highest.
      let k0 = 0;
      if (!gap) {
        k0 = Math.max(0, Math.floor((lo - first) / step) + 1);
        while (k0 > 0 && level(k0 - 1) > lo) k0--;
        while (k0 < count && level(k0) <= lo) k0++;
      }
      let k1 = Math.min(count - 1, Math.floor((hi - first) / step));
      while (k1 >= 0 && level(k1) > hi) k1--;
      while (k1 + 1 < count && level(k1 + 1) <= hi) k1++;
      if (k0 > k1) continue;
      edgeIds[Edge.L] = 2 * i + 1;
      edgeIds[Edge.R] = 2 * (i + 1) + 1;
      edgeIds[Edge.T] = 2 * i;
      edgeIds[Edge.B] = 2 * (i + w);
      for (let k = k0; k <= k1; k++) {
        const t = level(k);
        const c = (tl >= t ? 8 : 0) | (tr >= t ? 4 : 0) | (br >= t ? 2 : 0) | (bl >= t ? 1 : 0);
        const segs = CASES[c];
        if (segs.length === 0) continue;
        const s = (levels[k] ??= new Stitcher());
        for (let j = 0; j < segs.length; j++) s.add(edgeIds[segs[j][0]], edgeIds[segs[j][1]]);
      }
    }
  }
  return Array.from(levels, (s) => s?.chains() ?? []);
}

/** The surface the grid samples, at grid coordinates (sample (x, y) at (x, y)): a height, or NaN. */
export type Surface = (x: number, y: number) => number;

/** Refinement steps per crossing, and the height error (m) that ends them. */
const MAX_REFINE_STEPS = 8;
const REFINE_TOLERANCE_M = 1e-3;

/**
 * Where `surface - t` has its root on the segment from (x, y) to (x + dx, y + dy), as a fraction
 * s in [0, 1], given its values `f0` at s = 0 and `f1` at s = 1 (opposite signs) and a first guess
 * `s`: regula falsi, Illinois variant; along the segment the surface is piecewise linear (a kink at
 * each post line), so a few steps find the root. Returns the guess when the surface has no value.
 */
export function rootAlong(surface: Surface, x: number, y: number, dx: number, dy: number, t: number, f0: number, f1: number, s: number): number {
  let lo = 0, hi = 1, flo = f0, fhi = f1, side = 0;
  for (let k = 0; k < MAX_REFINE_STEPS; k++) {
    const fs = surface(x + dx * s, y + dy * s) - t;
    if (!(fs === fs) || Math.abs(fs) < REFINE_TOLERANCE_M) break;
    if (fs < 0 === flo < 0) {
      lo = s;
      flo = fs;
      if (side === -1) fhi /= 2;
      side = -1;
    } else {
      hi = s;
      fhi = fs;
      if (side === 1) flo /= 2;
      side = 1;
    }
    s = lo - (flo * (hi - lo)) / (fhi - flo);
  }
  return s;
}

/**
 * Where level `t` crosses edge `id` of a `w`-wide grid, in grid coordinates: linear between the
 * edge's two samples, then, given the `surface` they sample, moved to where the surface itself
 * crosses `t` along the edge (between samples the surface is piecewise linear, with a kink at every
 * post line the edge crosses). Undefined when either sample has no data.
 */
export function edgePoint(values: Float64Array, w: number, id: number, t: number, surface?: Surface): [number, number] | undefined {
  const i = id >> 1;
  const x = i % w, y = (i - x) / w;
  const vertical = (id & 1) === 1;
  const a = values[i], b = values[vertical ? i + w : i + 1];
  if (!(a === a && b === b)) return undefined;
  let d = (t - a) / (b - a);
  if (surface) d = rootAlong(surface, x, y, vertical ? 0 : 1, vertical ? 1 : 0, t, a - t, b - t, d);
  return vertical ? [x, y + d] : [x + d, y];
}
