/**
 * Contour lines of one tile from a grid of heights sampled at the tile's resolution plus a buffer:
 * marching squares (./marching-squares.ts, d3-contour's cases in one pass for all levels) finds the
 * isolines, which are interpolated linearly between samples, cut next to voids, clipped to the tile
 * plus a small buffer and simplified. Grids of neighbouring tiles are cut from one global sample
 * lattice, so the lines agree where the tiles overlap and meet exactly on the shared edge (a vertex
 * is put there).
 */
import { edgePoint, isolineChains, rootAlong, type Chain, type Surface } from './marching-squares.ts';

/** How a tile's grid relates to the tile, and what to produce. */
export interface IsolineOptions {
  /** Samples per tile side; the grid is `samples + 2 * buffer` wide and high. */
  samples: number;
  /** Samples of buffer on every side of the tile. */
  buffer: number;
  /** Tile coordinate extent (4096 for MVT). */
  extent: number;
  /** Lines are clipped to the tile grown by this many tile units (must lie within the buffer). */
  clipBuffer: number;
  /** Douglas–Peucker tolerance in tile units. */
  tolerance: number;
  /** Interval between contours and between index contours (a multiple of it), metres. */
  minor: number;
  major: number;
  /** The surface the grid samples: crossings are placed on it rather than linearly between samples. */
  surface?: Surface;
}

/** The contours of one level: lines as flat `[x0, y0, x1, y1, …]` integer tile coordinates. */
export interface Isoline {
  ele: number;
  /** 1 for index contours (multiples of `major`), else 0. */
  level: 0 | 1;
  lines: number[][];
}

/** A polyline in tile units: per vertex, the grid edge it lies on, or -1 for a point the clip added (kept by simplification). */
interface Path {
  xy: number[];
  edges: number[];
  /** Vertices already placed on the surface. */
  refined?: Uint8Array;
}

/** The levels (multiples of `minor`) that cross the grid's height range. */
export function isolineLevels(values: Float64Array, minor: number): number[] {
  let lo = Infinity, hi = -Infinity;
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  const out: number[] = [];
  if (!(lo <= hi)) return out;
  // A level equal to the lowest height bounds nothing (every sample is at or above it).
  for (let t = Math.floor(lo / minor + 1) * minor; t <= hi; t += minor) out.push(t);
  return out;
}

/** Contour lines of a `(samples + 2·buffer)²` row-major grid of heights (NaN = no data). */
export function tileIsolines(values: Float64Array, opts: IsolineOptions): Isoline[] {
  const w = opts.samples + 2 * opts.buffer;
  if (values.length !== w * w) throw new RangeError(`isolines: expected ${w * w} heights, got ${values.length}`);
  const levels = isolineLevels(values, opts.minor);
  if (levels.length === 0) return [];
  const chains = isolineChains(values, w, w, levels[0], opts.minor, levels.length);
  const grid = { values, w, scale: opts.extent / opts.samples, shift: 0.5 - opts.buffer };
  const tileEdges = [0, opts.extent];
  const out: Isoline[] = [];
  levels.forEach((t, k) => {
    const onTileEdge = opts.surface ? tileEdgePoint(grid, t, opts.surface) : undefined;
    const lines: number[][] = [];
    for (const chain of chains[k]) {
      for (const path of chainToPaths(chain, grid, t)) {
        const [x0, y0, x1, y1] = pathBounds(path);
        const lo = -opts.clipBuffer, hi = opts.extent + opts.clipBuffer;
        // Wholly outside the clip square: drawn by the neighbours only.
        if (x1 < lo || y1 < lo || x0 > hi || y0 > hi) continue;
        // Wholly inside the tile (the common case): nothing to cut.
        const within = x0 > 0 && y0 > 0 && x1 < opts.extent && y1 < opts.extent;
        if (opts.surface && !within) refineAtCuts(path, grid, t, opts.surface, tileEdges);
        for (const piece of within ? [path] : clipPath(path, lo, hi, opts.extent, onTileEdge)) {
          const line = finish(piece, simplify(piece, opts.tolerance), grid, t, opts.surface);
          if (line.length >= 4) lines.push(line);
        }
      }
    }
    if (lines.length) out.push({ ele: t, level: t % opts.major === 0 ? 1 : 0, lines });
  });
  return out;
}

