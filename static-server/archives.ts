import { promisify } from 'node:util';
import { gunzip } from 'node:zlib';
import { Compression } from 'pmtiles';
import { openArchive, type ArchiveReader } from '../lib/pmtiles/index.ts';
import type { Store } from '../lib/storage.ts';
import { LoadingCache } from '../lib/shared-work.ts';
import { ByteLru } from '../lib/lru.ts';
import { cacheBudgetBytes, type ServerContext } from './context.ts';
import { serverMetrics } from './metrics.ts';
import { asStoreError } from '../lib/store-read.ts';
import { OpenedFile } from './opened-file.ts';
import { identityEtag, tileBody, type TileBody } from './tile-response.ts';

/** Rough per-entry overhead of the tile cache (key string, map slot, body object, ETag). */
const ENTRY_OVERHEAD_BYTES = 160;
/** Largest decompressed tile accepted (a corrupt or hostile gzip stream must not expand without bound). */
const MAX_DECOMPRESSED_TILE_BYTES = 64 * 1024 * 1024;
/** Cache key prefix of decompressed tiles (keyed by the stored tile's ETag: equal bytes share one entry). */
const IDENTITY_KEY_PREFIX = 'identity:';

const gunzipAsync = promisify(gunzip);

/** An archive opened for serving. */
export interface ServedArchive {
  /** Path of the archive relative to the store. */
  readonly path: string;
  /** True when the archive stores tiles gzip-compressed. */
  readonly gzip: boolean;
  /** Min and max zoom from the archive header. */
  readonly minzoom: number;
  readonly maxzoom: number;
}

interface OpenArchive extends ServedArchive {
  readonly index: number;
  getTile(z: number, x: number, y: number): Promise<Uint8Array | undefined>;
  close(): Promise<void>;
}

/** What an entry of the tile cache costs: its body, key and bookkeeping. */
function tileEntryBytes(value: TileBody | null, key: string): number {
  return ENTRY_OVERHEAD_BYTES + key.length * 2 + (value ? value.bytes.length : 0);
}

/** A tile cache bounded in bytes; least recently used entries go first. `null` caches "no tile". */
export class TileLru extends ByteLru<string, TileBody | null> {
  /** Insert a value (null: known to be absent), evicting the least recently used entries beyond the budget. */
  override set(key: string, value: TileBody | null, bytes = tileEntryBytes(value, key)): void {
    super.set(key, value, bytes);
  }
}

/**
 * The archives a server reads, each opened once on first use (the reader caches its directories),
 * and one tile cache (stored bytes + ETag, and decompressed bytes for clients without gzip) shared
 * by all of them. Failures are StoreErrors (timeout, bad answer, corrupt data).
 */
export class Archives {
  private readonly files = new Map<string, OpenedFile<OpenArchive>>();
  private nextIndex = 0;
  /** The tile cache (exposed for tests and stats). */
  readonly cache: TileLru;
  /**
   * The tile cache filled on misses, concurrent misses of one key sharing one load: stored tiles,
   * their decompressed bytes, and the tiles other modules derive from them (keyed with their own prefix).
   */
  readonly tiles: LoadingCache<string, TileBody | null>;

  constructor(private readonly store: Store, cacheBytes: number) {
    this.cache = new TileLru(cacheBytes);
    this.tiles = new LoadingCache(this.cache, tileEntryBytes);
  }

  /** Open (once) the archive at `path` relative to the store. */
  open(path: string): Promise<ServedArchive> {
    return this.fileOf(path).get();
  }

  private fileOf(path: string): OpenedFile<OpenArchive> {
    let f = this.files.get(path);
    if (!f) {
      const index = this.nextIndex++;
      f = new OpenedFile(this.store, path, async (source): Promise<OpenArchive> => {
        const archive: ArchiveReader = await openArchive(source);
        const h = archive.header;
        return {
          path,
          index,
          gzip: h.tileCompression === Compression.Gzip,
          minzoom: h.minZoom,
          maxzoom: h.maxZoom,
          getTile: (z, x, y) => archive.getTile(z, x, y),
          close: () => archive.close(),
        };
      });
      this.files.set(path, f);
    }
    return f;
  }

  /**
   * The stored tile with its ETag, or null when the archive has no tile there. Cached (including
   * misses); concurrent requests for the same uncached tile share one read.
   */
  async tile(path: string, z: number, x: number, y: number): Promise<TileBody | null> {
    const file = this.fileOf(path);
    const archive = file.ready ?? (await file.get());
    return this.tiles.getOrLoad(`${archive.index}/${z}/${x}/${y}`, () =>
      archive.getTile(z, x, y).then(
        (bytes) => (bytes && bytes.length > 0 ? tileBody(bytes) : null),
        (e: unknown) => {
          throw asStoreError(path, e);
        },
      ),
    );
  }

  /**
   * The decompressed bytes of a gzip tile (for clients that do not accept gzip), under their own
   * ETag: decompressed once off the event loop and kept in the same cache as the stored bytes.
   */
  async identity(tile: TileBody): Promise<TileBody> {
    return this.tiles.getOrLoad(IDENTITY_KEY_PREFIX + tile.etag, () =>
      gunzipAsync(tile.bytes, { maxOutputLength: MAX_DECOMPRESSED_TILE_BYTES }).then(
        (bytes): TileBody => ({ bytes, etag: identityEtag(tile.etag) }),
        (e: unknown) => {
          throw asStoreError(`stored tile ${tile.etag}`, new Error(`cannot decompress (${(e as Error).message})`));
        },
      ),
    ) as Promise<TileBody>;
  }

  /** Close every opened archive. */
  async close(): Promise<void> {
    const all = [...this.files.values()];
    this.files.clear();
    await Promise.allSettled(all.map((f) => f.close()));
  }
}

const byContext = new WeakMap<ServerContext, Archives>();

/**
 * The Archives of a server context (created on first use): route modules share one tile cache
 * bounded by its share of `--cache-mb` (see cacheBudgetBytes).
 */
export function archivesOf(ctx: ServerContext): Archives {
  let a = byContext.get(ctx);
  if (!a) {
    a = new Archives(ctx.store, cacheBudgetBytes(ctx, 'tiles'));
    serverMetrics().watchCache('tiles', a.cache);
    byContext.set(ctx, a);
  }
  return a;
}
