/**
 * PMTiles v3 reader over a RangeSource (local positional reads or HTTP Range requests), built on the
 * `pmtiles` package: its header parsing, its directory deserialisation (through its SharedPromiseCache,
 * which also bounds the cached leaf directories) and its `findTile`. Tiles come back as stored
 * (e.g. still gzip'd): nothing is decompressed but directories and metadata.
 */
import { stat } from 'node:fs/promises';
import { gunzipSync } from 'node:zlib';
import {
  Compression,
  findTile,
  SharedPromiseCache,
  tileIdToZxy,
  zxyToTileId,
  type Entry,
  type Header,
  type RangeResponse,
  type Source,
} from 'pmtiles';
import { isUserError, UserError } from '../errors.ts';
import { FileRangeSource, type RangeSource, type Store } from '../storage.ts';
import { isStoreError } from '../store-read.ts';
import { isValidTile } from '../tile-math.ts';
import { archiveEnd, parseHeader, ROOT_REGION_SIZE } from './header.ts';

/** One tile entry of an archive; `offset` is relative to the tile data section. */
export interface ArchiveEntry {
  tileId: number;
  z: number;
  x: number;
  y: number;
  offset: number;
  length: number;
  runLength: number;
}

/** Where a tile's stored bytes are: `offset` relative to the tile data section. */
export interface TileLocation {
  offset: number;
  length: number;
}

/** Read access to one PMTiles v3 archive. */
export interface ArchiveReader {
  header: Header;
  /** The JSON metadata, parsed (a fresh object on every call). */
  metadata(): Promise<Record<string, unknown>>;
  /** Stored bytes of tile z/x/y (not decompressed); undefined when absent or outside the archive's zoom range. */
  getTile(z: number, x: number, y: number): Promise<Uint8Array | undefined>;
  /** Where tile z/x/y's bytes are (for ETags: equal locations mean equal bytes); undefined when absent. */
  locateTile(z: number, x: number, y: number): Promise<TileLocation | undefined>;
  /**
   * Every tile entry in tile-id order, walking leaf directories (does not disturb the directory cache).
   * With `within`, a leaf directory is read only when `within(start, end)` says its tile ids
   * `[start, end)` matter (entries of the root and of the leaves read are all yielded).
   */
  entries(within?: (start: number, end: number) => boolean): AsyncIterable<ArchiveEntry>;
  /** Raw bytes of the tile data section (`offset` relative to tileDataOffset). */
  readRange(offset: number, length: number): Promise<Uint8Array>;
  /** Release the underlying source. */
  close(): Promise<void>;
}

/** Tuning for `openArchive`. */
export interface OpenArchiveOptions {
  /** Leaf directories kept in memory (LRU); default 64. */
  maxCachedDirectories?: number;
}

/** Default bound of the leaf-directory cache. */
const DEFAULT_CACHED_DIRECTORIES = 64;
/** The spec allows a root plus at most three levels of leaves. */
const MAX_DIRECTORY_DEPTH = 3;

function toArrayBuffer(u8: Uint8Array): ArrayBuffer {
  if (u8.byteOffset === 0 && u8.byteLength === u8.buffer.byteLength && u8.buffer instanceof ArrayBuffer) return u8.buffer;
  return new Uint8Array(u8).buffer; // a copy (Buffer#slice would be a view of the shared pool)
}

/** Decompress a directory or the metadata (internal compression); tiles never go through here. */
async function decodeInternal(buf: ArrayBuffer, compression: Compression): Promise<ArrayBuffer> {
  if (compression === Compression.None) return buf;
  if (compression === Compression.Gzip) return toArrayBuffer(gunzipSync(new Uint8Array(buf)));
  throw new Error(`unsupported internal compression ${compression}`);
}

/** The `pmtiles` package's Source interface over a RangeSource. */
class SourceAdapter implements Source {
  /** `initial`: the first 16 KiB already read by openArchive, answered once instead of a second read. */
  constructor(
    private readonly src: RangeSource,
    private initial?: Uint8Array,
  ) {}
  async getBytes(offset: number, length: number): Promise<RangeResponse> {
    if (this.initial && offset === 0 && length === ROOT_REGION_SIZE) {
      const data = toArrayBuffer(this.initial);
      this.initial = undefined;
      return { data };
    }
    return { data: toArrayBuffer(await this.src.getBytes(offset, length)) };
  }
  getKey(): string {
    return this.src.key();
  }
}

