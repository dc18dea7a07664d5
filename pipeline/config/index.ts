import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { z } from 'zod';
import { UserError } from '../../lib/errors.ts';
import type { BBox } from '../../lib/tile-math.ts';
import { isDatabaseUrl } from '../../lib/database-url.ts';
import { KINDS, type Kind } from '../../lib/search/schema.ts';
import { elevationSchema } from './elevation.ts';
import { gisConfigIssues, gisTilesetFields, type GisLayerConfig } from './gis.ts';
import { bboxSchema, languageSchema, renderSchema, styleSchema } from './render.ts';

/** The tile encodings a vector tileset is served in: MVT always, MLT beside it when listed (pipeline/vector/mlt.ts). */
export const ENCODINGS = ['mvt', 'mlt'] as const;
export type Encoding = (typeof ENCODINGS)[number];

const encodingsSchema = z
  .array(z.enum(ENCODINGS))
  .min(1)
  .refine((e) => e.includes('mvt'), 'expected "mvt" among the encodings (MLT tiles are encoded from the MVT archive, which every tileset has)')
  .refine((e) => new Set(e).size === e.length, 'expected each encoding once');

/**
 * A search index from another tileset's extract (`source`), or a GIS tileset's from its own layers
 * (`fields`, with `kind` and `layers`; docs/search.md).
 */
const searchObjectSchema = z.strictObject({
  /** The OpenStreetMap extract indexed (a tileset of MBTiles or PMTiles made from it). */
  source: z.string().regex(/\.osm\.pbf$/i, 'expected an OpenStreetMap extract (.osm.pbf)').optional(),
  /** GIS data: the fields searched, in every indexed layer: the first one a feature has a value in is its name, the others are other names it is found by (`name:xx`/`name_xx`: its name in language xx). */
  fields: z.array(z.string().min(1)).min(1, 'expected at least one field').superRefine((fields, ctx) => {
    fields.forEach((f, i) => {
      if (fields.indexOf(f) !== i) ctx.addIssue({ code: 'custom', path: [i], message: `"${f}" is listed twice` });
    });
  }).optional(),
  /** GIS data: what the entries are (the `kind` filter of GET /search; default `poi`). */
  kind: z.enum(KINDS, { error: `expected one of ${KINDS.map((k) => `"${k}"`).join(', ')}` }).optional(),
  /** GIS data: the layers of the tiles indexed (default: every one). */
  layers: z.array(z.string().min(1)).min(1, 'expected at least one layer').optional(),
}).superRefine((s, ctx) => {
  if ((s.source === undefined) === (s.fields === undefined)) ctx.addIssue({ code: 'custom', message: 'expected {"source": "extract.osm.pbf"} or, for GIS data, {"fields": ["name", …]}' });
  for (const k of ['kind', 'layers'] as const) {
    if (s.source !== undefined && s[k] !== undefined) ctx.addIssue({ code: 'custom', path: [k], message: 'applies to the index of GIS data ({"fields": […]}), not to an extract\'s' });
  }
});

const searchSchema = z.union([z.boolean(), searchObjectSchema], { error: 'expected true, false, {"source": "extract.osm.pbf"} or, for GIS data, {"fields": ["name", …], "kind"?, "layers"?}' });

/** A GIS tileset's search settings: `fields` absent for `"search": true` (each layer's `name` field). */
export interface GisSearchConfig {
  fields?: string[];
  kind: Kind;
  layers?: string[];
}

const idSchema = z.string().regex(/^[A-Za-z0-9_-]+$/, 'expected an id of letters, digits, "_" or "-"');

/** GDAL's warp resampling methods an imagery tileset may use (gdalwarp -r). */
export const RESAMPLING = ['nearest', 'bilinear', 'cubic', 'cubicspline', 'lanczos', 'average', 'mode'] as const;
export type Resampling = (typeof RESAMPLING)[number];

/** Fields that apply to imagery sources only (GeoTIFF, COG, VRT, a glob of images: pipeline/imagery/); GIS sources take `minzoom` and `maxzoom` too. */
export const IMAGERY_FIELDS = ['format', 'minzoom', 'maxzoom', 'scales', 'resampling', 'nodata'] as const;

