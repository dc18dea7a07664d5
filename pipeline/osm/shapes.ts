/**
 * Vector geometry for the OSM source's shapefile layers (GDAL/GEOS through gdal-async): boxes as
 * polygons, clipping to a box, and WGS84 shapefiles tilemaker 2.2 reads, with attribute columns.
 */
import type { BBox } from '../../lib/tile-math.ts';
import { loadGdal, type Gdal } from '../../lib/gdal.ts';

export type Geometry = import('gdal-async').Geometry;

/** The geometry kind of a shapefile (one per file). */
export type ShapeKind = 'polygon' | 'line' | 'point';
/** Attribute values of one shape (strings and whole numbers: dBASE columns). */
export type ShapeAttributes = Record<string, string | number>;
/** One shape to write. */
export interface Shape {
  geometry: Geometry;
  attributes: ShapeAttributes;
}

/** The box as a polygon. */
export async function boxPolygon([w, s, e, n]: BBox): Promise<Geometry> {
  const gdal = await loadGdal();
  return gdal.Geometry.fromWKT(`POLYGON((${w} ${s},${e} ${s},${e} ${n},${w} ${n},${w} ${s}))`);
}

/** OGR base types (wkb codes without 2.5D/M flags) of each kind, single and multi. */
const KIND_TYPES: Record<ShapeKind, number[]> = { point: [1, 4], line: [2, 5], polygon: [3, 6] };

/**
 * The parts of `g` of the given kind, as one geometry (or undefined when none): clipping a polygon
 * to a box can leave stray lines or points where they touch, which a polygon shapefile cannot hold.
 */
export async function ofKind(g: Geometry | null | undefined, kind: ShapeKind): Promise<Geometry | undefined> {
  if (!g || g.isEmpty()) return undefined;
  const gdal = await loadGdal();
  const base = g.wkbType & 0xff;
  if (KIND_TYPES[kind].includes(base)) return g;
  if (base !== 7) return undefined;
  const parts: Geometry[] = [];
  for (const c of (g as import('gdal-async').GeometryCollection).children) {
    const part = await ofKind(c, kind);
    if (part) parts.push(part);
  }
  if (parts.length === 0) return undefined;
  const multi = kind === 'polygon' ? new gdal.MultiPolygon() : kind === 'line' ? new gdal.MultiLineString() : new gdal.MultiPoint();
  for (const p of parts) {
    if ((p.wkbType & 0xff) === KIND_TYPES[kind][1]) for (const c of (p as import('gdal-async').MultiPolygon).children) multi.children.add(c);
    else multi.children.add(p);
  }
  return multi;
}

/** `g` clipped to `area` (a polygon), keeping only parts of `kind`; an invalid polygon GEOS refuses is repaired first. */
export async function clipTo(g: Geometry, area: Geometry, kind: ShapeKind): Promise<Geometry | undefined> {
  // The Async variants run in libuv's pool: the extract's tilemaker run is started meanwhile.
  let clipped: Geometry;
  try {
    clipped = await g.intersectionAsync(area);
  } catch (e) {
    if (kind !== 'polygon') throw e;
    clipped = await (await g.makeValidAsync()).intersectionAsync(area);
  }
  return ofKind(clipped, kind);
}

const OGR_TYPES = (gdal: Gdal): Record<ShapeKind, number> => ({ point: gdal.wkbPoint, line: gdal.wkbLineString, polygon: gdal.wkbPolygon });

/**
 * Write shapes as a WGS84 shapefile at `path` with the given columns (string or integer, in
 * order). Shapefiles hold one kind of geometry; multi-part geometries of that kind are fine.
 */
export async function writeShapefile(path: string, kind: ShapeKind, columns: Record<string, 'string' | 'integer'>, shapes: Shape[]): Promise<void> {
  const gdal = await loadGdal();
  const ds = gdal.open(path, 'w', 'ESRI Shapefile');
  try {
    // UTF-8 strings as they are (tilemaker reads the bytes; the driver's default, ISO-8859-1, garbled "Zürich").
    const layer = ds.layers.create('shapes', gdal.SpatialReference.fromEPSG(4326), OGR_TYPES(gdal)[kind], ['ENCODING=UTF-8']);
    for (const [name, type] of Object.entries(columns)) layer.fields.add(new gdal.FieldDefn(name, type === 'string' ? gdal.OFTString : gdal.OFTInteger));
    for (const s of shapes) {
      const f = new gdal.Feature(layer);
      f.setGeometry(s.geometry);
      for (const [k, v] of Object.entries(s.attributes)) f.fields.set(k, v);
      layer.features.add(f);
    }
  } finally {
    ds.close();
  }
}
