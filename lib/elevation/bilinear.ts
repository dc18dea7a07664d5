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

/**
 * Locate (lat, lon) in a grid whose post (0, 0) is at (originLat, originLon), rows going south.
 * The last row/column is addressed as the bottom/right post of the cell before it (dy/dx = 1).
 */
export function locate(lat: number, lon: number, originLat: number, originLon: number, stepLat: number, stepLon: number, rows: number, cols: number): GridCell | null {
  let fy = (originLat - lat) / stepLat;
  let fx = (lon - originLon) / stepLon;
  const maxY = rows - 1, maxX = cols - 1;
  if (!(fy >= -EDGE_EPS && fy <= maxY + EDGE_EPS && fx >= -EDGE_EPS && fx <= maxX + EDGE_EPS)) return null;
  // A point on a post (up to rounding) is exactly that post.
  const ry = Math.round(fy), rx = Math.round(fx);
  if (Math.abs(fy - ry) < EDGE_EPS) fy = ry;
  if (Math.abs(fx - rx) < EDGE_EPS) fx = rx;
  fy = Math.min(Math.max(fy, 0), maxY);
  fx = Math.min(Math.max(fx, 0), maxX);
  let r0 = Math.floor(fy), c0 = Math.floor(fx);
  if (r0 >= maxY) r0 = Math.max(0, maxY - 1);
  if (c0 >= maxX) c0 = Math.max(0, maxX - 1);
  return { r0, c0, dx: fx - c0, dy: fy - r0 };
}
