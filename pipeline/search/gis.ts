/**
 * The search index of a GIS tileset (a vector file GDAL reads, or a PostGIS database; docs/search.md):
 * every feature of the indexed layers with a value in the search fields is an entry, named by the first
 * of them it has (the others are other names it is found by; a `name:xx` or `name_xx` field is its name
 * in language xx). The layers are the tiles' (pipeline/sources/gis-layers.ts planLayers: the same checks
 * and messages), read through GDAL (PostGIS through its PG driver, the password never shown) and
 * reprojected by GDAL to longitude/latitude; a line's or polygon's point and box are GEOS's
 * (ST_PointOnSurface, pipeline/search/geometry.ts, as for OSM objects). The entries are written by the
 * index writer (lib/search/write.ts) into `output`, replaced only once complete.
 */
import { stat } from 'node:fs/promises';
import { connectionUrl, withoutPassword } from '../../lib/database-url.ts';
import { isUserError, UserError } from '../../lib/errors.ts';
import { executeSql, loadGdal, type Gdal } from '../../lib/gdal.ts';
import { logLine, stepsText, timeStep, type Step } from '../../lib/progress.ts';
import type { SearchEntry } from '../../lib/search/schema.ts';
import { writeIndexFile } from '../../lib/search/write.ts';
import { jsonPath, type GisSearchConfig, type TilesetConfig } from '../config/index.ts';
import { openVector, shownSource } from '../sources/gis.ts';
import { listed, planLayers, type GisPlace } from '../sources/gis-layers.ts';
import { entryIds, writeEntries, type SearchBuildResult } from './build.ts';
import { plainKind } from './classify.ts';
import { linesOf, type StreetEntry } from './entries.ts';
import { GeometryWork, type Located } from './geometry.ts';

type Dataset = import('gdal-async').Dataset;
type Layer = import('gdal-async').Layer;

/** Version of how GIS features become entries; bump when it changes, so indexes are built again. */
export const GIS_SEARCH_VERSION = 'tilebake-search-gis/1';

/** Where a tileset's search messages point: its prefix (`tileset "x" (source)`) and `$.tilesets.x.search`. */
export interface SearchPlace {
  prefix: string;
  field: string;
}

/** A feature's names: the name shown, by language, and the other names it is found by. */
export interface FeatureNames {
  name: string;
  names: Record<string, string>;
  otherNames: string[];
}

/** A field holding the name in a language: `name:de`, `name_de`, `name:zh-Hant`. */
const LANGUAGE_FIELD = /^name[:_]([a-z]{2,3}(?:-[A-Za-z]{2,4})?)$/i;

/**
 * The fields searched in layer `layer` of fields `have`: the configured ones (each must be a field of
 * it), or for `"search": true` its `name` field in any case (none when it has no such field).
 */
export function searchFieldsOf(have: readonly string[], search: GisSearchConfig, layer: string, place: SearchPlace): string[] {
  if (!search.fields) {
    const name = have.find((f) => f === 'name') ?? have.find((f) => f.toLowerCase() === 'name');
    return name ? [name] : [];
  }
  search.fields.forEach((f, i) => {
    if (!have.includes(f)) throw new UserError(`${place.prefix}: ${place.field}.fields[${i}]: no field "${f}" in layer "${layer}" (its fields: ${listed([...have])})`);
  });
  return search.fields;
}

/** The layers of the tiles indexed: `search.layers` (each one of the tiles'), else every one. */
export function searchedLayers(tiles: readonly string[], search: GisSearchConfig, place: SearchPlace): string[] {
  if (!search.layers) return [...tiles];
  search.layers.forEach((l, i) => {
    if (!tiles.includes(l)) throw new UserError(`${place.prefix}: ${place.field}.layers[${i}]: no layer "${l}" in the tiles (their layers: ${listed([...tiles])})`);
  });
  return tiles.filter((l) => search.layers!.includes(l));
}

/** A field's value as text ('' for none). */
function text(v: unknown): string {
  if (v === null || v === undefined) return '';
  return (Array.isArray(v) ? v.join(';') : String(v)).trim();
}