/** The grid and how its coordinates map to tile units: tile = (grid + shift) · scale. */
interface Grid {
  values: Float64Array;
  w: number;
  scale: number;
  shift: number;
}

/**
 * The parts of a chain in tile units, each point placed linearly between its edge's samples; a
 * point next to a sample without data is no isoline point (the line is cut there).
 */
function chainToPaths(chain: Chain, g: Grid, t: number): Path[] {
  const n = chain.closed ? chain.ids.length - 1 : chain.ids.length;
  const xs = new Float64Array(n), ys = new Float64Array(n);
  const good = new Uint8Array(n);
  let bad = -1;
  for (let i = 0; i < n; i++) {
    const p = edgePoint(g.values, g.w, chain.ids[i], t);
    if (p) {
      xs[i] = (p[0] + g.shift) * g.scale;
      ys[i] = (p[1] + g.shift) * g.scale;
      good[i] = 1;
    } else bad = i;
  }
  const paths: Path[] = [];
  let cur: Path = { xy: [], edges: [] };
  if (bad < 0 && chain.closed) {
    // A closed line: end where it started.
    for (let k = 0; k <= n; k++) {
      const i = k % n;
      cur.xy.push(xs[i], ys[i]);
      cur.edges.push(chain.ids[i]);
    }
    return [cur];
  }
  // Runs of good points; a ring is walked from just after a bad point so no run wraps around.
  const from = chain.closed ? bad + 1 : 0;
  for (let k = 0; k < n; k++) {
    const i = (from + k) % n;
    if (good[i]) {
      cur.xy.push(xs[i], ys[i]);
      cur.edges.push(chain.ids[i]);
    } else {
      if (cur.edges.length >= 2) paths.push(cur);
      cur = { xy: [], edges: [] };
    }
  }
  if (cur.edges.length >= 2) paths.push(cur);
  return paths;
}

/** [minX, minY, maxX, maxY] of a path's vertices. */
function pathBounds(path: Path): [number, number, number, number] {
  let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
  const { xy } = path;
  for (let i = 0; i < xy.length; i += 2) {
    const x = xy[i], y = xy[i + 1];
    if (x < x0) x0 = x;
    if (x > x1) x1 = x;
    if (y < y0) y0 = y;
    if (y > y1) y1 = y;
  }
  return [x0, y0, x1, y1];
}

/** A clip point this close (tile units) to a tile edge lies on it. */
const EDGE_SNAP = 1e-6;

/** True when a coordinate going from `a` to `b` passes one of the `cuts`. */
function crossesCut(a: number, b: number, cuts: readonly number[]): boolean {
  for (const c of cuts) if ((a - c) * (b - c) < 0) return true;
  return false;
}

/**
 * Place on the surface the two ends of every segment that a tile edge cuts, so the point the clip
 * adds there lies on the isoline too (neighbouring tiles do the same to the same segment).
 */
function refineAtCuts(path: Path, g: Grid, t: number, surface: Surface, cuts: readonly number[]): void {
  const { xy, edges } = path;
  const refine = (i: number) => {
    if (edges[i] < 0 || path.refined?.[i]) return;
    const p = edgePoint(g.values, g.w, edges[i], t, surface)!;
    xy[2 * i] = (p[0] + g.shift) * g.scale;
    xy[2 * i + 1] = (p[1] + g.shift) * g.scale;
    (path.refined ??= new Uint8Array(edges.length))[i] = 1;
  };
  const marked: number[] = [];
  for (let i = 0; i + 1 < edges.length; i++) {
    if (crossesCut(xy[2 * i], xy[2 * i + 2], cuts) || crossesCut(xy[2 * i + 1], xy[2 * i + 3], cuts)) marked.push(i, i + 1);
  }
  for (const i of marked) refine(i);
}