/**
 * A tileset: MBTiles, PMTiles, a z/x/y folder, an OpenStreetMap extract turned into tiles, the user's GIS
 * data (a vector file GDAL reads, or a PostGIS database) cut into vector tiles (config/gis.ts), or imagery
 * (any raster GDAL opens, a VRT, or a glob of them) warped into raster tiles.
 */
export const tilesetSchema = z.union([
  z.string().min(1),
  z.strictObject({
    source: z.string().min(1),
    name: z.string().optional(),
    attribution: z.string().optional(),
    description: z.string().optional(),
    /** Clip an .osm.pbf source to this box before generating tiles. */
    bbox: bboxSchema.optional(),
    /** An .osm.pbf source's tiles cover the whole world (Natural Earth) up to this zoom, the extract beyond; `false`: the extract at every zoom. Default 6. */
    world_maxzoom: z.union([z.number().int().min(0).max(6), z.literal(false)], { error: 'expected a zoom 0..6 or false' }).optional(),
    /** Replication server of an .osm.pbf source for `tilebake update` (default: the extract header's osmosis_replication_base_url). */
    replication: z.string().regex(/^(https?|file):\/\/./i, 'expected an https://, http:// or file:// URL of a replication folder (the one holding state.txt)').optional(),
    /** The `name:xx` an .osm.pbf source's tiles carry (default: OpenMapTiles' list, lib/languages.ts DEFAULT_LANGUAGES). */
    languages: z.array(languageSchema, { error: 'expected a list of language codes, e.g. ["en", "de", "zh-Hant"]' }).superRefine((codes, ctx) => {
      codes.forEach((c, i) => {
        if (codes.indexOf(c) !== i) ctx.addIssue({ code: 'custom', path: [i], message: `"${c}" is listed twice` });
      });
    }).optional(),
    /** Tile encodings served: `["mvt"]` (default) or `["mvt", "mlt"]`. */
    encodings: encodingsSchema.optional(),
    /** Imagery: the tiles' format (default `png`; `jpg` has no transparency: pixels outside the images are white). */
    format: z.enum(['png', 'jpg', 'webp'], { error: 'expected "png", "jpg" or "webp"' }).optional(),
    /** Imagery and GIS sources: the lowest zoom baked (default 0). */
    minzoom: z.number().int().min(0).max(24).optional(),
    /** Imagery: the deepest zoom baked (default: the zoom whose pixels are just finer than the finest image's); GIS sources: default 14, at most 22. */
    maxzoom: z.number().int().min(0).max(24).optional(),
    /** Imagery: 1 (256 px tiles) and 2 (512 px `@2x` tiles, baked only at the zooms the images are fine enough for). Default [1, 2]. */
    scales: z.array(z.union([z.literal(1), z.literal(2)], { error: 'expected 1 or 2' })).min(1).refine((a) => a.includes(1), 'expected 1 among the scales (the @2x tiles are served beside the 1x ones)').optional(),
    /** Imagery: GDAL's resampling when warping (default `bilinear`). */
    resampling: z.enum(RESAMPLING, { error: `expected one of ${RESAMPLING.map((r) => `"${r}"`).join(', ')}` }).optional(),
    /** Imagery: the source pixel value that is transparent (overrides the files' own nodata). */
    nodata: z.number().optional(),
    /**
     * The search index (GET /search, /reverse; docs/search.md): default on for an .osm.pbf source, `false` to skip;
     * `{"source": "x.osm.pbf"}` builds it from that extract (a tileset of MBTiles or PMTiles made from it); a GIS file or
     * PostGIS tileset gets one with `{"fields": ["name", …]}` (`true`: each layer's `name` field).
     */
    search: searchSchema.optional(),
    ...gisTilesetFields,
  }),
], { error: 'expected a source (an MBTiles, PMTiles, .osm.pbf or GIS file, a z/x/y folder, a postgresql:// URL, a GeoTIFF, VRT or a glob of images) or {"source": …, "name"?, "attribution"?, "description"?, "bbox"?, "world_maxzoom"?, "replication"?, "languages"?, "encodings"?, "format"?, "minzoom"?, "maxzoom"?, "scales"?, "resampling"?, "nodata"?, "layers"?, "search"?}' });

