/**
 * Polygon pieces cut for their tiles (cut.ts) as those tiles' MVT features, written through lib/mvt.ts
 * without a tilemaker run: what tilemaker 2.2 does with a shapefile polygon, done on a piece GEOS
 * already clipped to its tile's clip box (the tile and tilemaker's buffer of 1/200), so that only the
 * projection, the simplification and the rounding are left:
 *
 * - coordinates in the tile's 4096 units (Web Mercator, by PROJ), floored as tilemaker's
 *   `scaleLatpLon` does (a vertex on the clip box's edge, −20.48, is at −21 as in tilemaker's tiles;
 *   canonical.ts makes a covering ring the fill rectangle either way);
 * - below z13 simplified as the profile's shapefile layers are (`SHAPE_SIMPLIFY`: 0.0001° at z12,
 *   doubling per zoom below, which is 4096² × 0.0001 / 360 = 4.66 units at every zoom) by GEOS's
 *   topology-preserving Douglas–Peucker, and rings whose perimeter is under 3 × that dropped, as
 *   tilemaker drops them;
 * - rings of fewer than three distinct points (or no area) after rounding left out, a polygon's holes
 *   with it; exterior rings clockwise on screen, holes anticlockwise (MVT 2.1).
 *
 * What differs from tilemaker's tiles of the same pieces (test/osm-ocean.test.ts measures it): tilemaker
 * floors before it simplifies and removes vertices its own way (keeping a ring's extreme vertices), so
 * below z13 the simplified outlines differ by a few units of 4096 along the coast; from z13 on, where
 * neither simplifies, the vertices are the same up to the rings' starting points. The cost is a few
 * GEOS calls per coastal tile instead of tilemaker runs (their start, the Lua profile, shapefiles).
 */
import { GEOM_TYPE, MVT_EXTENT, type RawFeature, type RawLayer } from '../../lib/mvt.ts';
import { loadGdal } from '../../lib/gdal.ts';
import { signedArea2, type Point } from './coastline.ts';
import { encodeRings } from './fill.ts';
import { SHAPE_SIMPLIFY } from './natural-earth.ts';
import type { Geometry, ShapeAttributes } from './shapes.ts';

/** The MVT version tilemaker writes. */
const MVT_VERSION = 2;
/** tilemaker drops a simplified ring whose perimeter is at most this many times the tolerance. */
const MIN_PERIMETER = 3;
/** Snaps a coordinate a rounding error below a whole unit (a tile's edge) onto it before flooring. */
const SNAP = 1e-6;

/**
 * The simplification tolerance at zoom z in tile units (0: none), from the profile's degrees: the
 * level at zoom `simplify_below − 1`, times `simplify_ratio` per zoom below, over a unit's width in degrees.
 */
export function simplifyUnits(z: number, extent = MVT_EXTENT): number {
  const { simplify_below: below, simplify_level: level, simplify_ratio: ratio } = SHAPE_SIMPLIFY;
  if (z >= below) return 0;
  const degrees = level * ratio ** (below - 1 - z);
  return degrees / (360 / 2 ** z / extent);
}

type Coordinates = number[][][]; // a polygon: rings of [x, y]

/** The rings of a polygon, as arrays of [x, y]. */
const ringsOf = (p: import('gdal-async').Polygon): Coordinates => p.rings.map((r) => r.points.toArray().map((pt) => [pt.x, pt.y]));

/** The polygons of a (multi)polygon (read through gdal-async's arrays: a third of the time of its GeoJSON). */
function polygonsOf(g: Geometry): Coordinates[] {
  const base = g.wkbType & 0xff;
  if (base === 3) return [ringsOf(g as import('gdal-async').Polygon)];
  if (base === 6) return (g as import('gdal-async').MultiPolygon).children.map((c) => ringsOf(c as import('gdal-async').Polygon));
  throw new Error(`a polygon piece is a ${g.name}`);
}

const perimeter = (r: number[][]) => r.slice(1).reduce((s, p, i) => s + Math.hypot(p[0] - r[i][0], p[1] - r[i][1]), 0);