/** Moves a point where a line crosses a tile edge (`vertical`: the edge x = c, else y = c) onto the isoline. */
type EdgeFix = (vertical: boolean, c: number, x: number, y: number) => [number, number];

/**
 * Where the isoline crosses a tile edge, found on the surface along that edge between the two grid
 * lines around the clip's point (a tile edge lies halfway between sample rows or columns). Both
 * tiles sharing the edge search the same stretch of it, so they agree on the point.
 */
function tileEdgePoint(g: Grid, t: number, surface: Surface): EdgeFix {
  return (vertical, c, x, y) => {
    const along = (vertical ? y : x) / g.scale - g.shift, at = c / g.scale - g.shift;
    const base = Math.floor(along);
    // The stretch between grid lines holding the clip's point, else the one on either side.
    for (const j0 of [base, base - 1, base + 1]) {
      const [x0, y0] = vertical ? [at, j0] : [j0, at];
      const f0 = surface(x0, y0) - t, f1 = (vertical ? surface(at, j0 + 1) : surface(j0 + 1, at)) - t;
      if (!(f0 < 0 !== f1 < 0) || !(f0 === f0 && f1 === f1)) continue;
      const j = j0 + rootAlong(surface, x0, y0, vertical ? 0 : 1, vertical ? 1 : 0, t, f0, f1, Math.min(1, Math.max(0, along - j0)));
      const p = (j + g.shift) * g.scale;
      return vertical ? [c, p] : [p, c];
    }
    return [x, y];
  };
}

/**
 * Clip a polyline to the square [lo, hi]², splitting it where it leaves; vertices are added (edge
 * -1: pinned) where it crosses the clip square's edges and the tile's own edges (0 and `extent`),
 * the latter moved onto the isoline by `fix` when given.
 */
function clipPath(path: Path, lo: number, hi: number, extent: number, fix?: EdgeFix): Path[] {
  const { xy, edges } = path;
  const out: Path[] = [];
  let cur: Path | undefined;
  const push = (x: number, y: number, edge: number, refined = 0) => {
    cur ??= { xy: [], edges: [], refined: new Uint8Array(0) };
    const k = cur.xy.length;
    if (k && cur.xy[k - 2] === x && cur.xy[k - 1] === y) {
      if (edge < 0) cur.edges[cur.edges.length - 1] = edge;
      return;
    }
    cur.xy.push(x, y);
    cur.edges.push(edge);
    done.push(refined);
  };
  let done: number[] = [];
  const end = () => {
    if (cur && cur.edges.length >= 2) out.push({ ...cur, refined: Uint8Array.from(done) });
    cur = undefined;
    done = [];
  };
  const was = (i: number) => path.refined?.[i] ?? 0;
  const inside = (x: number, y: number) => x >= lo && x <= hi && y >= lo && y <= hi;
  const cuts = [lo, 0, extent, hi];
  for (let i = 0; i + 1 < edges.length; i++) {
    const x0 = xy[2 * i], y0 = xy[2 * i + 1], x1 = xy[2 * i + 2], y1 = xy[2 * i + 3];
    if (!crossesCut(x0, x1, cuts) && !crossesCut(y0, y1, cuts)) {
      // The common case: a short segment crossing no cut line, wholly in or out.
      if (inside((x0 + x1) / 2, (y0 + y1) / 2)) {
        push(x0, y0, edges[i], was(i));
        push(x1, y1, edges[i + 1], was(i + 1));
      } else end();
      continue;
    }
    // Parameters where the segment crosses any of the vertical or horizontal cut lines.
    const ts = [0];
    for (const c of cuts) {
      if ((x0 - c) * (x1 - c) < 0) ts.push((c - x0) / (x1 - x0));
      if ((y0 - c) * (y1 - c) < 0) ts.push((c - y0) / (y1 - y0));
    }
    ts.push(1);
    ts.sort((a, b) => a - b);
    const at = (u: number): [number, number] => (u === 0 ? [x0, y0] : u === 1 ? [x1, y1] : [x0 + (x1 - x0) * u, y0 + (y1 - y0) * u]);
    // A point the cut put on a tile edge (not the clip square's): onto the isoline.
    const onEdge = (px: number, py: number): [number, number] => {
      if (!fix) return [px, py];
      if (Math.abs(px) < EDGE_SNAP || Math.abs(px - extent) < EDGE_SNAP) return fix(true, Math.abs(px) < EDGE_SNAP ? 0 : extent, px, py);
      if (Math.abs(py) < EDGE_SNAP || Math.abs(py - extent) < EDGE_SNAP) return fix(false, Math.abs(py) < EDGE_SNAP ? 0 : extent, px, py);
      return [px, py];
    };
    for (let k = 0; k + 1 < ts.length; k++) {
      const ta = ts[k], tb = ts[k + 1];
      if (tb <= ta) continue;
      let [ax, ay] = at(ta), [bx, by] = at(tb);
      if (!inside((ax + bx) / 2, (ay + by) / 2)) {
        end();
        continue;
      }
      if (ta > 0) [ax, ay] = onEdge(ax, ay);
      if (tb < 1) [bx, by] = onEdge(bx, by);
      push(ax, ay, ta > 0 ? -1 : edges[i], ta > 0 ? 0 : was(i));
      push(bx, by, tb < 1 ? -1 : edges[i + 1], tb < 1 ? 0 : was(i + 1));
    }
  }
  end();
  return out;
}

