import { stat } from 'node:fs/promises';
import { extname } from 'node:path';
import { isDatabaseUrl, redactDatabaseUrl } from '../../lib/database-url.ts';
import { isUserError, UserError } from '../../lib/errors.ts';
import { expandGlob, isGlob } from '../../lib/glob.ts';
import { isOsmPbfHead } from '../osm/pbf-header.ts';
import { readHead, type InputKind, type TileSource } from './common.ts';
import type { GisSourceOptions } from './gis.ts';
import type { OsmSourceOptions } from '../osm/source.ts';

export type { InputKind, SourceMetadata, SourceTile, TileSource } from './common.ts';

/** First bytes of an SQLite 3 database file. */
const SQLITE_MAGIC = Buffer.from('SQLite format 3\0', 'latin1');
/** First bytes of a PMTiles archive ("PM"); v3 continues "Tiles" then the version byte 3. */
const PMTILES_MAGIC = Buffer.from('PMTiles', 'latin1');
const PMTILES_V2_MAGIC = Buffer.from('PM', 'latin1');
const PMTILES_VERSION_BYTE = 7;
const PMTILES_V3 = 3;
/** An SQLite header's application id (big-endian at this offset): a GeoPackage's is "GPKG" (GP10, GP11 before 1.2). */
const SQLITE_APPLICATION_ID = 68;
const GEOPACKAGE_IDS = new Set(['GPKG', 'GP10', 'GP11']);

/** Names of image files (for the message when GDAL cannot open one). */
const IMAGE_EXT = /\.(tiff?|vrt|jp2|j2k|png|jpe?g|webp|img|ecw|sid|nc|hdf|ntf|dem|bil|asc)$/i;
/** What the source lists when it is none of them. */
const EXPECTED = 'an MBTiles SQLite file, a PMTiles v3 archive, an OpenStreetMap .osm.pbf extract, a z/x/y tile folder, a vector file GDAL reads (GeoPackage, GeoJSON, FlatGeobuf, Shapefile, CSV, KML, …), a postgresql:// URL or an image GDAL opens (GeoTIFF, COG, VRT, …)';

/**
 * Decide what an input is from its content, not its name: a PostgreSQL URL by its scheme (`postgis`); a
 * folder; SQLite (a GeoPackage by its application id: `gis`, else MBTiles), PMTiles or OSM PBF by their
 * magic bytes; else what GDAL opens it as: vector layers (`gis`) or an image (`raster`). A glob pattern
 * is `raster` when it matches images only.
 */
export async function detectInputKind(path: string): Promise<InputKind> {
  if (isDatabaseUrl(path)) return 'postgis';
  if (isGlob(path)) {
    const files = await expandGlob(path);
    if (files.length === 0) throw new UserError(`${path}: no file matches this pattern`);
    for (const f of files) {
      const kind = await detectInputKind(f);
      if (kind !== 'raster') throw new UserError(`${path}: matches ${f}, which is not an image (a glob pattern is a mosaic of images GDAL opens)`);
    }
    return 'raster';
  }
  let isDir: boolean;
  try {
    isDir = (await stat(path)).isDirectory();
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new UserError(code === 'ENOENT' ? `${path}: no such file or folder` : `${path}: cannot open (${code ?? String(e)})`, { cause: e });
  }
  if (isDir) return 'folder';
  let bytes: Buffer;
  try {
    bytes = await readHead(path);
  } catch (e) {
    throw new UserError(`${path}: cannot read (${(e as NodeJS.ErrnoException).code ?? String(e)})`, { cause: e });
  }
  if (bytes.subarray(0, SQLITE_MAGIC.length).equals(SQLITE_MAGIC)) {
    return GEOPACKAGE_IDS.has(bytes.subarray(SQLITE_APPLICATION_ID, SQLITE_APPLICATION_ID + 4).toString('latin1')) ? 'gis' : 'mbtiles';
  }
  if (bytes.subarray(0, PMTILES_MAGIC.length).equals(PMTILES_MAGIC)) {
    const v = bytes[PMTILES_VERSION_BYTE];
    if (v !== PMTILES_V3) throw new UserError(`${path}: PMTiles spec version ${v} is not supported (expected version 3)`);
    return 'pmtiles';
  }
  if (bytes.subarray(0, PMTILES_V2_MAGIC.length).equals(PMTILES_V2_MAGIC) && extname(path).toLowerCase() === '.pmtiles') {
    throw new UserError(`${path}: PMTiles v1/v2 archives are not supported (expected version 3; convert with \`pmtiles convert\`)`);
  }
  if (isOsmPbfHead(bytes)) return 'osm';
  const ext = extname(path).toLowerCase();
  if (ext === '.mbtiles') throw new UserError(`${path}: not an MBTiles file (not an SQLite database)`);
  if (ext === '.pmtiles') throw new UserError(`${path}: not a PMTiles archive (bad magic bytes)`);
  if (ext === '.pbf') throw new UserError(`${path}: not an OSM PBF file (it does not start with an OSMHeader block)`);
  if (bytes.length === 0) throw new UserError(`${path}: empty file (expected ${EXPECTED})`);
  // Loaded here: GDAL is loaded only for inputs that are none of the above.
  const probe = await (await import('./gis.ts')).probeGdal(path);
  if ('error' in probe) {
    if (IMAGE_EXT.test(path)) throw new UserError(`${path}: GDAL cannot open it as an image (${probe.error})`);
    throw new UserError(`${path}: unknown input (expected ${EXPECTED}; GDAL: ${probe.error})`);
  }
  if (probe.layers > 0) return 'gis';
  if (probe.bands > 0) return 'raster';
  throw new UserError(`${path}: GDAL opens it (${probe.driver}) but finds neither vector layers nor an image in it`);
}