/** The names of a feature from its values of the search fields, in their order; undefined when it has none. */
export function featureNames(values: readonly (readonly [string, unknown])[], languages: readonly string[]): FeatureNames | undefined {
  const present = values.map(([field, v]) => [field, text(v)] as const).filter(([, v]) => v !== '');
  if (present.length === 0) return undefined;
  const name = present[0][1];
  const names: Record<string, string> = {};
  for (const [field, v] of present) {
    const code = LANGUAGE_FIELD.exec(field)?.[1];
    const lang = code && languages.find((l) => l.toLowerCase() === code.toLowerCase());
    if (lang) names[lang] ??= v;
  }
  const otherNames = [...new Set(present.slice(1).map(([, v]) => v))].filter((v) => v !== name && !Object.values(names).includes(v));
  return { name, names, otherNames };
}

/** One feature read for the index: where it is (a point's own position, else its geometry for GEOS). */
interface ReadFeature {
  layer: string;
  fid: number;
  names: FeatureNames;
  point?: { lon: number; lat: number };
  geometryJson?: string;
}

/** Longitude/latitude in that axis order, whatever GDAL's EPSG:4326 says. */
const LON_LAT = 'OGC:CRS84';

/** The features of `layer` with a name in `fields`, reprojected to longitude/latitude (`skipped`: those without a geometry GDAL can place). */
function readLayer(gdal: Gdal, layer: Layer, name: string, fields: string[], languages: readonly string[], out: ReadFeature[]): number {
  const transform = layer.srs ? new gdal.CoordinateTransformation(layer.srs, gdal.SpatialReference.fromUserInput(LON_LAT)) : undefined;
  let skipped = 0;
  for (const f of layer.features) {
    const names = featureNames(fields.map((k) => [k, f.fields.get(k)] as const), languages);
    if (!names) continue;
    const g = f.getGeometry();
    if (!g || g.isEmpty()) {
      skipped++;
      continue;
    }
    try {
      if (transform) g.transform(transform);
    } catch {
      skipped++;
      continue;
    }
    const base = { layer: name, fid: f.fid, names };
    if (g instanceof gdal.Point) out.push({ ...base, point: { lon: g.x, lat: g.y } });
    else out.push({ ...base, geometryJson: g.toJSON() });
  }
  return skipped;
}

/** Read the named features of the tileset's indexed layers from the open source `ds`. */
function readFeatures(gdal: Gdal, ds: Dataset, t: TilesetConfig, search: GisSearchConfig, languages: readonly string[], place: GisPlace & SearchPlace, database: boolean): { features: ReadFeature[]; layers: string[]; skipped: number } {
  // The tiles' layers, checked as the tiles check them; every field of each (a search field need not be in the tiles).
  const layers = t.layers && Object.fromEntries(Object.entries(t.layers).map(([k, l]) => [k, { ...l, fields: undefined }]));
  const plans = planLayers(gdal, ds, { layers, minzoom: t.minzoom, maxzoom: t.maxzoom, database, place: { prefix: place.prefix, field: jsonPath(['tilesets', t.id]) } });
  const chosen = searchedLayers(plans.map((p) => p.name), search, place);
  const features: ReadFeature[] = [];
  const indexed: string[] = [];
  let skipped = 0;
  for (const p of plans.filter((x) => chosen.includes(x.name))) {
    const layer = 'layer' in p.from ? ds.layers.get(p.from.layer) : executeSql(ds, p.from.sql);
    const fields = searchFieldsOf(layer.fields.getNames(), search, p.name, place);
    if (fields.length === 0) continue;
    indexed.push(p.name);
    skipped += readLayer(gdal, layer, p.name, fields, languages, features);
  }
  if (indexed.length === 0) {
    throw new UserError(`${place.prefix}: ${place.field}: no layer has a "name" field (layers: ${listed(chosen)}): list the fields to search, {"fields": ["…"]}`);
  }
  return { features, layers: indexed, skipped };
}

