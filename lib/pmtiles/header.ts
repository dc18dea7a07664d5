/**
 * PMTiles v3 header: serialisation for the writer, validation + parsing (via the `pmtiles` package) for the reader.
 */
import { bytesToHeader, Compression, type Header } from 'pmtiles';
import { UserError } from '../errors.ts';

/** Size of the fixed v3 header. */
export const HEADER_SIZE = 127;
/** The root directory must end within this many bytes from the start of the archive. */
export const ROOT_REGION_SIZE = 16384;
/** Largest compressed root directory that still fits after the header. */
export const MAX_ROOT_SIZE = ROOT_REGION_SIZE - HEADER_SIZE;
/** The spec version this module writes and reads. */
export const SPEC_VERSION = 3;
/** The 7 magic bytes at the start of every PMTiles archive. */
export const MAGIC = 'PMTiles';
/** Fixed-point factor of the header's longitudes/latitudes (int32 = degrees × 1e7). */
const COORD_SCALE = 10_000_000;

/** Field offsets of the v3 header (spec §3). */
enum Off {
  Version = 7,
  RootOffset = 8,
  RootLength = 16,
  MetadataOffset = 24,
  MetadataLength = 32,
  LeafOffset = 40,
  LeafLength = 48,
  DataOffset = 56,
  DataLength = 64,
  AddressedTiles = 72,
  TileEntries = 80,
  TileContents = 88,
  Clustered = 96,
  InternalCompression = 97,
  TileCompression = 98,
  TileType = 99,
  MinZoom = 100,
  MaxZoom = 101,
  MinLon = 102,
  MinLat = 106,
  MaxLon = 110,
  MaxLat = 114,
  CenterZoom = 118,
  CenterLon = 119,
  CenterLat = 123,
}

function setUint64(v: DataView, offset: number, value: number): void {
  if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`header field at ${offset}: ${value} is not a uint64`);
  v.setUint32(offset, value % 2 ** 32, true);
  v.setUint32(offset + 4, Math.floor(value / 2 ** 32), true);
}

function setCoord(v: DataView, offset: number, degrees: number): void {
  v.setInt32(offset, Math.round(degrees * COORD_SCALE), true);
}

/** Serialise a complete v3 header (all fields of `h` are written; `etag` is ignored). */
export function serializeHeader(h: Header): Uint8Array {
  const bytes = new Uint8Array(HEADER_SIZE);
  const v = new DataView(bytes.buffer);
  for (let i = 0; i < MAGIC.length; i++) bytes[i] = MAGIC.charCodeAt(i);
  v.setUint8(Off.Version, SPEC_VERSION);
  setUint64(v, Off.RootOffset, h.rootDirectoryOffset);
  setUint64(v, Off.RootLength, h.rootDirectoryLength);
  setUint64(v, Off.MetadataOffset, h.jsonMetadataOffset);
  setUint64(v, Off.MetadataLength, h.jsonMetadataLength);
  setUint64(v, Off.LeafOffset, h.leafDirectoryOffset);
  setUint64(v, Off.LeafLength, h.leafDirectoryLength ?? 0);
  setUint64(v, Off.DataOffset, h.tileDataOffset);
  setUint64(v, Off.DataLength, h.tileDataLength ?? 0);
  setUint64(v, Off.AddressedTiles, h.numAddressedTiles);
  setUint64(v, Off.TileEntries, h.numTileEntries);
  setUint64(v, Off.TileContents, h.numTileContents);
  v.setUint8(Off.Clustered, h.clustered ? 1 : 0);
  v.setUint8(Off.InternalCompression, h.internalCompression);
  v.setUint8(Off.TileCompression, h.tileCompression);
  v.setUint8(Off.TileType, h.tileType);
  v.setUint8(Off.MinZoom, h.minZoom);
  v.setUint8(Off.MaxZoom, h.maxZoom);
  setCoord(v, Off.MinLon, h.minLon);
  setCoord(v, Off.MinLat, h.minLat);
  setCoord(v, Off.MaxLon, h.maxLon);
  setCoord(v, Off.MaxLat, h.maxLat);
  v.setUint8(Off.CenterZoom, h.centerZoom);
  setCoord(v, Off.CenterLon, h.centerLon);
  setCoord(v, Off.CenterLat, h.centerLat);
  return bytes;
}

/** Compressions this module can decode for directories and metadata. */
const SUPPORTED_INTERNAL = new Set<Compression>([Compression.None, Compression.Gzip]);

/**
 * Validate and parse the first bytes of an archive (at least the header; ideally the first 16 KiB).
 * Throws a UserError naming `key` on a short read, bad magic, wrong version or inconsistent offsets.
 */
export function parseHeader(start: Uint8Array, key: string): Header {
  if (start.length < MAGIC.length || String.fromCharCode(...start.subarray(0, MAGIC.length)) !== MAGIC) {
    throw new UserError(`${key}: not a PMTiles archive (bad magic: the file does not start with "${MAGIC}")`);
  }
  if (start.length < HEADER_SIZE) {
    throw new UserError(`${key}: truncated PMTiles header (${start.length} bytes, the v3 header has ${HEADER_SIZE})`);
  }
  const version = start[Off.Version];
  if (version !== SPEC_VERSION) {
    throw new UserError(`${key}: unsupported PMTiles spec version ${version} (only version ${SPEC_VERSION} is supported)`);
  }
  // A copy in its own ArrayBuffer: `start` may be a view into a pooled Buffer.
  const copy = new Uint8Array(HEADER_SIZE);
  copy.set(start.subarray(0, HEADER_SIZE));
  const h = bytesToHeader(copy.buffer);
  if (!SUPPORTED_INTERNAL.has(h.internalCompression)) {
    throw new UserError(`${key}: unsupported internal compression ${Compression[h.internalCompression] ?? h.internalCompression} (need none or gzip)`);
  }
  if (h.rootDirectoryOffset < HEADER_SIZE || h.rootDirectoryOffset + h.rootDirectoryLength > ROOT_REGION_SIZE) {
    throw new UserError(
      `${key}: corrupt PMTiles header: root directory at ${h.rootDirectoryOffset}+${h.rootDirectoryLength} is not within the first ${ROOT_REGION_SIZE} bytes`,
    );
  }
  if (h.rootDirectoryOffset + h.rootDirectoryLength > start.length) {
    throw new UserError(
      `${key}: truncated PMTiles root directory (needs bytes up to ${h.rootDirectoryOffset + h.rootDirectoryLength}, the file has ${start.length})`,
    );
  }
  if (h.minZoom > h.maxZoom) throw new UserError(`${key}: corrupt PMTiles header: min zoom ${h.minZoom} > max zoom ${h.maxZoom}`);
  return h;
}

/** End offset of the last section the header points to (the archive's minimum length). */
export function archiveEnd(h: Header): number {
  return Math.max(
    HEADER_SIZE,
    h.rootDirectoryOffset + h.rootDirectoryLength,
    h.jsonMetadataOffset + h.jsonMetadataLength,
    h.leafDirectoryOffset + (h.leafDirectoryLength ?? 0),
    h.tileDataOffset + (h.tileDataLength ?? 0),
  );
}
