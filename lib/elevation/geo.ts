/** Lines for /height and static maps: resampled along great circles as Valhalla does, and encoded polylines. */
import { cumulativeDistances, haversine, type LatLon } from '../geo-distance.ts';

const RAD = Math.PI / 180;

/** The point at fraction `f` (0..1) of the great circle from `a` to `b` (spherical interpolation). */
export function interpolateGreatCircle(a: LatLon, b: LatLon, f: number): LatLon {
  const lat1 = a.lat * RAD, lon1 = a.lon * RAD, lat2 = b.lat * RAD, lon2 = b.lon * RAD;
  const x1 = Math.cos(lat1) * Math.cos(lon1), y1 = Math.cos(lat1) * Math.sin(lon1), z1 = Math.sin(lat1);
  const x2 = Math.cos(lat2) * Math.cos(lon2), y2 = Math.cos(lat2) * Math.sin(lon2), z2 = Math.sin(lat2);
  const dot = Math.min(1, Math.max(-1, x1 * x2 + y1 * y2 + z1 * z2));
  const omega = Math.acos(dot);
  if (omega < 1e-12) return { lat: a.lat + (b.lat - a.lat) * f, lon: a.lon + (b.lon - a.lon) * f };
  const s = Math.sin(omega);
  const k1 = Math.sin((1 - f) * omega) / s, k2 = Math.sin(f * omega) / s;
  const x = k1 * x1 + k2 * x2, y = k1 * y1 + k2 * y2, z = k1 * z1 + k2 * z2;
  return { lat: Math.atan2(z, Math.hypot(x, y)) / RAD, lon: Math.atan2(y, x) / RAD };
}

/** Number of points `resample` would return (without building them), for limit checks. */
export function resampledCount(points: readonly LatLon[], spacing: number): number {
  if (points.length < 2) return points.length;
  const total = cumulativeDistances(points)[points.length - 1];
  return Math.floor(total / spacing) + 2;
}

/**
 * Resample a line every `spacing` metres along its great-circle segments, as Valhalla does:
 * the first point, then one point each `spacing` metres, and always the last point.
 * The original vertices in between are not kept.
 */
export function resample(points: readonly LatLon[], spacing: number): LatLon[] {
  if (points.length < 2) return points.map((p) => ({ lat: p.lat, lon: p.lon }));
  const out: LatLon[] = [{ lat: points[0].lat, lon: points[0].lon }];
  let carried = 0; // distance walked since the last emitted point
  for (let i = 1; i < points.length; i++) {
    const a = points[i - 1], b = points[i];
    const seg = haversine(a, b);
    let along = spacing - carried; // position of the next sample on this segment
    while (along <= seg) {
      out.push(interpolateGreatCircle(a, b, seg === 0 ? 0 : along / seg));
      along += spacing;
    }
    carried = seg - (along - spacing);
  }
  const last = points[points.length - 1];
  const prev = out[out.length - 1];
  // The last point is always kept; drop a sample that coincides with it (within a millimetre).
  if (out.length > 1 && haversine(prev, last) < 1e-3) out.pop();
  out.push({ lat: last.lat, lon: last.lon });
  return out;
}

/** Coordinate precision of an encoded polyline: 5 (Google) or 6 (Valhalla default) decimals. */
export type PolylinePrecision = 5 | 6;

/** Encode points as a Google-style polyline (lat, lon order) with 5 or 6 decimals. */
export function encodePolyline(points: readonly LatLon[], precision: PolylinePrecision = 6): string {
  const factor = 10 ** precision;
  let out = '';
  let pLat = 0, pLon = 0;
  const put = (v: number) => {
    let n = v < 0 ? ~(v << 1) : v << 1;
    while (n >= 0x20) {
      out += String.fromCharCode((0x20 | (n & 0x1f)) + 63);
      n >>>= 5;
    }
    out += String.fromCharCode(n + 63);
  };
  for (const p of points) {
    const lat = Math.round(p.lat * factor), lon = Math.round(p.lon * factor);
    put(lat - pLat);
    put(lon - pLon);
    pLat = lat;
    pLon = lon;
  }
  return out;
}

/** Thrown by `decodePolyline` as soon as the line has more points than its `maxPoints`. */
export class TooManyPointsError extends Error {
  constructor(readonly maxPoints: number) {
    super(`more than ${maxPoints} points`);
    this.name = 'TooManyPointsError';
  }
}

/**
 * Decode a Google-style polyline; throws Error with the offending offset when malformed, and
 * TooManyPointsError while decoding once more than `maxPoints` points were read (the work stays
 * bounded by the limit, not by the length of the string).
 */
export function decodePolyline(s: string, precision: PolylinePrecision = 6, maxPoints = Infinity): LatLon[] {
  const factor = 10 ** precision;
  const values: number[] = [];
  const maxValues = 2 * maxPoints;
  let i = 0;
  while (i < s.length) {
    if (values.length >= maxValues) throw new TooManyPointsError(maxPoints);
    let shift = 0, result = 0, byte: number;
    do {
      if (i >= s.length) throw new Error(`truncated value at character ${i}`);
      byte = s.charCodeAt(i) - 63;
      if (byte < 0 || byte > 0x3f) throw new Error(`invalid character ${JSON.stringify(s[i])} at ${i}`);
      i++;
      result += (byte & 0x1f) * 2 ** shift;
      shift += 5;
      if (shift > 35) throw new Error(`value too long at character ${i}`);
    } while (byte >= 0x20);
    values.push(result % 2 === 1 ? -(result + 1) / 2 : result / 2);
  }
  if (values.length % 2 !== 0) throw new Error('odd number of coordinates');
  const out: LatLon[] = [];
  let lat = 0, lon = 0;
  for (let k = 0; k < values.length; k += 2) {
    lat += values[k];
    lon += values[k + 1];
    out.push({ lat: lat / factor, lon: lon / factor });
  }
  return out;
}
