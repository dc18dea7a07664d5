import { Compression } from 'pmtiles';
import { openArchive } from '../lib/pmtiles/index.ts';
import type { Store } from '../lib/storage.ts';
import { ByteLru } from '../lib/lru.ts';
import { cacheBudgetBytes, type ServerContext } from './context.ts';
import { tileBody, type TileBody } from './tile-response.ts';

/** Rough per-entry overhead of the tile cache (key string, map slot, body object, ETag). */
const ENTRY_OVERHEAD_BYTES = 160;

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

/** A tile cache bounded in bytes; least recently used entries go first. `null` caches "no tile". */
export class TileLru extends ByteLru<string, TileBody | null> {
  /** Insert a value (null: known to be absent), evicting the least recently used entries beyond the budget. */
  override set(key: string, value: TileBody | null, bytes = ENTRY_OVERHEAD_BYTES + key.length * 2 + (value ? value.bytes.length : 0)): void {
    super.set(key, value, bytes);
  }
}

/**
 * The archives a server reads, each opened once on first use (the reader caches its directories),
 * and one tile cache (stored bytes + ETag) shared by all of them.
 */
export class Archives {
  private readonly opened = new Map<string, Promise<OpenArchive>>();
  /** Archives whose open has completed, for a synchronous lookup on the hot path. */
  private readonly ready = new Map<string, OpenArchive>();
  private readonly pending = new Map<string, Promise<TileBody | null>>();
  private nextIndex = 0;
  /** The tile cache (exposed for tests and stats). */
  readonly cache: TileLru;

  constructor(private readonly store: Store, cacheBytes: number) {
    this.cache = new TileLru(cacheBytes);
  }

  /** Open (once) the archive at `path` relative to the store. */
  open(path: string): Promise<ServedArchive> {
    return this.openInternal(path);
  }

  private openInternal(path: string): Promise<OpenArchive> {
    let p = this.opened.get(path);
    if (!p) {
      const index = this.nextIndex++;
      p = (async (): Promise<OpenArchive> => {
        const source = await this.store.openRange(path);
        const archive = await openArchive(source);
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
      })();
      // A failed open is not cached: the next request tries again.
      p.then(
        (a) => this.ready.set(path, a),
        () => this.opened.delete(path),
      );
      this.opened.set(path, p);
    }
    return p;
  }

  /**
   * The stored tile with its ETag, or null when the archive has no tile there. Cached (including
   * misses); concurrent requests for the same uncached tile share one read.
   */
  async tile(path: string, z: number, x: number, y: number): Promise<TileBody | null> {
    const archive = this.ready.get(path) ?? (await this.openInternal(path));
    const key = `${archive.index}/${z}/${x}/${y}`;
    const hit = this.cache.get(key);
    if (hit !== undefined) return hit;
    let p = this.pending.get(key);
    if (!p) {
      p = archive.getTile(z, x, y).then(
        (bytes) => {
          const body = bytes && bytes.length > 0 ? tileBody(bytes) : null;
          this.cache.set(key, body);
          this.pending.delete(key);
          return body;
        },
        (e: unknown) => {
          this.pending.delete(key);
          throw e;
        },
      );
      this.pending.set(key, p);
    }
    return p;
  }

  /** Close every opened archive. */
  async close(): Promise<void> {
    const all = [...this.opened.values()];
    this.opened.clear();
    this.ready.clear();
    await Promise.allSettled(all.map(async (p) => (await p).close()));
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
    byContext.set(ctx, a);
  }
  return a;
}
