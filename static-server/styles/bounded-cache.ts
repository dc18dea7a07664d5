import { ByteLru } from '../../lib/lru.ts';

/**
 * An LRU cache bounded by total size (bytes as reported by `sizeOf`), with concurrent loads of the
 * same key shared. Failed loads are not cached.
 */
export class BoundedCache<V> {
  /** The cached values (its `hits`, `misses` and `bytes` are this cache's statistics). */
  readonly entries: ByteLru<string, V>;
  private readonly loading = new Map<string, Promise<V>>();

  constructor(maxBytes: number, private readonly sizeOf: (v: V) => number) {
    this.entries = new ByteLru(maxBytes);
  }

  /** The cached value for `key`, else `load()` (stored when it fits in the budget). Values are never undefined. */
  async getOrLoad(key: string, load: () => Promise<V>): Promise<V> {
    const hit = this.entries.get(key);
    if (hit !== undefined) return hit;
    const pending = this.loading.get(key);
    if (pending) return pending;
    const p = load().then(
      (value) => {
        this.loading.delete(key);
        this.entries.set(key, value, this.sizeOf(value));
        return value;
      },
      (e: unknown) => {
        this.loading.delete(key);
        throw e;
      },
    );
    this.loading.set(key, p);
    return p;
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