/** Douglas–Peucker simplification keeping both ends and every pinned vertex; returns what to keep. */
function simplify(path: Path, tolerance: number): Uint8Array {
  const { xy, edges } = path;
  const n = edges.length;
  const keep = new Uint8Array(n);
  keep[0] = keep[n - 1] = 1;
  for (let i = 0; i < n; i++) if (edges[i] < 0) keep[i] = 1;
  const tol2 = tolerance * tolerance;
  const stack: number[] = [];
  let first = 0;
  for (let i = 1; i < n; i++) {
    if (keep[i]) {
      if (i - first > 1) stack.push(first, i);
      first = i;
    }
  }
  while (stack.length) {
    const b = stack.pop()!, a = stack.pop()!;
    const ax = xy[2 * a], ay = xy[2 * a + 1], dx = xy[2 * b] - ax, dy = xy[2 * b + 1] - ay;
    const len2 = dx * dx + dy * dy;
    let best = -1, bestD = tol2;
    for (let i = a + 1; i < b; i++) {
      const px = xy[2 * i] - ax, py = xy[2 * i + 1] - ay;
      let d: number;
      if (len2 === 0) d = px * px + py * py;
      else {
        const cross = px * dy - py * dx;
        d = (cross * cross) / len2;
      }
      if (d > bestD) {
        bestD = d;
        best = i;
      }
    }
    if (best >= 0) {
      keep[best] = 1;
      stack.push(a, best, best, b);
    }
  }
  return keep;
}

/**
 * The kept vertices as integer tile coordinates (repeats dropped). Vertices on a grid edge are first
 * placed on the `surface` itself when given (only the kept ones: the refinement costs index lookups);
 * pinned vertices stay where the clip put them, so neighbouring tiles share them.
 */
function finish(path: Path, keep: Uint8Array, g: Grid, t: number, surface: Surface | undefined): number[] {
  const out: number[] = [];
  for (let i = 0; i < keep.length; i++) {
    if (!keep[i]) continue;
    let px = path.xy[2 * i], py = path.xy[2 * i + 1];
    const edge = path.edges[i];
    if (surface && edge >= 0 && !path.refined?.[i]) {
      const p = edgePoint(g.values, g.w, edge, t, surface)!;
      px = (p[0] + g.shift) * g.scale;
      py = (p[1] + g.shift) * g.scale;
    }
    const x = Math.round(px), y = Math.round(py);
    const k = out.length;
    if (k && out[k - 2] === x && out[k - 1] === y) continue;
    out.push(x, y);
  }
  return out;
}
