import { stat } from 'node:fs/promises';
import { extname } from 'node:path';
import { UserError } from '../../lib/errors.ts';
import { loadGdal } from '../../lib/gdal.ts';
import { expandGlob, isGlob } from '../../lib/glob.ts';
import { isOsmPbfHead } from '../osm/pbf-header.ts';
import { readHead, type InputKind, type TileSource } from './common.ts';
import type { OsmSourceOptions } from '../osm/source.ts';

export type { InputKind, SourceMetadata, SourceTile, TileSource } from './common.ts';

/** First bytes of an SQLite 3 database file. */
const SQLITE_MAGIC = Buffer.from('SQLite format 3\0', 'latin1');
/** First bytes of a PMTiles archive ("PM"); v3 continues "Tiles" then the version byte 3. */
const PMTILES_MAGIC = Buffer.from('PMTiles', 'latin1');
const PMTILES_V2_MAGIC = Buffer.from('PM', 'latin1');
const PMTILES_VERSION_BYTE = 7;
const PMTILES_V3 = 3;

/** Names of image files (for the message when GDAL cannot open one). */
const IMAGE_EXT = /\.(tiff?|vrt|jp2|j2k|png|jpe?g|webp|img|ecw|sid|nc|hdf|ntf|dem|bil|asc)$/i;
/**
 * Decide what an input is from its content (a folder, SQLite, PMTiles or OSM PBF magic bytes, else an
 * image if GDAL opens it as one), not its name. A glob pattern is `raster` when it matches images only.
 */
export async function detectInputKind(path: string): Promise<InputKind> {
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
  if (bytes.subarray(0, SQLITE_MAGIC.length).equals(SQLITE_MAGIC)) return 'mbtiles';
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
  if (bytes.length === 0) throw new UserError(`${path}: empty file (expected MBTiles, PMTiles, an .osm.pbf extract, a z/x/y folder or an image)`);
  const image = await openAsImage(path);
  if (image.ok) return 'raster';
  if (IMAGE_EXT.test(path)) throw new UserError(`${path}: GDAL cannot open it as an image (${image.why})`);
  throw new UserError(`${path}: unknown input (expected an MBTiles SQLite file, a PMTiles v3 archive, an OpenStreetMap .osm.pbf extract, a z/x/y tile folder or an image GDAL opens: GeoTIFF, COG, VRT, …)`);
}

/** Whether GDAL opens `path` as a raster with bands (gdal-async is loaded only for inputs nothing else recognised). */
async function openAsImage(path: string): Promise<{ ok: true } | { ok: false; why: string }> {
  const gdal = await loadGdal();
  try {
    const ds = await gdal.openAsync(path);
    try {
      return ds.bands.count() > 0 ? { ok: true } : { ok: false, why: 'it has no raster band' };
    } finally {
      ds.close();
    }
  } catch (e) {
    return { ok: false, why: (e as Error).message.replace(/\s+/g, ' ').trim() };
  }
}

/**
 * What a tileset's source holds, for the stage that builds it: `vector` (MVT tiles, or an OSM extract:
 * the vector stage), `raster` (an archive or folder of PNG, JPEG or WebP tiles, packed as they are) or
 * `imagery` (images warped into tiles); the imagery stage builds the last two.
 */
export async function tilesetSourceKind(path: string): Promise<'vector' | 'raster' | 'imagery'> {
  const kind = await detectInputKind(path);
  if (kind === 'raster') return 'imagery';
  if (kind === 'osm') return 'vector';
  const source = await openTileSource(path);
  try {
    return source.format === 'pbf' ? 'vector' : 'raster';
  } finally {
    await source.close();
  }
}

/** What a tile input is, for messages. */
function describeKind(kind: Exclude<InputKind, 'osm'>): string {
  return kind === 'folder' ? 'a tile folder' : kind === 'mbtiles' ? 'an MBTiles file' : kind === 'raster' ? 'an image' : 'a PMTiles archive';
}

/** Options that apply to OSM extracts only (tile inputs are read as they are). */
export interface OpenOptions {
  osm?: Partial<OsmSourceOptions>;
}

/** Open any supported input as a TileSource; an OSM extract needs `osm.workDir` (it is generated into tiles there). */
export async function openTileSource(path: string, opts: OpenOptions = {}): Promise<TileSource> {
  const kind = await detectInputKind(path);
  if (kind !== 'osm' && opts.osm?.bbox) {
    throw new UserError(`${opts.osm.bboxField ?? 'bbox'}: clipping to a bbox applies to .osm.pbf sources only (${path} is ${describeKind(kind)})`);
  }
  if (kind !== 'osm' && opts.osm?.languages) {
    throw new UserError(`${opts.osm.languagesField ?? 'languages'}: choosing the name languages applies to .osm.pbf sources only (${path} is ${describeKind(kind)}: its tiles carry the languages they were made with)`);
  }
  if (kind !== 'osm' && opts.osm?.worldMaxzoom !== undefined) {
    throw new UserError(`${opts.osm.worldMaxzoomField ?? 'world_maxzoom'}: the world's low zooms apply to .osm.pbf sources only (${path} is a tile archive or folder: its tiles are served as they are)`);
  }
  switch (kind) {
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