function reason(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** Rethrow a failed store read as it is: a timeout or a dead store is not a corrupt archive. */
function passStoreErrors(e: unknown): void {
  if (isStoreError(e)) throw e;
}

class Reader implements ArchiveReader {
  private readonly key: string;

  constructor(
    private readonly source: RangeSource,
    private readonly adapter: SourceAdapter,
    private readonly cache: SharedPromiseCache,
    readonly header: Header,
    private readonly root: Entry[],
  ) {
    this.key = source.key();
  }

  async metadata(): Promise<Record<string, unknown>> {
    const h = this.header;
    const raw = await this.source.getBytes(h.jsonMetadataOffset, h.jsonMetadataLength);
    if (raw.length !== h.jsonMetadataLength) throw new UserError(`${this.key}: truncated PMTiles metadata`);
    let value: unknown;
    try {
      value = JSON.parse(Buffer.from(await decodeInternal(toArrayBuffer(raw), h.internalCompression)).toString('utf8'));
    } catch (e) {
      throw new UserError(`${this.key}: corrupt PMTiles metadata (${reason(e)})`, { cause: e });
    }
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      throw new UserError(`${this.key}: PMTiles metadata is not a JSON object`);
    }
    return value as Record<string, unknown>;
  }

  /** A leaf directory through `cache`; failures are not cached (a transient HTTP error must not stick). */
  private async leaf(entry: Entry, cache: SharedPromiseCache = this.cache): Promise<Entry[]> {
    const offset = this.header.leafDirectoryOffset + entry.offset;
    if (entry.offset + entry.length > (this.header.leafDirectoryLength ?? 0)) {
      throw new UserError(`${this.key}: corrupt PMTiles directory (a leaf at ${offset}+${entry.length} is outside the leaf section)`);
    }
    try {
      return await cache.getDirectory(this.adapter, offset, entry.length, this.header);
    } catch (e) {
      const cacheKey = `${this.key}|${this.header.etag ?? ''}|${offset}|${entry.length}`;
      cache.cache.delete(cacheKey);
      cache.pendingFetches.delete(cacheKey);
      passStoreErrors(e);
      throw new UserError(`${this.key}: corrupt PMTiles leaf directory at ${offset}+${entry.length} (${reason(e)})`, { cause: e });
    }
  }

  async locateTile(z: number, x: number, y: number): Promise<TileLocation | undefined> {
    if (!isValidTile(z, x, y) || z < this.header.minZoom || z > this.header.maxZoom) return undefined;
    const tileId = zxyToTileId(z, x, y);
    let dir = this.root;
    for (let depth = 0; depth <= MAX_DIRECTORY_DEPTH; depth++) {
      const entry = findTile(dir, tileId);
      if (!entry) return undefined;
      if (entry.runLength > 0) return { offset: entry.offset, length: entry.length }; // not the cached entry itself
      dir = await this.leaf(entry);
    }
    throw new UserError(`${this.key}: corrupt PMTiles archive (directories nested deeper than ${MAX_DIRECTORY_DEPTH} levels)`);
  }

  async getTile(z: number, x: number, y: number): Promise<Uint8Array | undefined> {
    const loc = await this.locateTile(z, x, y);
    return loc && this.readRange(loc.offset, loc.length);
  }

  async readRange(offset: number, length: number): Promise<Uint8Array> {
    if (offset + length > (this.header.tileDataLength ?? 0)) {
      throw new UserError(`${this.key}: corrupt PMTiles directory (tile data at ${offset}+${length} is outside the tile data section)`);
    }
    const bytes = await this.source.getBytes(this.header.tileDataOffset + offset, length);
    if (bytes.length !== length) {
      throw new UserError(`${this.key}: truncated PMTiles tile data (wanted ${length} bytes at ${this.header.tileDataOffset + offset}, got ${bytes.length})`);
    }
    return bytes;
  }

  async *entries(within?: (start: number, end: number) => boolean): AsyncIterable<ArchiveEntry> {
    // A private two-slot cache: a full walk must not evict the server's hot leaves.
    const walkCache = new SharedPromiseCache(2, true, decodeInternal);
    yield* this.walk(this.root, 0, walkCache, Infinity, within);
  }

  /** The entries of `dir`, whose tile ids end before `end`. */
  private async *walk(dir: Entry[], depth: number, cache: SharedPromiseCache, end: number, within?: (start: number, end: number) => boolean): AsyncGenerator<ArchiveEntry> {
    for (let i = 0; i < dir.length; i++) {
      const e = dir[i];
      if (e.runLength > 0) {
        const [z, x, y] = tileIdToZxy(e.tileId);
        yield { tileId: e.tileId, z, x, y, offset: e.offset, length: e.length, runLength: e.runLength };
      } else {
        if (depth >= MAX_DIRECTORY_DEPTH) {
          throw new UserError(`${this.key}: corrupt PMTiles archive (directories nested deeper than ${MAX_DIRECTORY_DEPTH} levels)`);
        }
        const leafEnd = i + 1 < dir.length ? dir[i + 1].tileId : end;
        if (within && !within(e.tileId, leafEnd)) continue;
        yield* this.walk(await this.leaf(e, cache), depth + 1, cache, leafEnd, within);
      }
    }
  }

  async close(): Promise<void> {
    await this.source.close();
  }
}