/** The build config file. Paths are relative to the file itself. */
export const configSchema = z.strictObject({
  $schema: z.string().optional(),
  /** Output folder (default `build` beside the config). */
  out: z.string().min(1).default('build'),
  /** Attribution shown for everything served (tilesets may add their own). */
  attribution: z.string().optional(),
  tilesets: z.record(idSchema, tilesetSchema).default({}),
  styles: z.record(idSchema, styleSchema).default({}),
  /** Glyph folder `<fontstack>/<start>-<end>.pbf`. */
  fonts: z.string().optional(),
  render: renderSchema,
  elevation: elevationSchema.optional(),
});

type RawConfig = z.infer<typeof configSchema>;

export interface TilesetConfig {
  id: string;
  /** An absolute path, or a PostgreSQL URL as configured (lib/database-url.ts: never shown with its password). */
  source: string;
  /** A GIS source: the layers of the tiles by name (absent: every layer of a file). */
  layers?: Record<string, GisLayerConfig>;
  name?: string;
  attribution?: string;
  description?: string;
  /** `[w, s, e, n]` an .osm.pbf source is clipped to. */
  bbox?: BBox;
  /** An .osm.pbf source: the world's tiles up to this zoom (default 6), `false` for none. */
  world_maxzoom?: number | false;
  /** Replication folder URL of an .osm.pbf source (`tilebake update`). */
  replication?: string;
  /** The `name:xx` languages an .osm.pbf source's tiles carry, as configured (absent: DEFAULT_LANGUAGES). */
  languages?: string[];
  /** Tile encodings built and served (always with `mvt`). */
  encodings: Encoding[];
  /** Imagery only (pipeline/imagery/): tile format, zooms (a GIS source's too: config/gis.ts defaults), scales, resampling, nodata override. */
  format?: 'png' | 'jpg' | 'webp';
  minzoom?: number;
  maxzoom?: number;
  scales?: (1 | 2)[];
  resampling?: Resampling;
  nodata?: number;
  /** Its search index: from an OSM extract (absolute), or from its own GIS layers; absent: no index. */
  search?: { source: string; gis?: undefined } | { source?: undefined; gis: GisSearchConfig };
}

/** A validated config with every path made absolute. */
export interface BuildConfig extends Omit<RawConfig, 'tilesets' | 'out' | 'fonts' | 'styles' | 'elevation'> {
  /** The config file itself (absolute). */
  file: string;
  out: string;
  fonts?: string;
  tilesets: Record<string, TilesetConfig>;
  styles: Record<string, RawConfig['styles'][string] & { id: string }>;
  elevation?: Omit<NonNullable<RawConfig['elevation']>, 'sources'> & {
    sources: { path: string; priority?: number; nodata?: number }[];
  };
}

/** Keys written with a dot in JSON paths (ids may contain "-"); others get `["..."]`. */
const PLAIN_KEY = /^[A-Za-z0-9_$-]+$/;

/** `$.a.b[0]` (or `$.a["b c"]`) from a zod issue path. */
export function jsonPath(path: readonly PropertyKey[]): string {
  return path.reduce<string>((s, k) => {
    if (typeof k === 'number') return `${s}[${k}]`;
    const key = String(k);
    return PLAIN_KEY.test(key) ? `${s}.${key}` : `${s}[${JSON.stringify(key)}]`;
  }, '$');
}

/** Minimal view of zod 4 schema internals, used only to list the fields allowed at a path. */
interface SchemaDef {
  type: string;
  shape?: Record<string, { _zod: { def: SchemaDef } }>;
  innerType?: { _zod: { def: SchemaDef } };
  valueType?: { _zod: { def: SchemaDef } };
  element?: { _zod: { def: SchemaDef } };
  options?: { _zod: { def: SchemaDef } }[];
  in?: { _zod: { def: SchemaDef } };
}

