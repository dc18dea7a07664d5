/**
 * DEM files inside archives, read by GDAL itself: a `.gz` through `/vsigzip/`, a `.zip` through
 * `/vsizip/` at the `.hgt` inside it, their damage caught. SRTM `.hgt` tiles are GDAL's SRTMHGT
 * driver's; when it refuses one, the message says why (the name or the size) instead of GDAL's
 * "not recognized".
 */
import { basename, resolve } from 'node:path';
import { constants } from 'node:fs';
import { UserError } from '../../lib/errors.ts';
import type { Gdal } from '../../lib/gdal.ts';

type Dataset = import('gdal-async').Dataset;

/** The start of an SRTM tile name GDAL's SRTMHGT driver accepts: the south-west corner, `N43E006.`. */
const SRTM_NAME = /^[NS]\d{2}[EW]\d{3}\./i;
/** Post grids GDAL's SRTMHGT driver reads (GDAL 3.6), for the message about a file it refuses. */
const SRTM_GRIDS = '1201 × 1201 (3″), 3601 × 3601 (1″) or 1801 × 3601 (2″ × 1″) big-endian int16 posts';

/**
 * The name GDAL opens for `file`: a `.gz` through /vsigzip/; a `.zip` through /vsizip/ at the first
 * `.hgt` inside it (sorted by path, sub-folders included); anything else as it is.
 */
export async function gdalPath(gdal: Gdal, file: string): Promise<string> {
  if (/\.gz$/i.test(file)) return `/vsigzip/${resolve(file)}`;
  if (!/\.zip$/i.test(file)) return file;
  const root = `/vsizip/${resolve(file)}`;
  let names: string[];
  try {
    names = await gdal.fs.readDirAsync(root);
  } catch {
    throw new UserError(`${file}: not a zip archive GDAL can open (damaged, truncated or another format)`);
  }
  const entry = await firstHgt(gdal, root, names);
  if (entry === undefined) throw new UserError(`${file}: the zip holds no .hgt file`);
  return `${root}/${entry}`;
}

/** The path (below `dir`) of the first `.hgt` among `names` and their sub-folders, depth first. */
async function firstHgt(gdal: Gdal, dir: string, names: string[]): Promise<string | undefined> {
  for (const name of [...names].sort()) {
    if (/\.hgt$/i.test(name)) return name;
    const path = `${dir}/${name}`;
    const stat = await gdal.fs.statAsync(path).catch(() => undefined);
    if (stat === undefined || (stat.mode & constants.S_IFMT) !== constants.S_IFDIR) continue;
    const found = await firstHgt(gdal, path, await gdal.fs.readDirAsync(path).catch(() => []));
    if (found !== undefined) return `${name}/${found}`;
  }
  return undefined;
}

/**
 * Why GDAL could not open `path` (the name it opened for `file`), as a UserError naming the file: for
 * an SRTM `.hgt` (plain or in an archive), its name or its size; else GDAL's own message.
 */
export async function unreadable(gdal: Gdal, file: string, path: string, e: unknown): Promise<UserError> {
  const gzip = path.startsWith('/vsigzip/');
  const name = basename(path).replace(/\.gz$/i, '');
  if (!/\.hgt$/i.test(name)) return new UserError(`${file}: not a raster GDAL can read (${(e as Error).message})`);
  const inside = path.startsWith('/vsizip/') ? ` (its ${name})` : '';
  if (!SRTM_NAME.test(name)) {
    return new UserError(`${file}${inside}: cannot tell the tile from the file name (GDAL's SRTM reader needs the tile's south-west corner, e.g. N43E006.hgt)`);
  }
  const size = await gdal.fs.statAsync(path).then((s) => s.size, () => undefined);
  const what = size === undefined ? 'its size is unknown' : `${size} bytes${gzip ? ' once decompressed (or the .gz is damaged)' : ''}`;
  return new UserError(`${file}${inside}: ${what}: not an SRTM tile (GDAL reads ${SRTM_GRIDS})`);
}

/** Read through GDAL's decompressing virtual file systems. */
const COMPRESSED = /^\/vsi(g?zip)\//;

/**
 * Run one read of `ds`'s pixels. GDAL reports a damaged compressed stream (a .gz or a .zip entry whose
 * CRC does not match) only as an error message while the read itself succeeds, and gdal-async shows
 * that message only on the thread that read (`gdal.lastError`). So a dataset read from a .gz or .zip
 * is read synchronously, here, and the message checked; any other asynchronously.
 */
export async function readChecked(gdal: Gdal, ds: Dataset, sync: () => unknown, async: () => Promise<unknown>): Promise<void> {
  if (!COMPRESSED.test(ds.description)) {
    await async();
    return;
  }
  gdal.lastError = null;
  sync();
  const error = gdal.lastError as { message: string; level: number } | null;
  if (error && error.level >= gdal.CE_Failure) throw new Error(error.message);
}
