/**
 * Distances on the Earth's surface: the one great-circle (haversine) distance of the project, on
 * Valhalla's sphere, so `/height`'s `range_height` (and anything else measuring along a line) agrees
 * with Valhalla's answers.
 */

/** Earth radius used for distances, in metres (Valhalla's value). */
export const EARTH_RADIUS_M = 6378160.187;

const RAD = Math.PI / 180;

/** A point, in degrees. */
export interface LatLon {
  lat: number;
  lon: number;
}

/** Great-circle (haversine) distance in metres between two points. */
export function haversine(a: LatLon, b: LatLon): number {
  const dLat = (b.lat - a.lat) * RAD;
  const dLon = (b.lon - a.lon) * RAD;
  const s = Math.sin(dLat / 2) ** 2 + Math.cos(a.lat * RAD) * Math.cos(b.lat * RAD) * Math.sin(dLon / 2) ** 2;
  return 2 * EARTH_RADIUS_M * Math.asin(Math.min(1, Math.sqrt(s)));
}

/** Cumulative distances along `points` in metres; the first is 0. */
export function cumulativeDistances(points: readonly LatLon[]): number[] {
  const out = new Array<number>(points.length);
  let d = 0;
  for (let i = 0; i < points.length; i++) {
    if (i > 0) d += haversine(points[i - 1], points[i]);
    out[i] = d;
  }
  return out;
}