/** The object fields the schema allows at `path`, or undefined when there is no object there. */
export function fieldsAt(path: readonly PropertyKey[], def: SchemaDef = (configSchema as unknown as { _zod: { def: SchemaDef } })._zod.def): string[] | undefined {
  const unwrap = (d: SchemaDef): SchemaDef => {
    if (d.innerType) return unwrap(d.innerType._zod.def);
    if (d.type === 'pipe' && d.in) return unwrap(d.in._zod.def);
    if (d.type === 'union' && d.options) return unwrap((d.options.find((o) => unwrap(o._zod.def).type === 'object') ?? d.options[0])._zod.def);
    return d;
  };
  let d = unwrap(def);
  for (const k of path) {
    if (d.type === 'object' && d.shape && typeof k === 'string' && d.shape[k]) d = unwrap(d.shape[k]._zod.def);
    else if (d.type === 'record' && d.valueType) d = unwrap(d.valueType._zod.def);
    else if (d.type === 'array' && d.element) d = unwrap(d.element._zod.def);
    else return undefined;
  }
  return d.type === 'object' && d.shape ? Object.keys(d.shape) : undefined;
}

/** One line per problem: `$.path: what was expected`, with the fields `schema` allows where a field is unknown. */
export function issueLines(issue: z.core.$ZodIssue, schema: z.ZodType = configSchema): string[] {
  if (issue.code === 'unrecognized_keys') {
    const allowed = fieldsAt(issue.path, (schema as unknown as { _zod: { def: SchemaDef } })._zod.def);
    const hint = allowed ? ` (expected one of: ${allowed.join(', ')})` : '';
    return issue.keys.map((k) => `${jsonPath([...issue.path, k])}: unknown field${hint}`);
  }
  if (issue.code === 'invalid_union') {
    // `section | false` and the like: report the branch the value was meant for (the one that got past its root).
    const meant = issue.errors.filter((b) => !b.every((i) => i.path.length === 0));
    if (meant.length === 1) return meant[0].flatMap((i) => issueLines({ ...i, path: [...issue.path, ...i.path] } as z.core.$ZodIssue, schema));
  }
  if (issue.code === 'invalid_key') {
    const why = issue.issues.map((i) => i.message).join('; ');
    return [`${jsonPath(issue.path)}: invalid key: ${why}`];
  }
  return [`${jsonPath(issue.path)}: ${issue.message}`];
}