/** The entries of `features` (`placed`: GEOS's point and box of those that are no point), a street with its lines as its way. */
export function gisEntries(features: readonly ReadFeature[], placed: ReadonlyMap<number, Located>, kind: GisSearchConfig['kind']): { entries: SearchEntry[]; streets: StreetEntry[] } {
  const { type, importance } = plainKind(kind);
  const entries: SearchEntry[] = [];
  const streets: StreetEntry[] = [];
  const keys = new Set<string>();
  features.forEach((f, ref) => {
    const at = f.point ?? placed.get(ref);
    if (!at) return;
    // `<layer>:<fid>`; a query's rows may repeat a FID: then its row too.
    let key = `${f.layer}:${f.fid}`;
    if (keys.has(key)) key = `${key}#${ref}`;
    keys.add(key);
    const { name, names, otherNames } = f.names;
    const entry: SearchEntry = { key, kind, type, layer: f.layer, fid: f.fid, name, names, otherNames, lon: at.lon, lat: at.lat, bbox: f.point ? undefined : placed.get(ref)?.bbox, importance };
    const lines = kind === 'street' && f.geometryJson ? linesOf(JSON.parse(f.geometryJson)) : [];
    // A street's lines are its way (GET /reverse measures the distance to them).
    if (lines.length) streets.push({ entry, ways: [{ way: streets.length + 1, name, names, otherNames, highway: '', settlement: '', lines }] });
    else entries.push(entry);
  });
  return { entries, streets };
}

/** Options of a GIS tileset's index build. */
export interface GisSearchOptions {
  /** The `name:xx` languages a field may hold (the tileset's). */
  languages: readonly string[];
  /** Prefix of progress lines. */
  label: string;
  /** The previous version's index: entries keep their ids. */
  previous?: string;
}

/** Build the search index of GIS tileset `t` (a file, or a database when `database`) into `output` (see the module comment). */
export async function buildGisSearchIndex(t: TilesetConfig & { search: { gis: GisSearchConfig } }, database: boolean, output: string, opts: GisSearchOptions): Promise<SearchBuildResult> {
  const t0 = performance.now();
  const place = { prefix: `tileset "${t.id}" (${shownSource(t.source)})`, field: jsonPath(['tilesets', t.id, 'search']) };
  const gdal = await loadGdal();
  const steps: Step[] = [];
  const read = await timeStep(steps, 'read', async () => {
    const { ds } = openVector(gdal, database ? connectionUrl(t.source) : t.source, database, place, t.source);
    try {
      return readFeatures(gdal, ds, t, t.search.gis, opts.languages, place, database);
    } catch (e) {
      if (isUserError(e)) throw new UserError(withoutPassword(e.message, t.source), { cause: e });
      throw e;
    } finally {
      ds.close();
    }
  });
  const placed = await timeStep(steps, 'geometry', async () => {
    const work = GeometryWork.create();
    try {
      work.load('feat', function* () {
        for (let ref = 0; ref < read.features.length; ref++) {
          const g = read.features[ref].geometryJson;
          if (g) yield { ref, geometry: g };
        }
      }());
      return work.featurePoints();
    } finally {
      work.close();
    }
  });
  const content = gisEntries(read.features, placed, t.search.gis.kind);
  const keep = entryIds(opts.previous);
  await timeStep(steps, 'write', () => writeIndexFile(output, { languages: JSON.stringify(opts.languages) }, (w) => writeEntries(w, content, keep)));
  const entries = content.entries.length + content.streets.length;
  const bytes = (await stat(output)).size;
  const seconds = (performance.now() - t0) / 1000;
  const unplaced = read.skipped + read.features.length - entries;
  logLine(`${opts.label}: search index of ${entries} entries from layer${read.layers.length === 1 ? '' : 's'} ${read.layers.join(', ')}${unplaced ? ` (${unplaced} named features without a geometry GDAL could place left out)` : ''}, ${bytes} bytes in ${seconds.toFixed(1)} s (${stepsText(steps)})`);
  return { entries, bytes, seconds, steps };
}
