/**
 * The layers of a GIS tileset, checked against its source (a vector file or a PostGIS database opened
 * by GDAL) and written as one OGR VRT document: each VRT layer is a layer of the tiles, named as in the
 * tiles, reading a file's layer, a table or a query, with only the configured fields (an OGR SQL
 * `SELECT` keeps their types) and WGS 84 for a layer that names no CRS. GDAL's MVT driver then reads
 * that document (pipeline/sources/gis.ts). Every problem is a UserError naming the config field.
 */
import { UserError } from '../../lib/errors.ts';
import { GIS_DEFAULT_MAXZOOM, GIS_DEFAULT_MINZOOM, type GisLayerConfig } from '../config/gis.ts';
import { executeSql } from '../../lib/gdal.ts';

type Gdal = typeof import('gdal-async');
type Dataset = import('gdal-async').Dataset;
type Layer = import('gdal-async').Layer;

/** Open options GDAL's CSV driver gets: which columns hold coordinates (or WKT), and typed columns. */
export const CSV_OPEN_OPTIONS: Record<string, string> = {
  X_POSSIBLE_NAMES: 'x,lon,lng,long,longitude,easting',
  Y_POSSIBLE_NAMES: 'y,lat,latitude,northing',
  GEOM_POSSIBLE_NAMES: 'wkt,geom,geometry,the_geom,wkb_geometry',
  KEEP_GEOM_COLUMNS: 'NO',
  AUTODETECT_TYPE: 'YES',
};

/** The CRS assumed for a layer that names none (CSV, GeoJSON, a shapefile without .prj). */
const ASSUMED_SRS = 'EPSG:4326';

/** Where a GIS tileset's messages point: the tileset, its source as shown, and its config path. */
export interface GisPlace {
  /** `tileset "city" (city.gpkg)` or the source alone: the start of every message. */
  prefix: string;
  /** The tileset's JSON path in the config (`$.tilesets.city`), or undefined outside a build. */
  field?: string;
}

/** A GDAL message on one line (PostgreSQL's `LINE 1: …` echo and caret dropped, the hint kept). */
export function oneLine(message: string): string {
  const lines = message
    .split(/\r?\n/)
    .map((l) => l.trim().replace(/\s+/g, ' ').replace(/^(ERROR|FATAL):\s*/, ''))
    .filter((l) => l && !/^LINE \d+:/.test(l) && l !== '^' && !/^PQconnectdb failed\.?$/.test(l));
  // A line ending in ':' runs on into the next; the others are joined by '; '.
  return lines.reduce((s, l) => (!s ? l : s.endsWith(':') ? `${s} ${l}` : `${s.replace(/\.$/, '')}; ${l}`), '');
}

/** One layer of the tiles, resolved against the source. */
export interface LayerPlan {
  /** The layer's name in the tiles. */
  name: string;
  minzoom: number;
  maxzoom: number;
  description?: string;
  /** What the VRT reads: a layer of the source, or a statement and its dialect. */
  from: { layer: string } | { sql: string; dialect?: string };
  /** The source layer names no CRS (WGS 84 assumed). */
  assumedSrs: boolean;
}

/** `$.tilesets.x.layers.y.fields[0]: ` (or nothing outside a build). */
function at(place: GisPlace, ...path: (string | number)[]): string {
  if (!place.field) return '';
  const rest = path.map((k) => (typeof k === 'number' ? `[${k}]` : /^[A-Za-z0-9_$-]+$/.test(k) ? `.${k}` : `[${JSON.stringify(k)}]`)).join('');
  return `${place.field}${rest}: `;
}

/** An identifier quoted for OGR SQL. */
const quoted = (id: string) => `"${id.replace(/"/g, '""')}"`;

/** The names of a dataset's layers, for messages. */
function layerNames(ds: Dataset): string[] {
  return ds.layers.map((l) => l.name);
}

/** `a, b, c` (at most 12, then `…`). */
export function listed(names: string[]): string {
  return names.length === 0 ? 'none' : names.slice(0, 12).join(', ') + (names.length > 12 ? `, … (${names.length})` : '');
}

