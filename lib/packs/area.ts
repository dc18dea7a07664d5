/**
 * The area of a pack from the user's words: `w,s,e,n` (a `--bbox` or a `bbox=` query) or a GeoJSON
 * file of polygons (a Polygon, MultiPolygon, Feature or FeatureCollection of them). Errors name where
 * the bad input is and what was expected.
 */
import { UserError } from '../errors.ts';
import { MAX_LATITUDE, type BBox } from '../tile-math.ts';
import type { Area, PolygonRings } from '../tile-cover.ts';

/** Parse `w,s,e,n` in degrees (west < east, south < north); `where` names the flag or parameter. */
export function parseBBox(text: string, where = '--bbox'): BBox {
  const n = text.split(',').map((v) => (v.trim() === '' ? NaN : Number(v.trim())));
  const ok = n.length === 4 && n.every(Number.isFinite) && n[0] >= -180 && n[2] <= 180 && n[1] >= -90 && n[3] <= 90 && n[0] < n[2] && n[1] < n[3];
  if (!ok) throw new UserError(`${where}: expected west,south,east,north in degrees with west < east and south < north (got "${text}")`, { exitCode: 2 });
  return [n[0], n[1], n[2], n[3]];
}

type Json = unknown;

function isPosition(p: Json): p is [number, number] {
  return Array.isArray(p) && p.length >= 2 && typeof p[0] === 'number' && typeof p[1] === 'number' && Number.isFinite(p[0]) && Number.isFinite(p[1]);
}

/** One polygon's rings, checked; `at` names it in errors. */
function polygonOf(coords: Json, where: string, at: string): PolygonRings {
  if (!Array.isArray(coords) || coords.length === 0) throw new UserError(`${where}: ${at}.coordinates: expected an array of linear rings`);
  return coords.map((ring: Json, i: number) => {
    if (!Array.isArray(ring) || ring.length < 4 || !ring.every(isPosition)) {
      throw new UserError(`${where}: ${at}.coordinates[${i}]: expected a linear ring of at least 4 [lon, lat] positions`);
    }
    for (const [lon, lat] of ring as [number, number][]) {
      if (lon < -180 || lon > 180 || lat < -90 || lat > 90) throw new UserError(`${where}: ${at}.coordinates[${i}]: position [${lon}, ${lat}] is outside -180…180, -90…90`);
    }
    return (ring as [number, number][]).map(([lon, lat]) => [lon, lat] as const);
  });
}

/** The polygons of a GeoJSON object (recursing into features); `at` is its JSON path. */
function polygonsOf(g: Json, where: string, at: string): PolygonRings[] {
  const o = g as { type?: unknown; coordinates?: Json; geometry?: Json; features?: Json; geometries?: Json };
  if (o === null || typeof o !== 'object') throw new UserError(`${where}: ${at}: expected a GeoJSON object`);
  switch (o.type) {
    case 'Polygon':
      return [polygonOf(o.coordinates, where, at)];
    case 'MultiPolygon':
      if (!Array.isArray(o.coordinates)) throw new UserError(`${where}: ${at}.coordinates: expected an array of polygons`);
      return o.coordinates.map((c: Json, i: number) => polygonOf(c, where, `${at}.coordinates[${i}]`));
    case 'Feature':
      return polygonsOf(o.geometry, where, `${at}.geometry`);
    case 'FeatureCollection':
      if (!Array.isArray(o.features)) throw new UserError(`${where}: ${at}.features: expected an array`);
      return o.features.flatMap((f: Json, i: number) => polygonsOf(f, where, `${at}.features[${i}]`));
    case 'GeometryCollection':
      if (!Array.isArray(o.geometries)) throw new UserError(`${where}: ${at}.geometries: expected an array`);
      return o.geometries.flatMap((f: Json, i: number) => polygonsOf(f, where, `${at}.geometries[${i}]`));
    default:
      throw new UserError(`${where}: ${at}: expected a Polygon or MultiPolygon (or a Feature or FeatureCollection of them), got ${JSON.stringify(o.type ?? null)}`);
  }
}

/** The area of GeoJSON text (read from `where`): its polygons and their extent. */
export function areaFromGeoJson(text: string, where: string): Area {
  let g: Json;
  try {
    g = JSON.parse(text);
  } catch (e) {
    throw new UserError(`${where}: not valid JSON (${(e as Error).message})`);
  }
  const polygons = polygonsOf(g, where, '$');
  if (polygons.length === 0) throw new UserError(`${where}: no polygon in it`);
  let [w, s, e, n] = [Infinity, Infinity, -Infinity, -Infinity];
  for (const p of polygons) {
    for (const [lon, lat] of p[0]) {
      w = Math.min(w, lon);
      s = Math.min(s, lat);
      e = Math.max(e, lon);
      n = Math.max(n, lat);
    }
  }
  if (!(w < e && s < n)) throw new UserError(`${where}: the polygons enclose no area`);
  return { bbox: [w, s, e, n], polygons };
}

/** The area of a box. */
export function areaOfBBox(bbox: BBox): Area {
  return { bbox };
}

/** `a ∩ b`, or undefined when they do not overlap (latitudes within Web Mercator's). */
export function intersectBBox(a: BBox, b: BBox): BBox | undefined {
  const r: BBox = [Math.max(a[0], b[0]), Math.max(a[1], b[1], -MAX_LATITUDE), Math.min(a[2], b[2]), Math.min(a[3], b[3], MAX_LATITUDE)];
  return r[0] < r[2] && r[1] < r[3] ? r : undefined;
}