/**
 * Open a PMTiles v3 archive: validates the header (magic, version, offsets), checks the source is as
 * long as the header says, and loads the root directory. Errors are UserErrors naming `source.key()`.
 */
export async function openArchive(source: RangeSource, options: OpenArchiveOptions = {}): Promise<ArchiveReader> {
  const key = source.key();
  try {
    const start = await source.getBytes(0, ROOT_REGION_SIZE);
    const header = parseHeader(start, key);
    const end = archiveEnd(header);
    if ((await source.getBytes(end - 1, 1)).length !== 1) {
      throw new UserError(`${key}: truncated PMTiles archive (the header's sections need ${end} bytes; the file is shorter)`);
    }
    const adapter = new SourceAdapter(source, start);
    const cache = new SharedPromiseCache(options.maxCachedDirectories ?? DEFAULT_CACHED_DIRECTORIES, true, decodeInternal);
    let root: Entry[];
    try {
      // getHeader also deserialises and caches the root (empty roots included), so this is a cache hit.
      const cachedHeader = await cache.getHeader(adapter);
      root = await cache.getDirectory(adapter, header.rootDirectoryOffset, header.rootDirectoryLength, cachedHeader);
    } catch (e) {
      passStoreErrors(e);
      throw new UserError(`${key}: corrupt PMTiles root directory (${reason(e)})`, { cause: e });
    }
    return new Reader(source, adapter, cache, header, root);
  } catch (e) {
    if (isUserError(e)) throw e;
    passStoreErrors(e);
    throw new UserError(`${key}: cannot read PMTiles archive (${reason(e)})`, { cause: e });
  }
}

/** `openArchive`, closing `source` again if it is not a valid archive. */
async function openOwned(source: RangeSource, options?: OpenArchiveOptions): Promise<ArchiveReader> {
  try {
    return await openArchive(source, options);
  } catch (e) {
    await source.close();
    throw e;
  }
}

/** Open a local archive file with positional reads (closes the file again if it is not a valid archive). */
export async function openArchiveFile(path: string, options?: OpenArchiveOptions): Promise<ArchiveReader> {
  return openOwned(await FileRangeSource.open(path), options);
}

/** Open the archive at `relPath` of a store (a folder, HTTP or S3: ranged reads with the store's deadline and retries). */
export async function openStoreArchive(store: Store, relPath: string, options?: OpenArchiveOptions): Promise<ArchiveReader> {
  return openOwned(await store.openRange(relPath), options);
}

/** What a build needs to know of an archive it wrote before: its metadata, tile count and file size. */
export interface ArchiveSummary {
  metadata: Record<string, unknown>;
  tiles: number;
  bytes: number;
}

/** The summary of the archive file at `path`, or undefined when there is none or it cannot be read as one. */
export async function summarizeArchiveFile(path: string): Promise<ArchiveSummary | undefined> {
  let r: ArchiveReader;
  try {
    r = await openArchiveFile(path);
  } catch {
    return undefined;
  }
  try {
    return { metadata: await r.metadata(), tiles: Number(r.header.numAddressedTiles), bytes: (await stat(path)).size };
  } finally {
    await r.close();
  }
}