/**
 * What a tileset's source holds, for the stage that builds it: `vector` (MVT tiles, an OSM extract, a
 * GIS file or database: the vector stage), `raster` (an archive or folder of PNG, JPEG or WebP tiles,
 * packed as they are) or `imagery` (images warped into tiles); the imagery stage builds the last two.
 */
export async function tilesetSourceKind(path: string): Promise<'vector' | 'raster' | 'imagery'> {
  const kind = await detectInputKind(path);
  if (kind === 'raster') return 'imagery';
  if (kind === 'osm' || kind === 'gis' || kind === 'postgis') return 'vector';
  const source = await openTileSource(path);
  try {
    return source.format === 'pbf' ? 'vector' : 'raster';
  } finally {
    await source.close();
  }
}

/** A tileset's source error as the one line that names the tileset too (a GIS source's name it already). */
export function namingTileset(e: unknown, id: string): unknown {
  if (!isUserError(e) || e.message.startsWith('tileset "')) return e;
  return new UserError(`tileset "${id}": ${e.message}`, { cause: e, exitCode: e.exitCode });
}

/** What an input is, for messages. */
function describeKind(kind: Exclude<InputKind, 'osm'>): string {
  switch (kind) {
    case 'folder':
      return 'a tile folder';
    case 'mbtiles':
      return 'an MBTiles file';
    case 'pmtiles':
      return 'a PMTiles archive';
    case 'gis':
      return 'a GIS file';
    case 'postgis':
      return 'a PostGIS database';
    case 'raster':
      return 'an image';
  }
}

/** GIS options set for a source that is no GIS file or database: the first one's config field. */
function gisOptionSet(gis: Partial<GisSourceOptions> | undefined): string | undefined {
  if (!gis) return undefined;
  return (['layers', 'minzoom', 'maxzoom'] as const).find((k) => gis[k] !== undefined);
}

/** Options of the sources that are generated (OSM extracts, GIS files and databases); tile inputs are read as they are. */
export interface OpenOptions {
  osm?: Partial<OsmSourceOptions>;
  /** A GIS file's or database's layers and zooms; `workDir` and `label` default to the OSM options'. */
  gis?: Partial<GisSourceOptions>;
}

/** Open any supported input as a TileSource; an OSM extract needs `osm.workDir` (it is generated into tiles there). */
export async function openTileSource(path: string, opts: OpenOptions = {}): Promise<TileSource> {
  const kind = await detectInputKind(path);
  // A database URL is never shown with its password.
  const shown = isDatabaseUrl(path) ? redactDatabaseUrl(path) : path;
  if (kind !== 'osm' && opts.osm?.bbox) {
    throw new UserError(`${opts.osm.bboxField ?? 'bbox'}: clipping to a bbox applies to .osm.pbf sources only (${shown} is ${describeKind(kind)})`);
  }
  if (kind !== 'osm' && opts.osm?.languages) {
    throw new UserError(`${opts.osm.languagesField ?? 'languages'}: choosing the name languages applies to .osm.pbf sources only (${shown} is ${describeKind(kind)}: its tiles carry the languages they were made with)`);
  }
  if (kind !== 'osm' && opts.osm?.worldMaxzoom !== undefined) {
    throw new UserError(`${opts.osm.worldMaxzoomField ?? 'world_maxzoom'}: the world's low zooms apply to .osm.pbf sources only (${shown} is ${describeKind(kind)}${kind === 'gis' || kind === 'postgis' || kind === 'raster' ? '' : ': its tiles are served as they are'})`);
  }
  const gisOption = gisOptionSet(opts.gis);
  if (kind !== 'gis' && kind !== 'postgis' && gisOption) {
    const field = opts.gis?.tileset ? `${opts.gis.tileset.field}.${gisOption}` : gisOption;
    throw new UserError(`${field}: applies to GIS files and PostGIS databases only (${shown} is ${kind === 'osm' ? 'an OpenStreetMap extract: its layers are OpenMapTiles\' at z0–14' : kind === 'raster' ? 'an image' : `${describeKind(kind)}: its tiles are served as they are`})`);
  }
  switch (kind) {
    case 'gis':
    case 'postgis': {
      const workDir = opts.gis?.workDir ?? opts.osm?.workDir;
      if (!workDir) throw new Error(`${shown}: a GIS source needs a work folder`);
      return (await import('./gis.ts')).openGis(path, kind, { ...opts.gis, workDir, label: opts.gis?.label ?? opts.osm?.label ?? `gis ${shown}` });
    }
    case 'osm': {
      const { workDir, label } = opts.osm ?? {};
      if (!workDir) throw new Error(`${path}: an OSM source needs a work folder`);
      return (await import('../osm/source.ts')).openOsm(path, { ...opts.osm, workDir, label: label ?? `osm ${path}` });
    }
    case 'mbtiles':
      return (await import('./mbtiles.ts')).openMbtiles(path);
    case 'pmtiles':
      return (await import('./pmtiles.ts')).openPmtiles(path);
    case 'folder':
      return (await import('./folder.ts')).openFolder(path);
    case 'raster':
      throw new UserError(`${path}: an image, not tiles: imagery is warped into raster tiles by \`tilebake build\` (a tileset whose source it is)`);
  }
}
