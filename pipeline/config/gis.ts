/**
 * The config of a tileset made from the user's GIS data: a vector file GDAL reads, or a PostGIS
 * database (`postgresql://…`). Its `layers` are keyed by the layer name in the tiles (what a style's
 * `source-layer` says); each comes from a file's `layer`, a PostGIS `table`, or a `sql` query (default:
 * the layer or table of the key's name). pipeline/sources/gis.ts turns them into tiles.
 */
import { z } from 'zod';
import { isDatabaseUrl } from '../../lib/database-url.ts';

/** Deepest zoom GDAL's MVT driver writes. */
export const GIS_MAX_ZOOM = 22;
/** Zoom range of a GIS tileset when the config sets none. */
export const GIS_DEFAULT_MINZOOM = 0;
export const GIS_DEFAULT_MAXZOOM = 14;

const zoomSchema = z.number().int().min(0).max(GIS_MAX_ZOOM);

/** One layer of the tiles. */
export const gisLayerSchema = z.strictObject({
  /** A file's layer this comes from (default: the key). */
  layer: z.string().min(1).optional(),
  /** A PostGIS table, `schema.table` or `table` (default: the key). */
  table: z.string().min(1).optional(),
  /** A query whose rows are the features (PostGIS: its SQL; a file: GDAL's SQL for its driver). */
  sql: z.string().min(1).optional(),
  /** Zooms this layer is written at, within the tileset's. */
  minzoom: zoomSchema.optional(),
  maxzoom: zoomSchema.optional(),
  /** The attributes kept (default: every one); `[]`: geometry only. */
  fields: z.array(z.string().min(1)).optional(),
  /** Description in the TileJSON's `vector_layers`. */
  description: z.string().optional(),
});

export type GisLayerConfig = z.infer<typeof gisLayerSchema>;

/** A GIS tileset's zooms (its defaults 0–14 where one is not set): at most GIS_MAX_ZOOM, minzoom <= maxzoom. */
export function gisZoomIssues(t: { minzoom?: number; maxzoom?: number }): GisIssue[] {
  const min = t.minzoom ?? GIS_DEFAULT_MINZOOM;
  const max = t.maxzoom ?? GIS_DEFAULT_MAXZOOM;
  if (max > GIS_MAX_ZOOM) return [{ path: ['maxzoom'], message: `expected a zoom 0–${GIS_MAX_ZOOM} for vector tiles cut by GDAL (got ${max})` }];
  if (min > max) return [{ path: ['minzoom'], message: `expected minzoom <= maxzoom (${min} > ${max}${t.maxzoom === undefined ? ', the default maxzoom' : ''})` }];
  return [];
}

/** The GIS fields of a tileset object (its `minzoom` and `maxzoom` are shared with imagery), checked by `gisConfigIssues`. */
export const gisTilesetFields = {
  /** The layers of the tiles by name (default for a file: every layer of it under its own name, every field). */
  layers: z.record(z.string().min(1), gisLayerSchema).optional(),
};

/** One problem of a GIS tileset's config: where (path below the tileset) and what. */
export interface GisIssue {
  path: (string | number)[];
  message: string;
}

/**
 * What the schema cannot check alone, for a source that is a GIS one by its config (a database URL, or
 * `layers`): the fields a source of this kind takes, and zoom ranges (GDAL writes z0–22). A file given
 * without layers is checked once its kind is known (sources/gis.ts).
 */
export function gisConfigIssues(t: { source: string; minzoom?: number; maxzoom?: number; layers?: Record<string, GisLayerConfig> }): GisIssue[] {
  const issues: GisIssue[] = [];
  const database = isDatabaseUrl(t.source);
  if (!database && !t.layers) return issues;
  issues.push(...gisZoomIssues(t));
  const min = t.minzoom ?? GIS_DEFAULT_MINZOOM;
  const max = t.maxzoom ?? GIS_DEFAULT_MAXZOOM;
  if (database && !t.layers) issues.push({ path: ['layers'], message: 'a PostGIS source lists its layers, each a "table" or a "sql" query (e.g. {"shops": {"table": "public.shops"}})' });
  if (database && t.layers && Object.keys(t.layers).length === 0) issues.push({ path: ['layers'], message: 'expected at least one layer' });
  for (const [name, l] of Object.entries(t.layers ?? {})) {
    const at = (field: string) => ['layers', name, field];
    const from = (['layer', 'table', 'sql'] as const).filter((k) => l[k] !== undefined);
    if (from.length > 1) issues.push({ path: at(from[1]), message: `a layer comes from one of "layer", "table" or "sql" (got ${from.map((k) => `"${k}"`).join(' and ')})` });
    if (database && l.layer !== undefined) issues.push({ path: at('layer'), message: 'a PostGIS layer is a "table" or a "sql" query ("layer" names a layer of a file)' });
    if (!database && l.table !== undefined) issues.push({ path: at('table'), message: `"table" names a PostGIS table; a file's layer is chosen with "layer"` });
    if (l.sql !== undefined && l.fields !== undefined) issues.push({ path: at('fields'), message: 'a "sql" layer keeps the columns its query selects (list them in the query)' });
    const lmin = l.minzoom ?? min;
    const lmax = l.maxzoom ?? max;
    if (lmin > lmax) issues.push({ path: at('minzoom'), message: `expected minzoom <= maxzoom (${lmin} > ${lmax})` });
    if (lmin < min || lmax > max) issues.push({ path: at(lmin < min ? 'minzoom' : 'maxzoom'), message: `expected a zoom within the tileset's ${min}–${max}` });
    const seen = new Set<string>();
    (l.fields ?? []).forEach((f, i) => {
      if (seen.has(f)) issues.push({ path: [...at('fields'), i], message: `"${f}" is listed twice` });
      seen.add(f);
    });
  }
  return issues;
}
