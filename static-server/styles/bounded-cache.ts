/**
 * An LRU cache bounded by total size (bytes as reported by `sizeOf`), with concurrent loads of the
 * same key shared. Failed loads are not cached.
 */
export class BoundedCache<V> {
  private readonly entries = new Map<string, { value: V; size: number }>();
  private readonly loading = new Map<string, Promise<V>>();
  private used = 0;

  constructor(private readonly maxBytes: number, private readonly sizeOf: (v: V) => number) {}

  /** The cached value for `key`, else `load()` (stored when it fits in the budget). */
  async getOrLoad(key: string, load: () => Promise<V>): Promise<V> {
    const hit = this.entries.get(key);
    if (hit) {
      this.entries.delete(key);
      this.entries.set(key, hit);
      return hit.value;
    }
    const pending = this.loading.get(key);
    if (pending) return pending;
    const p = load().then(
      (value) => {
        this.loading.delete(key);
        this.put(key, value);
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
    return this.used;
  }

  private put(key: string, value: V): void {
    const size = this.sizeOf(value);
    if (size > this.maxBytes) return;
    this.entries.set(key, { value, size });
    this.used += size;
    for (const [k, e] of this.entries) {
      if (this.used <= this.maxBytes) break;
      this.entries.delete(k);
      this.used -= e.size;
    }
  }
}
