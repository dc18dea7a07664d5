import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from './atomic.ts';
import { UserError } from './errors.ts';
import type { JpegSettings, PngSettings, RasterFormat, WebpSettings } from './raster-encode.ts';
import type { Store } from './storage.ts';

/**
 * `<out>/manifest.json`: everything a build produced. The server reads only this file and the
 * files it names (paths relative to the output folder, always with `/`).
 */
export interface Manifest {
  /** Format version of this file. */
  version: 1;
  /** ISO time of the last change. */
  generatedAt: string;
  /** Tile archives served at /data/{id}/{z}/{x}/{y}.{ext}: vector tilesets, terrain tiles and raster tilesets. */
  tilesets: Record<string, TilesetEntry>;
  /** Rendered styles served at /styles/{id}/... */
  styles: Record<string, StyleEntry>;
  /** Folder of glyph PBFs `<fontstack>/<start>-<end>.pbf`, served at /fonts/... */
  fonts?: string;
  /** The elevation index answering /height. */
  elevation?: ElevationEntry;
  /** Tilesets built from OpenStreetMap, by id: the replication state their data shows (outside the tileset entries, which are TileJSON). */
  osm?: Record<string, OsmDataState>;
}

export type TileFormat = 'pbf' | 'png' | 'jpg' | 'webp';

/**
 * A tileset: one PMTiles archive served at `/data/{id}/{z}/{x}/{y}.{format}` with its TileJSON at
 * `/data/{id}.json`. Three kinds:
 *
 * - `vector`: MVT tiles (`format` `pbf`), `vector_layers`, optionally `mlt`.
 * - `terrain`: terrain-RGB tiles (`png`/`webp`), `encoding`, `tileSize`.
 * - `raster`: images for people to look at (imagery warped from GeoTIFF/COG/VRT, a raster MBTiles or
 *   PMTiles, hillshade or colour relief from the DEM): `format` `png` | `jpg` | `webp`, `tileSize` 256,
 *   `archive` the 256 px tiles at `minzoom..maxzoom`; `hidpi` the 512 px tiles of the same z/x/y
 *   (`{y}@2x.{format}`) at `minzoom..hidpi.maxzoom`, baked only for the zooms whose @2x pixels the
 *   data is fine enough for. A tile outside the data is not stored: the server answers `204` for it
 *   (inside the zoom range), `404` naming the formats, scales and zooms that exist otherwise.
 *   TileJSON: `tileSize: 256`, `format`, `scheme: xyz`, bounds, zooms, and `tiles_2x`/`maxzoom_2x`
 *   with `hidpi`; WMTS lists it as layers `{id}` and `{id}@2x` (static-server/styles/wmts-capabilities.ts);
 *   packs name its archives `{id}` and `{id}@2x` (static-server/packs/sources.ts); export writes both.
 *   Which stage wrote it: the elevation stage's are listed in `Manifest.elevation.tilesets`, the others
 *   are the imagery stage's (pipeline/imagery/).
 */
export interface TilesetEntry {
  /** PMTiles archive, relative to the output folder (raster: the 1x tiles). */
  archive: string;
  kind: TilesetKind;
  format: TileFormat;
  /** Terrain tiles only: how heights are packed into RGB. */
  encoding?: 'terrarium' | 'mapbox';
  /** Raster tiles (terrain, raster): pixels per side of a 1x tile, the TileJSON's `tileSize` (256). */
  tileSize?: number;
  /** Raster only: the @2x (512 px) tiles of the same z/x/y, when built. */
  hidpi?: HidpiArchive;
  name?: string;
  attribution?: string;
  description?: string;
  minzoom: number;
  maxzoom: number;
  /** [west, south, east, north] in degrees: where the tiles are (the TileJSON's bounds). */
  bounds: [number, number, number, number];
  /**
   * An OSM tileset with the world's low zooms: its tiles cover `bounds` (the world) up to this zoom,
   * only `region` (the extract) above it (`boundsAtZoom`).
   */
  world_maxzoom?: number;
  region?: [number, number, number, number];
  /** [lon, lat, zoom]. */
  center: [number, number, number];
  /** MVT layers (vector only), as in TileJSON. */
  vector_layers?: unknown[];
  /** Number of addressed tiles and archive size, for humans. */
  tiles: number;
  bytes: number;
  /** Vector only: the same tiles as MapLibre Tiles (`"encodings": ["mvt", "mlt"]`), served as `.mlt`. */
  mlt?: MltArchive;
  /** Vector only: the search index of its OpenStreetMap data (GET /search, /reverse; lib/search/schema.ts). */
  search?: SearchIndexEntry;
}

/** A tileset's search index file. */
export interface SearchIndexEntry {
  /** SQLite file, relative to the output folder. */
  index: string;
  entries: number;
  bytes: number;
  /** Of the file's bytes (a server downloading it from object storage checks them). */
  sha256: string;
  /** The `name:xx` languages indexed. */
  languages: string[];
}