/** The source layer `name`, or a UserError listing those there are. */
function sourceLayer(gdal: Gdal, ds: Dataset, name: string, place: GisPlace, path: (string | number)[], database: boolean): Layer {
  let layer: Layer | null = null;
  gdal.lastError = null;
  try {
    layer = ds.layers.get(name);
  } catch {
    layer = null;
  }
  if (layer) return layer;
  const why = (gdal.lastError as { message?: string } | null)?.message;
  if (database) {
    throw new UserError(`${place.prefix}: ${at(place, ...path)}no table "${name}" with a geometry column${why ? ` (${oneLine(why)})` : ''} (tables with geometry: ${listed(layerNames(ds))})`);
  }
  throw new UserError(`${place.prefix}: ${at(place, ...path)}no layer "${name}" in the source (its layers: ${listed(layerNames(ds))})`);
}

/** The layer's geometry must exist; returns whether it names no CRS (checked to be longitude/latitude then). */
function checkGeometry(layer: Layer, gdal: Gdal, place: GisPlace, path: (string | number)[], what: string): boolean {
  if (layer.geomType === gdal.wkbNone) {
    const csv = layer.ds?.driver?.description === 'CSV' ? ' (a CSV needs longitude/latitude columns, e.g. "lon" and "lat", or a WKT column "wkt")' : '';
    throw new UserError(`${place.prefix}: ${at(place, ...path)}${what} has no geometry${csv}`);
  }
  if (layer.srs) return false;
  let e: { minX: number; maxX: number; minY: number; maxY: number } | undefined;
  try {
    e = layer.getExtent();
  } catch {
    e = undefined;
  }
  if (e && (e.minX < -180 || e.maxX > 180 || e.minY < -90 || e.maxY > 90)) {
    throw new UserError(`${place.prefix}: ${at(place, ...path)}${what} names no CRS and its coordinates (${e.minX.toFixed(1)}, ${e.minY.toFixed(1)} … ${e.maxX.toFixed(1)}, ${e.maxY.toFixed(1)}) are not longitude/latitude: give it one (e.g. a .prj beside a shapefile)`);
  }
  return true;
}

/** Every configured field must be one of the layer's. */
function checkFields(layer: Layer, fields: string[], place: GisPlace, path: (string | number)[], what: string): void {
  const have = layer.fields.getNames();
  fields.forEach((f, i) => {
    if (!have.includes(f)) throw new UserError(`${place.prefix}: ${at(place, ...path, 'fields', i)}no field "${f}" in ${what} (its fields: ${listed(have)})`);
  });
}

/** Run `sql` on the source to check it (and read its columns); a UserError with the database's or GDAL's reason. */
function checkedQuery(gdal: Gdal, ds: Dataset, sql: string, place: GisPlace, path: (string | number)[], database: boolean): Layer {
  gdal.lastError = null;
  try {
    return executeSql(ds, sql);
  } catch (e) {
    const why = oneLine((gdal.lastError as { message?: string } | null)?.message || (e as Error).message);
    throw new UserError(`${place.prefix}: ${at(place, ...path, 'sql')}${database ? 'PostGIS rejects the query' : 'GDAL rejects the query'}: ${why}`);
  }
}

/**
 * The layers of the tiles: those configured, each checked against `ds` (it exists, its fields exist,
 * a query runs, there is a geometry), or every layer of a file with a geometry under its own name.
 */