/** A ring floored to whole units, repeated points and the closing point dropped; undefined when fewer than 3 points or no area are left. */
function flooredRing(r: number[][], exterior: boolean): Point[] | undefined {
  const out: Point[] = [];
  for (const [fx, fy] of r) {
    const p: Point = [Math.floor(fx + SNAP), Math.floor(fy + SNAP)];
    const last = out[out.length - 1];
    if (!last || last[0] !== p[0] || last[1] !== p[1]) out.push(p);
  }
  while (out.length > 1 && out[0][0] === out[out.length - 1][0] && out[0][1] === out[out.length - 1][1]) out.pop();
  if (out.length < 3) return undefined;
  const area = signedArea2(out);
  if (area === 0) return undefined;
  // Exteriors positive in tile coordinates (y down: clockwise on screen), holes negative.
  return (area > 0) === exterior ? out : out.reverse();
}

let projection: Promise<import('gdal-async').CoordinateTransformation> | undefined;

/**
 * Lon/lat to the units of the world as one tile of `MVT_EXTENT` (x east from the antimeridian, y
 * north from the Mercator square's southern edge: the tile grid's y negated), by PROJ (GDAL): the
 * spherical Mercator of lib/tile-math.ts on a sphere whose circumference is the world's units, done on
 * whole geometries at once (reading their coordinates out costs more than projecting them). Made once.
 */
function worldUnits(): Promise<import('gdal-async').CoordinateTransformation> {
  projection ??= loadGdal().then((gdal) => {
    const r = MVT_EXTENT / (2 * Math.PI);
    const sphere = `+a=${r} +b=${r} +no_defs`;
    return new gdal.CoordinateTransformation(
      gdal.SpatialReference.fromProj4(`+proj=longlat ${sphere}`),
      gdal.SpatialReference.fromProj4(`+proj=merc ${sphere} +lat_ts=0 +lon_0=0 +k=1 +x_0=${r * Math.PI} +y_0=${r * Math.PI} +units=m`),
    );
  });
  return projection;
}

/**
 * The feature of a polygon piece (lon/lat, clipped to tile z/x/y's clip box) in that tile, with the
 * given attributes; undefined when nothing of it is left after simplifying and rounding. GEOS's calls
 * here are synchronous (a few milliseconds each): gdal-async's synchronous calls would wait for
 * asynchronous ones anyway.
 */
export async function pieceFeature(piece: Geometry, attributes: ShapeAttributes, z: number, x: number, y: number, extent = MVT_EXTENT): Promise<RawFeature | undefined> {
  let projected = piece.clone();
  projected.transform(await worldUnits());
  // The world's units are the tile's at z0: at zoom z, 2^z × extent / MVT_EXTENT tile units each.
  const scale = (2 ** z * extent) / MVT_EXTENT;
  const tolerance = simplifyUnits(z, extent);
  if (tolerance > 0) projected = projected.simplifyPreserveTopology(tolerance / scale);
  if (projected.isEmpty()) return undefined;
  // To the tile's units, y down.
  const [x0, y0] = [x * extent, (2 ** z - y) * extent];
  let polygons = polygonsOf(projected).map((p) => p.map((r) => r.map(([px, py]) => [px * scale - x0, y0 - py * scale])));
  if (tolerance > 0) {
    const kept = (r: number[][]) => perimeter(r) > MIN_PERIMETER * tolerance;
    polygons = polygons.flatMap(([outer, ...holes]) => (kept(outer) ? [[outer, ...holes.filter(kept)]] : []));
  }
  const rings: Point[][] = [];
  for (const [outer, ...holes] of polygons) {
    const exterior = outer && flooredRing(outer, true);
    if (!exterior) continue;
    rings.push(exterior);
    for (const h of holes) {
      const hole = flooredRing(h, false);
      if (hole) rings.push(hole);
    }
  }
  if (rings.length === 0) return undefined;
  return { type: GEOM_TYPE.Polygon, geometry: encodeRings(rings), tags: new Map(Object.entries(attributes)) };
}

/** Features in one layer, as a tile's layers (none when there are no features). */
export function pieceLayers(name: string, features: RawFeature[], extent = MVT_EXTENT): RawLayer[] {
  return features.length > 0 ? [{ name, version: MVT_VERSION, extent, features }] : [];
}
