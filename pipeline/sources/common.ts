import { open } from 'node:fs/promises';
import { gunzipSync, gzipSync } from 'node:zlib';
import { Compression, TileType } from 'pmtiles';
import { UserError } from '../../lib/errors.ts';
import { isGzip } from '../../lib/gzip.ts';
import type { TileFormat } from '../../lib/manifest.ts';

/**
 * The kinds of input a tileset reads: tile archives and folders (packed as they are), `osm` (an
 * OpenStreetMap extract, generated into tiles), `gis` (a vector file GDAL reads) and `postgis` (a
 * PostgreSQL database), both cut into tiles by GDAL (sources/gis.ts), `raster` (images GDAL opens, or a
 * glob of them: warped into tiles by the imagery stage, pipeline/imagery/).
 */
export type InputKind = 'mbtiles' | 'pmtiles' | 'folder' | 'osm' | 'gis' | 'postgis' | 'raster';

/** Highest zoom level accepted from any input (the pmtiles library rejects deeper tile ids). */
export const MAX_ZOOM = 26;

/** Metadata of a tile source, normalised to TileJSON-like fields. */
export interface SourceMetadata {
  name?: string;
  attribution?: string;
  description?: string;
  version?: string;
  /** [west, south, east, north] in degrees. */
  bounds: [number, number, number, number];
  /** Tiles cover `bounds` (the world) up to this zoom and `region` only above it (an OSM tileset with the world's low zooms). */
  world_maxzoom?: number;
  region?: [number, number, number, number];
  /** [lon, lat, zoom]. */
  center: [number, number, number];
  minzoom: number;
  maxzoom: number;
  /** MVT layer descriptions (vector only). */
  vector_layers?: unknown[];
  /** Other metadata keys worth carrying over (tilestats, type, ...). */
  extra: Record<string, unknown>;
}

/** One tile as stored in the source, in XYZ (slippy map) coordinates. */
export interface SourceTile {
  z: number;
  x: number;
  y: number;
  data: Uint8Array;
}

/** One timed step of opening or packing a source. */
export interface SourcePhase {
  name: string;
  seconds: number;
}

/** An opened input: metadata, a tile count, and a stream of tiles. */
export interface TileSource {
  /** The input path, for messages. */
  readonly path: string;
  readonly kind: InputKind;
  readonly format: TileFormat;
  /** Compression of every tile `tiles()` yields (the archive's tile compression). */
  readonly compression: Compression;
  readonly metadata: SourceMetadata;
  /** Number of tiles `tiles()` will yield (for progress). */
  readonly count: number;
  /** Stream the tiles; bytes are as stored (gzip kept), never all in memory at once. */
  tiles(): AsyncIterable<SourceTile>;
  /** Steps that ran to open the source, with their wall time (a generated source: clip, sea, generator). */
  readonly phases?: readonly SourcePhase[];
  /** Release file handles. */
  close(): Promise<void>;
}

/** Magic bytes of the tile encodings we recognise. */
const PNG_MAGIC = [0x89, 0x50, 0x4e, 0x47] as const;
const JPEG_MAGIC = [0xff, 0xd8, 0xff] as const;
const RIFF = [0x52, 0x49, 0x46, 0x46] as const;
const WEBP = [0x57, 0x45, 0x42, 0x50] as const;
const WEBP_TAG_OFFSET = 8;

function startsWith(data: Uint8Array, magic: readonly number[], at = 0): boolean {
  if (data.length < at + magic.length) return false;
  return magic.every((b, i) => data[at + i] === b);
}

/** Guess a tile's format from its first bytes (gzip or anything unrecognised counts as MVT). */
export function sniffFormat(data: Uint8Array): TileFormat {
  if (startsWith(data, PNG_MAGIC)) return 'png';
  if (startsWith(data, JPEG_MAGIC)) return 'jpg';
  if (startsWith(data, RIFF) && startsWith(data, WEBP, WEBP_TAG_OFFSET)) return 'webp';
  return 'pbf';
}

/** Accepted spellings of tile formats (MBTiles `format`, file extensions). */
const FORMAT_ALIASES: Record<string, TileFormat> = {
  pbf: 'pbf',
  mvt: 'pbf',
  png: 'png',
  jpg: 'jpg',
  jpeg: 'jpg',
  webp: 'webp',
};

/** Parse a format name; undefined when unknown. */
export function parseFormat(s: string): TileFormat | undefined {
  return FORMAT_ALIASES[s.trim().toLowerCase()];
}

/** The PMTiles tile type of a format. */
export function tileTypeOf(format: TileFormat): TileType {
  switch (format) {
    case 'pbf':
      return TileType.Mvt;
    case 'png':
      return TileType.Png;
    case 'jpg':
      return TileType.Jpeg;
    case 'webp':
      return TileType.Webp;
  }
}

/** The format of a PMTiles tile type; undefined for types tilebake does not serve. */
export function formatOfTileType(t: TileType): TileFormat | undefined {
  switch (t) {
    case TileType.Mvt:
      return 'pbf';
    case TileType.Png:
      return 'png';
    case TileType.Jpeg:
      return 'jpg';
    case TileType.Webp:
      return 'webp';
    default:
      return undefined;
  }
}

