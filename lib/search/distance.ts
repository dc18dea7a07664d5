/**
 * Distances for reverse geocoding and `near`: from a point to an entry's point, and to a street's
 * segment (the closest point of the segment found in a flat frame around the point, which over a
 * segment of a street is exact to well under a metre; the distance itself is the project's
 * great-circle distance, lib/geo-distance.ts).
 */
import { EARTH_RADIUS_M, haversine, type LatLon } from '../geo-distance.ts';

const RAD = Math.PI / 180;
/** Metres per degree of latitude on the sphere of `haversine`. */
const METRES_PER_DEGREE = EARTH_RADIUS_M * RAD;
/** Boxes are made this much larger than the radius (a great circle bows away from the parallel). */
const BOX_MARGIN = 1.01;

/** Distance in metres from `p` to the segment a–b (positions [lon, lat]). */
export function distanceToSegment(p: LatLon, a: readonly [number, number], b: readonly [number, number]): number {
  const k = Math.cos(p.lat * RAD);
  const ax = (a[0] - p.lon) * k;
  const ay = a[1] - p.lat;
  const bx = (b[0] - p.lon) * k;
  const by = b[1] - p.lat;
  const dx = bx - ax;
  const dy = by - ay;
  const len2 = dx * dx + dy * dy;
  const t = len2 === 0 ? 0 : Math.max(0, Math.min(1, -(ax * dx + ay * dy) / len2));
  return haversine(p, { lon: a[0] + (b[0] - a[0]) * t, lat: a[1] + (b[1] - a[1]) * t });
}

/** The box [west, south, east, north] around `p` that holds every point within `radiusM` metres. */
export function boxAround(p: LatLon, radiusM: number): [number, number, number, number] {
  const dLat = (radiusM * BOX_MARGIN) / METRES_PER_DEGREE;
  const dLon = dLat / Math.max(Math.cos(Math.min(89, Math.abs(p.lat)) * RAD), 1e-6);
  return [p.lon - dLon, p.lat - dLat, p.lon + dLon, p.lat + dLat];
}

