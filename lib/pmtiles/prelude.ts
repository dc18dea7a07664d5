/**
 * Everything of a PMTiles v3 archive before its tile data (header, root directory, metadata, leaf
 * directories), laid out from an index layout: the one place that decides these bytes, shared by the
 * streaming writer (tile bytes first, then the archive) and the planned archive (the layout first,
 * the tile bytes streamed after it, lib/pmtiles/planned.ts). Equal layouts and options give equal bytes.
 */
import { Compression, TileType, type Header } from 'pmtiles';
import type { BBox } from '../tile-math.ts';
import { buildDirectories, gzipInternal } from './directory.ts';
import { HEADER_SIZE, SPEC_VERSION, serializeHeader } from './header.ts';
import type { IndexLayout } from './tile-index.ts';

/** How the archive is described; tile bytes are stored exactly as given. */
export interface WriterOptions {
  tileType: TileType;
  /** How the caller already compressed each tile's bytes. */
  tileCompression: Compression;
  /** JSON metadata (name, attribution, vector_layers, …); `bounds`, `center`, `minzoom`, `maxzoom` are filled in when absent. */
  metadata?: Record<string, unknown>;
  /** `[w, s, e, n]`; default: the extent of the tiles at the deepest zoom written. */
  bounds?: [number, number, number, number];
  /** `[lon, lat, zoom]`; default: centre of the bounds at the min zoom. */
  center?: [number, number, number];
  /** Force leaf directories of this many entries (tests); default: automatic, root only when it fits. */
  leafEntries?: number;
}

/** The options that describe an archive as `h` does (types, bounds, centre), with `metadata`. */
export function writerOptionsOf(h: Header, metadata: Record<string, unknown>): WriterOptions {
  return {
    tileType: h.tileType,
    tileCompression: h.tileCompression,
    metadata,
    bounds: [h.minLon, h.minLat, h.maxLon, h.maxLat],
    center: [h.centerLon, h.centerLat, h.centerZoom],
  };
}

/** Summary of a finished archive. */
export interface WriterResult {
  addressedTiles: number;
  tileEntries: number;
  tileContents: number;
  bytes: number;
  minZoom: number;
  maxZoom: number;
}

/** The bytes before the tile data, and where the tile data starts. */
export interface ArchivePrelude {
  header: Header;
  /** Header, root directory, metadata, leaf directories: written one after the other from offset 0. */
  parts: Uint8Array[];
  /** What the finished archive holds (its `bytes` include the tile data). */
  result: WriterResult;
}

/** Check writer options (a caller's bug, not a user's input: RangeError). */
export function checkOptions(opts: WriterOptions): void {
  if (TileType[opts.tileType] === undefined) throw new RangeError(`PMTiles writer: unknown tileType ${opts.tileType}`);
  if (Compression[opts.tileCompression] === undefined) throw new RangeError(`PMTiles writer: unknown tileCompression ${opts.tileCompression}`);
  const b = opts.bounds;
  if (b && (b.length !== 4 || !b.every(Number.isFinite) || b[0] > b[2] || b[1] > b[3])) {
    throw new RangeError(`PMTiles writer: bounds must be finite [w, s, e, n] with w ≤ e and s ≤ n, got ${JSON.stringify(b)}`);
  }
  const c = opts.center;
  if (c && (c.length !== 3 || !c.every(Number.isFinite))) {
    throw new RangeError(`PMTiles writer: center must be finite [lon, lat, zoom], got ${JSON.stringify(c)}`);
  }
}

function buildMetadata(h: Header, opts: WriterOptions): Uint8Array {
  const meta: Record<string, unknown> = { ...(opts.metadata ?? {}) };
  meta.bounds ??= [h.minLon, h.minLat, h.maxLon, h.maxLat];
  meta.center ??= [h.centerLon, h.centerLat, h.centerZoom];
  meta.minzoom ??= h.minZoom;
  meta.maxzoom ??= h.maxZoom;
  return gzipInternal(Buffer.from(JSON.stringify(meta), 'utf8'));
}

/** Header, directories and metadata of an archive with `layout` (clustered, gzip'd directories and metadata). */
export function archivePrelude(layout: IndexLayout, opts: WriterOptions): ArchivePrelude {
  const dirs = buildDirectories(layout.entries, opts.leafEntries);
  const bounds: BBox = opts.bounds ?? layout.extent ?? [-180, -85.0511287798066, 180, 85.0511287798066];
  const center = opts.center ?? [(bounds[0] + bounds[2]) / 2, (bounds[1] + bounds[3]) / 2, layout.minZoom];
  const header: Header = {
    specVersion: SPEC_VERSION,
    rootDirectoryOffset: HEADER_SIZE,
    rootDirectoryLength: dirs.root.length,
    jsonMetadataOffset: 0,
    jsonMetadataLength: 0,
    leafDirectoryOffset: 0,
    leafDirectoryLength: dirs.leafBytes,
    tileDataOffset: 0,
    tileDataLength: layout.dataLength,
    numAddressedTiles: layout.addressedTiles,
    numTileEntries: layout.entries.count,
    numTileContents: layout.tileContents,
    clustered: true,
    internalCompression: Compression.Gzip,
    tileCompression: opts.tileCompression,
    tileType: opts.tileType,
    minZoom: layout.minZoom,
    maxZoom: layout.maxZoom,
    minLon: bounds[0],
    minLat: bounds[1],
    maxLon: bounds[2],
    maxLat: bounds[3],
    centerZoom: Math.round(center[2]),
    centerLon: center[0],
    centerLat: center[1],
  };
  const metadata = buildMetadata(header, opts);
  header.jsonMetadataOffset = HEADER_SIZE + dirs.root.length;
  header.jsonMetadataLength = metadata.length;
  header.leafDirectoryOffset = header.jsonMetadataOffset + metadata.length;
  header.tileDataOffset = header.leafDirectoryOffset + dirs.leafBytes;
  return {
    header,
    parts: [serializeHeader(header), dirs.root, metadata, ...dirs.leaves],
    result: {
      addressedTiles: layout.addressedTiles,
      tileEntries: layout.entries.count,
      tileContents: layout.tileContents,
      bytes: header.tileDataOffset + layout.dataLength,
      minZoom: layout.minZoom,
      maxZoom: layout.maxZoom,
    },
  };
}
