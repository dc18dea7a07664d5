import { open, readFile, stat } from 'node:fs/promises';
import { basename } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { UserError } from '../../lib/errors.ts';
import type { DemGrid, DemInfo } from './grid.ts';
import { extractZipEntry, listZip } from './zip.ts';

/** SRTM void value. */
export const HGT_VOID = -32768;
/** Posts per side of a 3″ (SRTM3) and 1″ (SRTM1) tile. */
export const HGT_SIDES = [1201, 3601] as const;

/** SW corner of a tile from an SRTM name like `N43E006` (anywhere in the file name). */
export function hgtCorner(name: string): { lat: number; lon: number } | undefined {
  const m = /([NS])(\d{1,2})([EW])(\d{1,3})/i.exec(name);
  if (!m) return undefined;
  const lat = Number(m[2]) * (m[1].toUpperCase() === 'S' ? -1 : 1);
  const lon = Number(m[4]) * (m[3].toUpperCase() === 'W' ? -1 : 1);
  if (lat < -90 || lat >= 90 || lon < -180 || lon >= 180) return undefined;
  return { lat, lon };
}

/** True for names the direct reader handles: .hgt, .hgt.gz, .zip (holding one .hgt). */
export function isHgtName(file: string): boolean {
  return /\.hgt(\.gz)?$/i.test(file) || /\.zip$/i.test(file);
}

/** The post grid of an SRTM tile named `name` (e.g. N43E006.hgt) holding `bytes` bytes of posts. */
export function hgtInfo(name: string, bytes: number, file: string): DemInfo {
  const corner = hgtCorner(basename(name));
  if (!corner) throw new UserError(`${file}: cannot tell the tile from the file name (expected e.g. N43E006.hgt)`);
  const posts = bytes / 2;
  const side = Math.round(Math.sqrt(posts));
  if (!(HGT_SIDES as readonly number[]).includes(side) || side * side !== posts) {
    throw new UserError(`${file}: ${bytes} bytes is not an SRTM tile (expected ${HGT_SIDES.map((s) => `${s}²`).join(' or ')} int16 posts)`);
  }
  const step = 1 / (side - 1);
  return {
    file,
    originLat: corner.lat + 1,
    originLon: corner.lon,
    stepLat: step,
    stepLon: step,
    rows: side,
    cols: side,
    footprint: [corner.lon, corner.lat, corner.lon + 1, corner.lat + 1],
  };
}

/**
 * Parse raw .hgt bytes (big-endian int16, 1201² or 3601², voids -32768). Posts sit on the grid
 * lines: row 0 is the north edge (lat + 1), column 0 the west edge (lon).
 */
export function parseHgt(bytes: Uint8Array, name: string, file: string): DemGrid {
  const info = hgtInfo(name, bytes.length, file);
  const posts = info.rows * info.cols;
  const data = new Float32Array(posts);
  for (let i = 0, j = 0; i < posts; i++, j += 2) {
    // Big-endian int16.
    const v = ((bytes[j] << 24) >> 16) | bytes[j + 1];
    data[i] = v === HGT_VOID ? NaN : v;
  }
  return { ...info, data, integer: true };
}

/** Bytes of the gzip ISIZE trailer (uncompressed size mod 2^32). */
const GZIP_TRAILER_SIZE_BYTES = 4;

/** The post grid of a .hgt, .hgt.gz or .zip without decoding its heights (a .zip's directory is read). */
export async function probeHgt(file: string): Promise<DemInfo> {
  try {
    if (/\.gz$/i.test(file)) {
      const fh = await open(file, 'r');
      try {
        const { size } = await fh.stat();
        const tail = Buffer.alloc(GZIP_TRAILER_SIZE_BYTES);
        await fh.read(tail, 0, GZIP_TRAILER_SIZE_BYTES, Math.max(0, size - GZIP_TRAILER_SIZE_BYTES));
        return hgtInfo(basename(file).replace(/\.gz$/i, ''), tail.readUInt32LE(0), file);
      } finally {
        await fh.close();
      }
    }
    if (/\.zip$/i.test(file)) {
      let entry;
      try {
        entry = listZip(await readFile(file)).find((e) => /\.hgt$/i.test(e.name));
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code) throw e;
        throw new UserError(`${file}: cannot decompress (${(e as Error).message})`);
      }
      if (!entry) throw new UserError(`${file}: the zip holds no .hgt file`);
      return hgtInfo(basename(entry.name), entry.size, file);
    }
    return hgtInfo(basename(file), (await stat(file)).size, file);
  } catch (e) {
    if (e instanceof UserError) throw e;
    throw new UserError(`${file}: cannot read (${(e as NodeJS.ErrnoException).code ?? String(e)})`);
  }
}

/** Read a .hgt, .hgt.gz or .zip (with one .hgt inside) without GDAL. */
export async function readHgt(file: string): Promise<DemGrid> {
  let bytes: Uint8Array;
  try {
    bytes = await readFile(file);
  } catch (e) {
    throw new UserError(`${file}: cannot read (${(e as NodeJS.ErrnoException).code ?? String(e)})`);
  }
  let name = basename(file);
  try {
    if (/\.gz$/i.test(file)) {
      bytes = gunzipSync(bytes);
      name = name.replace(/\.gz$/i, '');
    } else if (/\.zip$/i.test(file)) {
      const entry = listZip(bytes).find((e) => /\.hgt$/i.test(e.name));
      if (!entry) throw new UserError(`${file}: the zip holds no .hgt file`);
      bytes = extractZipEntry(bytes, entry);
      name = basename(entry.name);
    }
  } catch (e) {
    if (e instanceof UserError) throw e;
    throw new UserError(`${file}: cannot decompress (${(e as Error).message})`);
  }
  return parseHgt(bytes, name, file);
}