export function planLayers(
  gdal: Gdal,
  ds: Dataset,
  opts: { layers?: Record<string, GisLayerConfig>; minzoom?: number; maxzoom?: number; database: boolean; place: GisPlace },
): LayerPlan[] {
  const { place, database } = opts;
  const minzoom = opts.minzoom ?? GIS_DEFAULT_MINZOOM;
  const maxzoom = opts.maxzoom ?? GIS_DEFAULT_MAXZOOM;
  if (!opts.layers) {
    const all = ds.layers.map((l) => l).filter((l) => l.geomType !== gdal.wkbNone);
    if (all.length === 0) {
      const csv = ds.driver.description === 'CSV' ? ': a CSV needs longitude/latitude columns (e.g. "lon" and "lat") or a WKT column ("wkt")' : '';
      throw new UserError(`${place.prefix}: no layer with a geometry${csv} (its layers: ${listed(layerNames(ds))})`);
    }
    return all.map((l) => ({ name: l.name, minzoom, maxzoom, from: { layer: l.name }, assumedSrs: checkGeometry(l, gdal, place, ['layers'], `layer "${l.name}"`) }));
  }
  const plans: LayerPlan[] = [];
  for (const [name, c] of Object.entries(opts.layers)) {
    const path = ['layers', name];
    const base = { name, minzoom: c.minzoom ?? minzoom, maxzoom: c.maxzoom ?? maxzoom, ...(c.description ? { description: c.description } : {}) };
    if (c.sql !== undefined) {
      // The result set lives until the dataset is closed.
      const result = checkedQuery(gdal, ds, c.sql, place, path, database);
      plans.push({ ...base, from: { sql: c.sql }, assumedSrs: checkGeometry(result, gdal, place, [...path, 'sql'], 'the query') });
      continue;
    }
    const source = c.table ?? c.layer ?? name;
    const what = database ? `table "${source}"` : `layer "${source}"`;
    const layer = sourceLayer(gdal, ds, source, place, [...path, database ? 'table' : 'layer'], database);
    const assumedSrs = checkGeometry(layer, gdal, place, path, what);
    if (!c.fields) {
      plans.push({ ...base, from: { layer: source }, assumedSrs });
      continue;
    }
    checkFields(layer, c.fields, place, path, what);
    // OGR SQL keeps the fields' types (a VRT <Field> would make each a string); no field: the geometry alone.
    const columns = c.fields.length ? c.fields.map(quoted).join(', ') : 'FID';
    plans.push({ ...base, from: { sql: `SELECT ${columns} FROM ${quoted(source)}`, dialect: 'OGRSQL' }, assumedSrs });
  }
  return plans;
}

/** Text escaped for an XML element or attribute. */
function xml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&apos;');
}

/**
 * The OGR VRT document of `plans` over the source GDAL opens as `connection` (a path, or a database URL
 * with its password: the document stays in memory, never on disk). `openOptions` go to each layer's source.
 */
export function vrtDocument(connection: string, plans: LayerPlan[], openOptions: Record<string, string> = {}): string {
  const options = Object.entries(openOptions);
  const layers = plans.map((p) => {
    const parts = [`<SrcDataSource>${xml(connection)}</SrcDataSource>`];
    if (options.length) parts.push(`<OpenOptions>${options.map(([k, v]) => `<OOI key="${xml(k)}">${xml(v)}</OOI>`).join('')}</OpenOptions>`);
    if ('layer' in p.from) parts.push(`<SrcLayer>${xml(p.from.layer)}</SrcLayer>`);
    else parts.push(`<SrcSQL${p.from.dialect ? ` dialect="${xml(p.from.dialect)}"` : ''}>${xml(p.from.sql)}</SrcSQL>`);
    if (p.assumedSrs) parts.push(`<LayerSRS>${ASSUMED_SRS}</LayerSRS>`);
    return `<OGRVRTLayer name="${xml(p.name)}">${parts.join('')}</OGRVRTLayer>`;
  });
  return `<OGRVRTDataSource>${layers.join('')}</OGRVRTDataSource>`;
}

/** The MVT driver's per-layer configuration (its `CONF` creation option) of `plans`. */
export function mvtLayerConf(plans: LayerPlan[]): Record<string, { minzoom: number; maxzoom: number; description?: string }> {
  return Object.fromEntries(plans.map((p) => [p.name, { minzoom: p.minzoom, maxzoom: p.maxzoom, ...(p.description ? { description: p.description } : {}) }]));
}
