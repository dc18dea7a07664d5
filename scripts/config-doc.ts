// Writes docs/config.md, the build configuration's reference, from the zod schema the CLI validates
// with (pipeline/config), so the reference cannot drift from what is accepted:
//   node --import tsx scripts/config-doc.ts          # rewrite docs/config.md
// test/config-doc.quick.test.ts fails when docs/config.md differs from what this prints.
import { writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { configSchema } from '../pipeline/config/index.ts';

export const CONFIG_DOC = join(resolve(import.meta.dirname, '..'), 'docs', 'config.md');

/** What each field means; types, defaults and ranges come from the schema. A field missing here shows "—". */
const MEANING: Record<string, string> = {
  $schema: 'ignored (lets an editor find a JSON schema)',
  out: 'output folder, relative to the config file',
  attribution: 'credit for tilesets that have none of their own; a style credits each tileset it draws once',
  tilesets: 'vector tilesets by id',
  'tilesets.<id>': 'a source (a path: MBTiles, PMTiles, `z/x/y.pbf` folder, `.osm.pbf` extract, a vector file GDAL reads or an image; or a `postgresql://` URL), or an object',
  'tilesets.<id>.source': 'the source: a path, or a PostGIS database `postgresql://user@host:port/db` (the password in the URL, `PGPASSWORD` or `~/.pgpass`, never shown; `connect_timeout` 5 s unless the URL sets one) ([your own data](own-data.md))',
  'tilesets.<id>.minzoom': 'imagery, a GIS file or PostGIS: lowest zoom its tiles are written at (default 0)',
  'tilesets.<id>.maxzoom': 'imagery: deepest zoom baked (default: the zoom whose pixels are just finer than the finest image\'s); a GIS file or PostGIS: highest zoom its vector tiles are written at, at most 22 (default 14; clients overzoom beyond)',
  'tilesets.<id>.layers': 'a GIS file or PostGIS source: the layers of the tiles by name (a style\'s `source-layer`); default for a file: every layer with a geometry under its own name, with every field; required for PostGIS',
  'tilesets.<id>.layers.<id>': 'one layer of the tiles; `{}`: the file\'s layer or the table of that name',
  'tilesets.<id>.layers.<id>.layer': 'a file\'s layer it comes from (default: the key; another name renames it)',
  'tilesets.<id>.layers.<id>.table': 'the PostGIS table it comes from, `schema.table` or `table` (default: the key)',
  'tilesets.<id>.layers.<id>.sql': 'a query whose rows are the features: PostGIS SQL, or for a file the SQL of GDAL\'s driver (SQLite for a GeoPackage, OGR SQL for the others); its columns are the fields',
  'tilesets.<id>.layers.<id>.minzoom': 'lowest zoom this layer is written at (default: the tileset\'s)',
  'tilesets.<id>.layers.<id>.maxzoom': 'highest zoom this layer is written at (default: the tileset\'s)',
  'tilesets.<id>.layers.<id>.fields': 'the attributes kept (default: all; `[]`: the geometry alone); not with `sql`',
  'tilesets.<id>.layers.<id>.description': 'the layer\'s description in the TileJSON\'s `vector_layers`',
  'tilesets.<id>.name': 'name in the TileJSON',
  'tilesets.<id>.attribution': 'credit in the TileJSON and on the styles drawing it',
  'tilesets.<id>.description': 'description in the TileJSON',
  'tilesets.<id>.bbox': '`[west, south, east, north]` an `.osm.pbf` source is clipped to before tiles are built (default: the whole extract)',
  'tilesets.<id>.encodings': 'tile encodings served: `["mvt"]`, or `["mvt", "mlt"]` for MapLibre Tiles beside MVT (`/data/<id>/{z}/{x}/{y}.mlt`; [design note](mlt.md))',
  'tilesets.<id>.search': 'the search index behind `GET /search` and `/reverse`: default `true` for an `.osm.pbf` source, `false` to skip it; `{"source": "x.osm.pbf"}` indexes that extract for a tileset of MBTiles or PMTiles made from it; a GIS file or PostGIS source is indexed with `{"fields": [...]}` (`true`: each layer\'s `name` field; default: none) ([search](search.md#gis-tilesets))',
  'tilesets.<id>.search.source': 'the OpenStreetMap extract to index, relative to the config file (not with `fields`)',
  'tilesets.<id>.search.fields': 'GIS data: the fields searched, each a field of every indexed layer; a feature\'s name is the first it has a value in, the others are names it is found by (`name:xx` or `name_xx`: its name in language xx)',
  'tilesets.<id>.search.kind': 'GIS data: what the entries are, for `&kind=` and ranking (default `"poi"`)',
  'tilesets.<id>.search.layers': 'GIS data: the layers of the tiles indexed (default: every one)',
  'tilesets.<id>.world_maxzoom': 'an `.osm.pbf` source\'s tiles cover the whole world (Natural Earth, built once and cached) up to this zoom (default 6), the extract above it; `false`: the extract at every zoom (docs/low-zooms.md)',
  'tilesets.<id>.replication': 'replication server (`https://…` or `file://…`) `tilebake update` reads diffs from (default: the extract header\'s `osmosis_replication_base_url`)',
  'tilesets.<id>.languages': 'the `name:xx` an `.osm.pbf` source\'s tiles carry, e.g. `["en", "de", "zh-Hant"]` (default: OpenMapTiles\' 80 languages; `name:latin` and `name:nonlatin` are always written; [languages](languages.md))',
  styles: 'styles to pre-render, by id',
  'styles.<id>': 'one style',
  'styles.<id>.style': 'MapLibre style JSON; `mbtiles://…`, `pmtiles://…` or TileJSON sources resolve to `tileset`',
  'styles.<id>.tileset': 'tileset the style\'s sources resolve to (default: the only tileset)',
  'styles.<id>.minzoom': 'lowest zoom rendered',
  'styles.<id>.maxzoom': 'highest zoom rendered',
  'styles.<id>.maxzoom_served': 'highest zoom `serve` answers above `maxzoom`, made as `overzoom` says (default 20)',
  'styles.<id>.overzoom': '`upscale`: zooms above `maxzoom` resample the deepest baked tile; `render`: rendered on demand by `serve` in headless Chromium, byte-identical to a deeper build ([cost](wmts-static-maps.md#raster-zooms-above-the-baked-ones))',
  'styles.<id>.bbox': '`[west, south, east, north]` to render at every zoom (default: what the tileset covers, zoom by zoom: the world up to its `world_maxzoom`, its region above)',
  'styles.<id>.scales': '1 (256 px) and/or 2 (`@2x`, 512 px)',
  'styles.<id>.formats': 'raster formats, each encoded from the same pixels: `png`, `jpg`, `webp`',
  'styles.<id>.language': 'bake the labels in this language: every label that shows a name reads `name:xx` first, then the style\'s own (`"osm-bright-de": {"style": "styles/osm-bright/style.json", "language": "de"}`); the tileset must carry it; an ordinary style otherwise ([languages](languages.md))',
  'styles.<id>.sprite': 'a folder of SVG icons (`<name>.svg`, relative to this file) made into the style\'s sprite at 1x and 2x: `"icons/"` replaces the style\'s own sprite, `{"extend": "icons/"}` adds to it (a name in both: the folder\'s icon) ([sprites](sprites.md))',
  'styles.<id>.sprite.extend': 'the folder whose icons are added to the style\'s own sprite',
  fonts: 'glyph folder, `<fontstack>/<start>-<end>.pbf`',
  render: 'renderer settings shared by every style',
  'render.metatile': 'tiles per metatile side',
  'render.margin': 'margin in CSS px rendered around a metatile and cropped away',
  'render.workers': 'render pool size, one Chromium each (default: one per two CPUs this process may use — Slurm allocation, cgroup CPU quota, affinity — at least 1)',
  'render.png': 'PNG encoding',
  'render.png.compressionLevel': 'zlib level',
  'render.png.palette': 'quantise to a palette',
  'render.jpeg': 'JPEG encoding',
  'render.jpeg.quality': 'quality',
  'render.webp': 'WebP encoding (styles with `"webp"` in `formats`)',
  'render.webp.quality': 'quality of lossy WebP; with `lossless`, encoding effort (higher: smaller, slower)',
  'render.webp.lossless': 'lossless: the PNG\'s pixels exactly, alpha included',
  'render.batch': 'metatiles per render task; a killed build renders again at most the tasks in flight',
  'render.timeoutMs': 'per-metatile timeout before the browser is restarted',
  'render.retries': 'retries of a failed metatile before the build fails',
  'render.dedup': 'render each distinct view once: a metatile whose view loads the same tiles as one already rendered takes its pixels',
  elevation: 'elevation index, terrain tiles and contour lines',
  'elevation.sources': 'DEM files or globs (SRTM `.hgt`, GeoTIFF), or objects',
  'elevation.sources[]': 'a file or glob, relative to the config',
  'elevation.sources[].path': 'the file or glob',
  'elevation.sources[].priority': 'higher wins where sources overlap (default: the finer resolution wins)',
  'elevation.sources[].nodata': 'overrides the file\'s nodata value',
  'elevation.precision': 'quantisation step in metres',
  'elevation.terrain': 'terrain-RGB tiles, or `false` for none',
  'elevation.terrain.id': 'tileset id the tiles are served under, `/data/{id}/{z}/{x}/{y}.{png|webp}`',
  'elevation.terrain.encoding': 'terrain-RGB encoding',
  'elevation.terrain.format': 'image format',
  'elevation.terrain.minzoom': 'lowest zoom',
  'elevation.terrain.maxzoom': 'highest zoom (default: the zoom whose pixels are just finer than the finest DEM\'s posts: z11 for SRTM3)',
  'elevation.contours': 'contour lines as a vector tileset; absent or `false`: none, `{}`: the defaults',
  'elevation.contours.id': 'tileset id the lines are served under, `/data/{id}/{z}/{x}/{y}.pbf`',
  'elevation.contours.minzoom': 'lowest zoom',
  'elevation.contours.maxzoom': 'highest zoom',
  'elevation.contours.intervals': 'contour intervals by zoom; a zoom uses the nearest entry at or below it',
  'elevation.contours.intervals.<id>': '`[minor, index]` of a zoom (the key, 0-20): whole metres, index a multiple of minor',
  'elevation.attribution': 'credit for the DEMs, on the terrain and contour tilesets (default: the top-level `attribution`)',
};

type Json = Record<string, unknown> & {
  type?: string;
  anyOf?: Json[];
  properties?: Record<string, Json>;
  additionalProperties?: Json | boolean;
  items?: Json | boolean;
  prefixItems?: Json[];
  enum?: unknown[];
  const?: unknown;
  default?: unknown;
  required?: string[];
};

function range(s: Json): string {
  const lo = s.minimum ?? s.exclusiveMinimum;
  const hi = s.maximum === Number.MAX_SAFE_INTEGER ? undefined : (s.maximum ?? s.exclusiveMaximum);
  if ((lo === undefined || lo === Number.MIN_SAFE_INTEGER) && hi === undefined) return '';
  if (hi === undefined) return ` ${s.exclusiveMinimum !== undefined ? '>' : '≥'} ${lo}`;
  if (lo === undefined) return ` ≤ ${hi}`;
  return ` ${lo}–${hi}`;
}

/** A short type: `integer 0–24`, `"png" | "jpg"`, `[w, s, e, n]`, `string or object`. */
function typeOf(s: Json): string {
  if (s.anyOf) return s.anyOf.map(typeOf).join(' or ');
  if (s.const !== undefined) return JSON.stringify(s.const);
  if (s.enum) return s.enum.map((v) => JSON.stringify(v)).join(' | ');
  switch (s.type) {
    case 'array':
      if (s.prefixItems?.length === 4) return '`[w, s, e, n]`';
      if (s.prefixItems) return `[${s.prefixItems.map(typeOf).join(', ')}]`;
      return `array of ${typeof s.items === 'object' ? typeOf(s.items) : 'any'}`;
    case 'object':
      return typeof s.additionalProperties === 'object' ? 'object by id' : 'object';
    case 'integer':
    case 'number':
      return `${s.type}${range(s)}`;
    default:
      return s.type ?? 'any';
  }
}

interface Row {
  path: string;
  type: string;
  required: boolean;
  def: string;
}

function walk(s: Json, path: string, required: boolean, rows: Row[]): void {
  if (path) rows.push({ path, type: typeOf(s), required, def: s.default === undefined ? '' : `\`${JSON.stringify(s.default)}\`` });
  const forms = s.anyOf ?? [s];
  for (const form of forms) {
    if (form.type === 'object' && form.properties) {
      for (const [key, child] of Object.entries(form.properties)) walk(child, path ? `${path}.${key}` : key, form.required?.includes(key) ?? false, rows);
    }
    if (form.type === 'object' && typeof form.additionalProperties === 'object') walk(form.additionalProperties, `${path}.<id>`, false, rows);
    if (form.type === 'array' && typeof form.items === 'object' && (form.items.anyOf ?? [form.items]).some((f) => f.type === 'object')) walk(form.items, `${path}[]`, false, rows);
  }
}

/** docs/config.md's text. */
export function configReference(): string {
  const schema = z.toJSONSchema(configSchema, { io: 'input', unrepresentable: 'any' }) as Json;
  const rows: Row[] = [];
  walk(schema, '', true, rows);
  const cell = (t: string) => t.replace(/\\?\|/g, '\\|');
  const lines = [
    '# Build configuration reference',
    '',
    '<!-- Generated by `node --import tsx scripts/config-doc.ts` from the zod schema in pipeline/config/; do not edit by hand. -->',
    '',
    'One JSON file describes a build (`tilebake build --config FILE`); paths in it are relative to the file.',
    'The sample is [data/sample/config.json](../data/sample/config.json). A field that is not listed here is',
    'an error, as is a value of the wrong type or outside its range: the message names the file and the',
    'JSON path of the field (`$.styles.osm-bright.scales[0]: expected 1 or 2`).',
    '',
    '| field | type | required | default | meaning |',
    '|---|---|---|---|---|',
    ...rows.map((r) => `| \`${r.path}\` | ${cell(r.type)} | ${r.required ? 'yes' : ''} | ${cell(r.def)} | ${cell(MEANING[r.path] ?? '—')} |`),
    '',
  ];
  return lines.join('\n');
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(import.meta.filename)) {
  await writeFile(CONFIG_DOC, configReference());
  console.log(`wrote ${CONFIG_DOC}`);
}
