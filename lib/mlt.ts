/**
 * MapLibre Tiles (MLT) from Mapbox Vector Tiles: an MVT tile is decoded with `@mapbox/vector-tile` and
 * encoded again with `@maplibre/mlt`'s `encodeTile` (MapLibre's own encoder); no code of ours reads or
 * writes either format's bytes. What is ours is the mapping between the two data models:
 * - a point feature is a Point (one point) or MultiPoint, a line a LineString or MultiLineString;
 * - a polygon feature's rings are grouped into polygons the way MapLibre groups them (a ring winding
 *   like the first ring starts a polygon, the others are its holes; a zero-area ring stays where it
 *   is), so the decoded rings come back in the MVT's order and MapLibre classifies them the same;
 * - a property column holding more than one value type (MVT allows a key to be a string in one
 *   feature and a number in the next) is written as MLT's nested column, which keeps each scalar as it
 *   is; an integer column beyond 32 bits as doubles (exact up to 2^53, and decoded as numbers, not
 *   BigInts, which MapLibre's expressions would not compare with numbers).
 */
import { register } from 'node:module';
import { VectorTile, type VectorTileFeature } from '@mapbox/vector-tile';
import type { FeatureGeometry, FeatureInput, Layer, Position, PropertyType } from '@maplibre/mlt';
import { PbfReader } from 'pbf';
import { COMPILED, packageRequire } from './package-root.ts';

/**
 * `@maplibre/mlt` ships ES modules whose relative imports leave out `.js` (fine for bundlers such as
 * maplibre-gl's and for tsx, not for Node's own resolver, so the compiled CLI could not load it): this
 * resolve hook adds `.js` to a relative import of that package's files that Node cannot find, and
 * touches nothing else. It is registered in each thread that loads this module, before the package,
 * when tilebake runs compiled (dist/); the sources run through tsx, whose resolver needs no help (and a
 * second hook chain registered in a worker thread would lose tsx's).
 */
const RESOLVE_HOOK = `export async function resolve(specifier, context, next) {
  try { return await next(specifier, context); } catch (e) {
    if (e?.code === 'ERR_MODULE_NOT_FOUND' && /^\\.\\.?\\//.test(specifier) && context.parentURL?.includes('/node_modules/@maplibre/mlt/')) return next(specifier + '.js', context);
    throw e;
  }
}`;
if (COMPILED) register(`data:text/javascript,${encodeURIComponent(RESOLVE_HOOK)}`);
const { encodeTile } = await import('@maplibre/mlt');

/** The encoder's package version: part of what an MLT tile is made with (a new encoder encodes again). */
const MLT_VERSION = (packageRequire('@maplibre/mlt/package.json') as { version: string }).version;

/** What an MLT archive's tiles were made with: bump the suffix when the mapping below changes. */
export const MLT_ENCODER = `@maplibre/mlt@${MLT_VERSION}/tilebake-1`;

/** MVT feature geometry types. */
const POINT = 1;
const LINESTRING = 2;
const POLYGON = 3;
const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;

type XY = { x: number; y: number };

/** Twice the signed area of a ring (the shoelace sum MapLibre and @mapbox/vector-tile use). */
function signedArea(ring: readonly XY[]): number {
  let sum = 0;
  for (let i = 0, j = ring.length - 1; i < ring.length; j = i++) sum += (ring[j].x - ring[i].x) * (ring[i].y + ring[j].y);
  return sum;
}

/** One ring or line as MLT positions. */
function positions(ring: readonly XY[]): Position[] {
  return ring.map((p) => [p.x, p.y]);
}

/** The rings of a polygon feature grouped into polygons, in their order (see the file's comment). */
function polygons(rings: readonly XY[][]): Position[][][] {
  const out: Position[][][] = [];
  let exteriorNegative: boolean | undefined;
  for (const ring of rings) {
    const area = signedArea(ring);
    if (area !== 0 && exteriorNegative === undefined) exteriorNegative = area < 0;
    const exterior = area !== 0 && (area < 0) === exteriorNegative;
    if (exterior || out.length === 0) out.push([positions(ring)]);
    else out[out.length - 1].push(positions(ring));
  }
  return out;
}

/** A feature's MVT geometry as an MLT geometry; throws for a feature MLT cannot hold. */
function geometryOf(f: VectorTileFeature): FeatureGeometry {
  const rings = f.loadGeometry();
  if (rings.length === 0 || rings.some((r) => r.length === 0)) throw new Error(`a feature of type ${f.type} without coordinates`);
  switch (f.type) {
    case POINT: {
      const points = rings.flatMap(positions);
      return points.length === 1 ? { type: 'Point', coordinates: points[0] } : { type: 'MultiPoint', coordinates: points };
    }
    case LINESTRING:
      return rings.length === 1 ? { type: 'LineString', coordinates: positions(rings[0]) } : { type: 'MultiLineString', coordinates: rings.map(positions) };
    case POLYGON: {
      const polys = polygons(rings);
      return polys.length === 1 ? { type: 'Polygon', coordinates: polys[0] } : { type: 'MultiPolygon', coordinates: polys };
    }
    default:
      throw new Error(`a feature of unknown geometry type ${f.type}`);
  }
}

/** Column types to pin in one layer: mixed value types nest, integers beyond 32 bits become doubles. */
function pinnedTypes(features: readonly FeatureInput[]): Record<string, PropertyType> {
  const kinds = new Map<string, Set<string>>();
  const wide = new Set<string>();
  for (const f of features) {
    for (const [k, v] of Object.entries(f.properties ?? {})) {
      let s = kinds.get(k);
      if (!s) kinds.set(k, (s = new Set()));
      s.add(typeof v);
      if (typeof v === 'number' && Number.isInteger(v) && (v < INT32_MIN || v > INT32_MAX)) wide.add(k);
    }
  }
  const pinned: Record<string, PropertyType> = {};
  for (const [k, s] of kinds) {
    if (s.size > 1) pinned[k] = 'map';
    else if (wide.has(k)) pinned[k] = 'double';
  }
  return pinned;
}

/** Encode an uncompressed MVT tile as an (uncompressed) MLT tile with the same layers, features, geometries and properties. */
export function mvtToMlt(mvt: Uint8Array): Uint8Array {
  const tile = new VectorTile(new PbfReader(mvt));
  const parts: Uint8Array[] = [];
  for (const [name, layer] of Object.entries(tile.layers)) {
    const features: FeatureInput[] = [];
    for (let i = 0; i < layer.length; i++) {
      const f = layer.feature(i);
      let geometry: FeatureGeometry;
      try {
        geometry = geometryOf(f);
      } catch (e) {
        throw new Error(`layer "${name}", feature ${i}: ${(e as Error).message}`, { cause: e });
      }
      features.push({ id: f.id, geometry, properties: f.properties });
    }
    const l: Layer = { name, extent: layer.extent, features };
    // An MLT tile is its layers one after another: each is encoded with its own column types.
    parts.push(encodeTile([l], { propertyTypes: pinnedTypes(features) }));
  }
  return parts.length === 1 ? parts[0] : Buffer.concat(parts);
}