/** The compression the archive should declare for tiles like `first` (only MVT tiles are gzipped). */
export function compressionOf(format: TileFormat, first: Uint8Array | undefined): Compression {
  return format === 'pbf' && first !== undefined && isGzip(first) ? Compression.Gzip : Compression.None;
}

/**
 * Make one MVT tile match the archive's compression: tiles already matching are returned as
 * stored (bit-exact); a plain tile in a gzip archive is gzipped and vice versa.
 */
export function matchCompression(data: Uint8Array, target: Compression, format: TileFormat): Uint8Array {
  if (format !== 'pbf') return data;
  const gz = isGzip(data);
  if (target === Compression.Gzip && !gz) return gzipSync(data);
  if (target === Compression.None && gz) return gunzipSync(data);
  return data;
}

/** Check a tile coordinate; `where` names the tile in the error. */
export function checkTileCoord(z: number, x: number, y: number, where: string): void {
  if (!Number.isInteger(z) || z < 0 || z > MAX_ZOOM) {
    throw new UserError(`${where}: zoom ${z} out of range (expected an integer 0..${MAX_ZOOM})`);
  }
  const n = 2 ** z;
  if (!Number.isInteger(x) || !Number.isInteger(y) || x < 0 || y < 0 || x >= n || y >= n) {
    throw new UserError(`${where}: tile ${z}/${x}/${y} out of range (expected 0 <= x, y < ${n} at zoom ${z})`);
  }
}

/** Longitude of the west edge of tile column `x` at zoom `z`. */
export function tileLon(x: number, z: number): number {
  return (x / 2 ** z) * 360 - 180;
}

/** Latitude of the north edge of tile row `y` (XYZ) at zoom `z`. */
export function tileLat(y: number, z: number): number {
  const n = Math.PI - (2 * Math.PI * y) / 2 ** z;
  return (180 / Math.PI) * Math.atan(Math.sinh(n));
}

/** Bounds [w, s, e, n] covered by the XYZ tile range at zoom `z`. */
export function tileRangeBounds(z: number, minX: number, maxX: number, minY: number, maxY: number): [number, number, number, number] {
  return [tileLon(minX, z), tileLat(maxY + 1, z), tileLon(maxX + 1, z), tileLat(minY, z)];
}

/** A default center: the middle of `bounds` at a zoom between min and max. */
export function defaultCenter(bounds: [number, number, number, number], minzoom: number, maxzoom: number): [number, number, number] {
  return [(bounds[0] + bounds[2]) / 2, (bounds[1] + bounds[3]) / 2, Math.max(minzoom, Math.min(maxzoom, Math.floor((minzoom + maxzoom) / 2)))];
}

/** Parse `"a,b,c,..."` into exactly `n` finite numbers, or throw naming `where` and `field`. */
export function parseNumberList(value: unknown, n: number, where: string, field: string): number[] {
  const parts = Array.isArray(value) ? value : typeof value === 'string' ? value.split(',') : [];
  const nums = parts.map((p) => (typeof p === 'number' ? p : Number(String(p).trim())));
  if (nums.length !== n || nums.some((v) => !Number.isFinite(v))) {
    throw new UserError(`${where}: metadata "${field}": expected ${n} comma-separated numbers (got ${JSON.stringify(value)})`);
  }
  return nums;
}

/** Parse bounds metadata and check it is a sane [w, s, e, n]. */
export function parseBounds(value: unknown, where: string): [number, number, number, number] {
  const [w, s, e, n] = parseNumberList(value, 4, where, 'bounds');
  if (w < -180 || e > 180 || s < -90 || n > 90 || w > e || s > n) {
    throw new UserError(`${where}: metadata "bounds": expected west,south,east,north in degrees with west <= east and south <= north (got ${JSON.stringify(value)})`);
  }
  return [w, s, e, n];
}

/** Parse a zoom metadata field (number or numeric string). */
export function parseZoom(value: unknown, where: string, field: string): number {
  const z = typeof value === 'number' ? value : Number(String(value).trim());
  if (!Number.isInteger(z) || z < 0 || z > MAX_ZOOM) {
    throw new UserError(`${where}: metadata "${field}": expected an integer 0..${MAX_ZOOM} (got ${JSON.stringify(value)})`);
  }
  return z;
}

/** Wrap an unexpected error while reading `path` into a UserError (user errors pass through). */
export function asInputError(e: unknown, path: string, what: string): Error {
  if (e instanceof Error && e.name === 'UserError') return e;
  const msg = e instanceof Error ? e.message : String(e);
  return new UserError(`${path}: ${what} (${msg})`, { cause: e });
}

/** Bytes read to recognise a file by its content (magic numbers, and an SQLite header's application id). */
export const SNIFF_BYTES = 72;

/** The first `bytes` bytes of a file (fewer for a shorter file). */
export async function readHead(path: string, bytes = SNIFF_BYTES): Promise<Buffer> {
  const fh = await open(path, 'r');
  try {
    const buf = Buffer.alloc(bytes);
    const { bytesRead } = await fh.read(buf, 0, bytes, 0);
    return buf.subarray(0, bytesRead);
  } finally {
    await fh.close();
  }
}