/** Validate a parsed config object; `file` is only used for messages and to resolve paths. */
export function parseConfig(raw: unknown, file: string): BuildConfig {
  const r = configSchema.safeParse(raw);
  if (!r.success) {
    const lines = r.error.issues.flatMap((i) => issueLines(i)).map((l) => `  ${l}`);
    throw new UserError(`${file}: invalid config\n${lines.join('\n')}`, { exitCode: 2 });
  }
  const c = r.data;
  const base = dirname(resolve(file));
  const abs = (p: string) => resolve(base, p);
  // A database URL is not a path.
  const source = (s: string) => (isDatabaseUrl(s) ? s : abs(s));
  const tilesets: Record<string, TilesetConfig> = {};
  const gisIssues: string[] = [];
  for (const [id, t] of Object.entries(c.tilesets)) {
    if (typeof t !== 'string' && t.minzoom !== undefined && t.maxzoom !== undefined && t.minzoom > t.maxzoom) {
      throw new UserError(`${file}: invalid config\n  ${jsonPath(['tilesets', id, 'minzoom'])}: expected minzoom <= maxzoom (${t.minzoom} > ${t.maxzoom})`, { exitCode: 2 });
    }
    const { search: s, ...o }: Exclude<typeof t, string> = typeof t === 'string' ? { source: t } : t;
    for (const i of gisConfigIssues(o)) gisIssues.push(`  ${jsonPath(['tilesets', id, ...i.path])}: ${i.message}`);
    const src = source(o.source);
    const osm = /\.osm\.pbf$/i.test(src);
    if (typeof s === 'object' && s.fields && osm) {
      throw new UserError(`${file}: invalid config\n  ${jsonPath(['tilesets', id, 'search', 'fields'])}: applies to GIS data (a vector file GDAL reads, a PostGIS database); an OpenStreetMap extract is indexed with "search": true`, { exitCode: 2 });
    }
    // On by default for an OSM extract; from the extract named for another tileset; from its own layers for GIS
    // data (`true` on a source that is neither is refused once its kind is known: pipeline/search/tileset.ts).
    const gis = (g: { fields?: string[]; kind?: Kind; layers?: string[] }) => ({ gis: { ...g, kind: g.kind ?? 'poi' } });
    const search = typeof s === 'object' ? (s.fields ? gis(s) : { source: abs(s.source!) }) : s === false || (!osm && s !== true) ? undefined : osm ? { source: src } : gis({});
    tilesets[id] = { id, ...o, source: src, encodings: o.encodings ?? ['mvt'], ...(search ? { search } : {}) };
  }
  if (gisIssues.length) throw new UserError(`${file}: invalid config\n${gisIssues.join('\n')}`, { exitCode: 2 });
  const styles: BuildConfig['styles'] = {};
  for (const [id, s] of Object.entries(c.styles)) {
    if (s.minzoom > s.maxzoom) {
      throw new UserError(`${file}: invalid config\n  ${jsonPath(['styles', id, 'minzoom'])}: expected minzoom <= maxzoom (${s.minzoom} > ${s.maxzoom})`, { exitCode: 2 });
    }
    if (s.maxzoom_served !== undefined && s.maxzoom_served < s.maxzoom) {
      throw new UserError(`${file}: invalid config\n  ${jsonPath(['styles', id, 'maxzoom_served'])}: expected maxzoom_served >= maxzoom (${s.maxzoom_served} < ${s.maxzoom})`, { exitCode: 2 });
    }
    const tileset = s.tileset ?? (Object.keys(tilesets).length === 1 ? Object.keys(tilesets)[0] : undefined);
    if (!tileset || !tilesets[tileset]) {
      throw new UserError(`${file}: invalid config\n  ${jsonPath(['styles', id, 'tileset'])}: expected one of the configured tileset ids (${Object.keys(tilesets).join(', ') || 'none configured'})`, { exitCode: 2 });
    }
    const sprite = s.sprite === undefined ? {} : { sprite: typeof s.sprite === 'string' ? abs(s.sprite) : { extend: abs(s.sprite.extend) } };
    styles[id] = { ...s, id, tileset, style: abs(s.style), ...sprite };
  }
  // Terrain, contours, hillshade and relief are tilesets too: one id, one tileset.
  const taken = new Map(Object.keys(tilesets).map((id) => [id, jsonPath(['tilesets', id])]));
  for (const part of ['terrain', 'contours', 'hillshade', 'relief'] as const) {
    const section = c.elevation?.[part];
    if (!section) continue;
    const other = taken.get(section.id);
    if (other) throw new UserError(`${file}: invalid config\n  ${jsonPath(['elevation', part, 'id'])}: "${section.id}" is already the id of ${other}`, { exitCode: 2 });
    taken.set(section.id, jsonPath(['elevation', part]));
  }
  const relief = c.elevation?.relief;
  const elevation = c.elevation && {
    ...c.elevation,
    ...(relief ? { relief: { ...relief, ramp: relief.ramp && abs(relief.ramp) } } : {}),
    sources: c.elevation.sources.map((s) => (typeof s === 'string' ? { path: abs(s) } : { ...s, path: abs(s.path) })),
  };
  return { ...c, file: resolve(file), out: abs(c.out), fonts: c.fonts ? abs(c.fonts) : undefined, tilesets, styles, elevation };
}

/** ` at line L, column C` from a JSON.parse message that names a position, else ''. */
function jsonErrorPlace(text: string, message: string): string {
  const m = /position (\d+)/.exec(message);
  if (!m) return '';
  const before = text.slice(0, Number(m[1]));
  const line = before.split('\n').length;
  const column = before.length - before.lastIndexOf('\n');
  return ` at line ${line}, column ${column}`;
}

/** Read and validate a config file. */
export async function loadConfig(file: string): Promise<BuildConfig> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    throw new UserError(`${file}: cannot read config (${(e as NodeJS.ErrnoException).code ?? String(e)})`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw new UserError(`${file}: not valid JSON${jsonErrorPlace(text, (e as Error).message)} (${(e as Error).message})`, { exitCode: 2 });
  }
  return parseConfig(raw, file);
}