/** What a tileset holds: vector tiles, terrain-RGB tiles, or raster images. */
export type TilesetKind = 'vector' | 'terrain' | 'raster';

/** Pixels per side of a raster tileset's 1x tile. */
export const RASTER_TILE_SIZE = 256;

/** A raster tileset's @2x tiles: 512 px images of the same z/x/y as the 1x tiles, at `minzoom..maxzoom`. */
export interface HidpiArchive {
  /** PMTiles archive, relative to the output folder. */
  archive: string;
  /** Deepest zoom baked at @2x (at most the tileset's maxzoom). */
  maxzoom: number;
  tiles: number;
  bytes: number;
}

/** The scales a tileset is served at: [1], or [1, 2] for a raster tileset with @2x tiles. */
export function tilesetScales(entry: TilesetEntry): (1 | 2)[] {
  return entry.kind === 'raster' && entry.hidpi ? [1, 2] : [1];
}

/** The deepest zoom tileset `entry` serves at `scale`. */
export function tilesetMaxzoom(entry: TilesetEntry, scale: 1 | 2): number {
  return scale === 2 && entry.hidpi ? entry.hidpi.maxzoom : entry.maxzoom;
}

/** The archive of tileset `entry` at `scale` (undefined: not built at that scale). */
export function tilesetArchive(entry: TilesetEntry, scale: 1 | 2): string | undefined {
  return scale === 1 ? entry.archive : entry.kind === 'raster' ? entry.hidpi?.archive : undefined;
}

/** What tileset `entry` serves, for 404 messages: `{z}/{x}/{y}.jpg (z0-9) and {z}/{x}/{y}@2x.jpg (z0-8)`. */
export function servedTileForms(entry: TilesetEntry): string {
  return tilesetScales(entry)
    .map((s) => `{z}/{x}/{y}${s === 2 ? '@2x' : ''}.${entry.format} (z${entry.minzoom}-${tilesetMaxzoom(entry, s)})`)
    .join(' and ');
}

/** A tileset's MLT archive (pipeline/vector/mlt.ts). */
export interface MltArchive {
  /** PMTiles archive (tile type MLT), relative to the output folder. */
  archive: string;
  tiles: number;
  bytes: number;
}

/** The tile encodings a tileset is served in: `mvt` (and `mlt` when built) for vector tilesets, its format for terrain. */
export function tilesetEncodings(entry: TilesetEntry): string[] {
  return entry.kind === 'vector' ? ['mvt', ...(entry.mlt ? ['mlt'] : [])] : [entry.format];
}

/** The OpenStreetMap state a tileset shows (from the extract's header, then from `tilebake update`). */
export interface OsmDataState {
  /** Replication sequence number. */
  sequence?: number;
  /** ISO time of that state: the data's age. */
  timestamp?: string;
  /** Replication folder the updates come from. */
  replication?: string;
}

export interface StyleArchive {
  archive: string;
  format: RasterFormat;
  scale: 1 | 2;
  tiles: number;
  bytes: number;
}

export interface StyleEntry {
  /** The prepared style JSON (sources, sprite, glyphs still in the build's neutral form). */
  style: string;
  /** Sprite base path without `.json`/`.png` or `@2x` (sprite.json, sprite@2x.png ...). */
  sprite?: string;
  name?: string;
  attribution?: string;
  minzoom: number;
  maxzoom: number;
  /** Where the tiles are (the TileJSON's bounds); with `world_maxzoom`, only `region` above that zoom (`boundsAtZoom`). */
  bounds: [number, number, number, number];
  world_maxzoom?: number;
  region?: [number, number, number, number];
  center: [number, number, number];
  /** Key `${scale}x.${format}`, e.g. `1x.png`, `2x.jpg`, `1x.webp`. */
  archives: Record<string, StyleArchive>;
  /** Deepest raster zoom served, above `maxzoom` by upscaling baked tiles (default 20; static-server/overzoom). */
  maxzoom_served?: number;
  /** How tiles above `maxzoom` are made: `upscale` (absent: the default) or `render` (on demand, static-server/overzoom/render.ts). */
  overzoom?: 'upscale' | 'render';
  /** The render settings the build baked with (set with `overzoom: render`): an on-demand tile is the tile the build would bake. */
  render?: RenderSettings;
  /** The style file it was prepared from, relative to the config file's folder: entries with the same one are language variants of one style. */
  styleFile?: string;
  /** The language its labels are baked in (the config's `language`: `name:xx` first, lib/style-language.ts). */
  language?: string;
  /** The label languages its vector tiles carry (their `name:xx` fields, sorted): what `style.json?language=` accepts. */
  languages?: string[];
}

