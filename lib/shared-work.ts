/**
 * Work per key done once for all its concurrent callers: while it runs (Coalescer), until evicted from
 * a byte-bounded cache (LoadingCache), or for good unless it fails (Memo). The one implementation of
 * "requests for the same thing share one load", used by the tile cache, the style and glyph caches,
 * the elevation block cache, the on-demand renders and the parsed styles.
 */
import type { ByteLru } from './lru.ts';

/**
 * While the work for a key runs, every caller for that key gets the same promise; once it settles the
 * key is free again (nothing is remembered, a failure included).
 */
export class Coalescer<K, V> {
  private readonly running = new Map<K, Promise<V>>();

  /** Keys whose work is running. */
  get size(): number {
    return this.running.size;
  }

  /** The running work for `key`, if any. */
  get(key: K): Promise<V> | undefined {
    return this.running.get(key);
  }

  /** The running work for `key`, else `work()` started and shared until it settles. */
  run(key: K, work: () => Promise<V>): Promise<V> {
    const running = this.running.get(key);
    if (running) return running;
    const p = work().finally(() => this.running.delete(key));
    this.running.set(key, p);
    return p;
  }
}

/**
 * A ByteLru filled on misses: `getOrLoad` returns the cached value, else runs `load()` (concurrent
 * misses of one key share it) and stores its value at `sizeOf(value, key)` bytes when that fits the
 * budget. Failed loads are not cached; values are never undefined. The ByteLru may be shared with
 * other writers (its `hits`, `misses` and `bytes` are the statistics).
 */
export class LoadingCache<K, V> {
  private readonly loads = new Coalescer<K, V>();

  constructor(
    readonly entries: ByteLru<K, V>,
    private readonly sizeOf: (value: V, key: K) => number,
  ) {}

  /** The cached value for `key`, else the value `load()` gives (stored when it fits the budget). */
  getOrLoad(key: K, load: () => Promise<V>): Promise<V> {
    const hit = this.entries.get(key);
    if (hit !== undefined) return Promise.resolve(hit);
    return this.loads.run(key, async () => {
      const value = await load();
      this.entries.set(key, value, this.sizeOf(value, key));
      return value;
    });
  }

  /** Number of cached entries (for tests and stats). */
  get size(): number {
    return this.entries.size;
  }

  /** Total size of the cached entries. */
  get bytes(): number {
    return this.entries.bytes;
  }
}

/**
 * Work per key done once and kept: every call for a key gets the first call's promise, except that a
 * failed one is forgotten (a transient error must not stick), so the next call tries again.
 */
export class Memo<K, V> {
  private readonly done = new Map<K, Promise<V>>();

  /** The promise of `work()` for `key`, started by the first call (or the first after a failure). */
  get(key: K, work: () => Promise<V>): Promise<V> {
    let p = this.done.get(key);
    if (!p) {
      const started = work();
      started.catch(() => {
        if (this.done.get(key) === started) this.done.delete(key);
      });
      this.done.set(key, started);
      p = started;
    }
    return p;
  }
}
