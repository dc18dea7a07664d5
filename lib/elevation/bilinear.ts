/**
 * Bilinear interpolation of four posts with renormalisation: a missing post (NaN) has its weight
 * dropped and the remaining weights rescaled to sum to 1. NaN only when all four are missing.
 * `dx`, `dy` in [0, 1] are the fractional offsets from the top-left post (v00) towards v01 / v10.
 * When the present posts all have zero weight (the point sits on a missing post), their mean is used.
 */
export function bilinear(v00: number, v01: number, v10: number, v11: number, dx: number, dy: number): number {
  const w00 = (1 - dx) * (1 - dy), w01 = dx * (1 - dy), w10 = (1 - dx) * dy, w11 = dx * dy;
  if (v00 === v00 && v01 === v01 && v10 === v10 && v11 === v11) {
    return v00 * w00 + v01 * w01 + v10 * w10 + v11 * w11;
  }
  let s = 0, ws = 0, sum = 0, n = 0;
  if (v00 === v00) { s += v00 * w00; ws += w00; sum += v00; n++; }
  if (v01 === v01) { s += v01 * w01; ws += w01; sum += v01; n++; }
  if (v10 === v10) { s += v10 * w10; ws += w10; sum += v10; n++; }
  if (v11 === v11) { s += v11 * w11; ws += w11; sum += v11; n++; }
  if (n === 0) return NaN;
  return ws > 0 ? s / ws : sum / n;
}

/** Where a point falls in a post grid: top-left post and fractional offsets, or null when outside. */
export interface GridCell {
  r0: number;
  c0: number;
  dx: number;
  dy: number;
}

/** Tolerance (in posts) for points a rounding error outside the grid's edge. */
const EDGE_EPS = 1e-9;

/** Where a fractional post index falls on an axis: the post before it and the offset towards the next. */
export interface AxisCell {
  i0: number;
  d: number;
}

/**
 * Locate fractional post index `f` on an axis of `n` posts, or null when outside (beyond a rounding
 * error). A point on a post (up to rounding) is exactly that post; the last post is addressed as the
 * far post of the cell before it (d = 1).
 */
export function locateAxis(f: number, n: number): AxisCell | null {
  const max = n - 1;
  if (!(f >= -EDGE_EPS && f <= max + EDGE_EPS)) return null;
  const r = Math.round(f);
  if (Math.abs(f - r) < EDGE_EPS) f = r;
  f = Math.min(Math.max(f, 0), max);
  let i0 = Math.floor(f);
  if (i0 >= max) i0 = Math.max(0, max - 1);
  return { i0, d: f - i0 };
}

/**
 * Locate (lat, lon) in a grid whose post (0, 0) is at (originLat, originLon), rows going south
 * (`locateAxis` on each axis).
 */
export function locate(lat: number, lon: number, originLat: number, originLon: number, stepLat: number, stepLon: number, rows: number, cols: number): GridCell | null {
  const y = locateAxis((originLat - lat) / stepLat, rows);
  if (!y) return null;
  const x = locateAxis((lon - originLon) / stepLon, cols);
  if (!x) return null;
  return { r0: y.i0, c0: x.i0, dx: x.d, dy: y.d };
}