/** What decides a baked tile's bytes besides the style and data: the metatile grid and the encoders. */
export interface RenderSettings {
  metatile: number;
  margin: number;
  png: PngSettings;
  jpeg: JpegSettings;
  /** Absent in manifests written before WebP tiles (they have no WebP archive to render). */
  webp: WebpSettings;
}

export interface ElevationEntry {
  /** The quantised elevation index file. */
  index: string;
  /** DEM files it was built from (as given), for humans. */
  sources: string[];
  /** [west, south, east, north] covered by at least one source. */
  bounds: [number, number, number, number];
  /** Quantisation step in metres. */
  precision: number;
  bytes: number;
  /** Content fingerprint of the DEM inputs and settings (sha256 hex; equal ⇒ an equal index). */
  fingerprint?: string;
  /** Ids of the tilesets the elevation stage wrote (terrain, contours, hillshade, relief). */
  tilesets?: string[];
}

/** What a tileset or style covers, zoom by zoom: `bounds`, or the world up to `world_maxzoom` and `region` above it. */
export interface ZoomCoverage {
  bounds: [number, number, number, number];
  world_maxzoom?: number;
  region?: [number, number, number, number];
}

/** The bounds of the tiles at zoom z of a tileset or style (the one rule for rendering, serving and describing them). */
export function boundsAtZoom(c: ZoomCoverage, z: number): [number, number, number, number] {
  return c.world_maxzoom !== undefined && c.region && z > c.world_maxzoom ? c.region : c.bounds;
}

/** Deepest raster zoom served when the style does not say (`maxzoom_served`). */
export const DEFAULT_MAXZOOM_SERVED = 20;

/** The deepest zoom a style's raster tiles and static maps are served at (never below the baked maxzoom). */
export function servedMaxzoom(entry: Pick<StyleEntry, 'maxzoom' | 'maxzoom_served'>): number {
  return Math.max(entry.maxzoom, entry.maxzoom_served ?? DEFAULT_MAXZOOM_SERVED);
}

/** Record (or with `undefined`, forget) the OSM state tileset `id` shows. */
export function setOsmState(m: Manifest, id: string, state: OsmDataState | undefined): void {
  const all = { ...m.osm };
  if (state) all[id] = state;
  else delete all[id];
  m.osm = Object.keys(all).length ? all : undefined;
}

/** A manifest with nothing in it yet. */
export function emptyManifest(): Manifest {
  return { version: 1, generatedAt: new Date().toISOString(), tilesets: {}, styles: {} };
}

/** Check the shape of a parsed manifest; `where` names it in errors. */
export function parseManifest(text: string, where: string): Manifest {
  let m: unknown;
  try {
    m = JSON.parse(text);
  } catch (e) {
    throw new UserError(`${where}: not valid JSON (${(e as Error).message})`);
  }
  const o = m as Partial<Manifest>;
  if (typeof o !== 'object' || o === null || o.version !== 1) {
    throw new UserError(`${where}: field "version": expected 1 (a tilebake manifest)`);
  }
  if (typeof o.tilesets !== 'object' || o.tilesets === null) throw new UserError(`${where}: field "tilesets": expected an object`);
  if (typeof o.styles !== 'object' || o.styles === null) throw new UserError(`${where}: field "styles": expected an object`);
  return o as Manifest;
}

/** Read `manifest.json` from a store (local folder or URL). */
export async function loadManifest(store: Store): Promise<Manifest> {
  const m = await findManifest(store);
  if (!m) throw new UserError(`${manifestWhere(store)}: not found (run \`tilebake build\` first)`);
  return m;
}

/** Read `manifest.json` from a store; undefined when there is none. */
export async function findManifest(store: Store): Promise<Manifest | undefined> {
  const bytes = await store.readFile('manifest.json');
  return bytes && parseManifest(Buffer.from(bytes).toString('utf8'), manifestWhere(store));
}

function manifestWhere(store: Store): string {
  return `${store.location.replace(/\/$/, '')}/manifest.json`;
}

/** Read a local manifest, or an empty one when the folder has none yet. */
export async function readManifestOrEmpty(outDir: string): Promise<Manifest> {
  const p = join(outDir, 'manifest.json');
  try {
    return parseManifest(await readFile(p, 'utf8'), p);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return emptyManifest();
    throw e;
  }
}

/**
 * Change a local manifest: read it (or start empty), apply `change`, write it atomically.
 * Stages call this with only their own section, so `--only` builds keep the others.
 */
let queue: Promise<unknown> = Promise.resolve();
export function updateManifest(outDir: string, change: (m: Manifest) => void): Promise<Manifest> {
  const run = async () => {
    const m = await readManifestOrEmpty(outDir);
    change(m);
    m.generatedAt = new Date().toISOString();
    await writeFileAtomic(join(outDir, 'manifest.json'), `${JSON.stringify(m, null, 2)}\n`);
    return m;
  };
  const next = queue.then(run, run);
  queue = next.catch(() => undefined);
  return next;
}
