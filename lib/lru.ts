/**
 * A least-recently-used cache bounded by the total byte size of its values.
 * `get` refreshes an entry; `set` evicts the oldest entries until the total fits `maxBytes`.
 * A single value larger than the bound is not kept at all.
 */
export class ByteLru<K, V> {
  private readonly map = new Map<K, { value: V; bytes: number }>();
  private total = 0;
  /** Lookups by `get` that found their key, and that did not (for metrics). */
  hits = 0;
  misses = 0;

  constructor(readonly maxBytes: number) {}

  /** Bytes currently held. */
  get bytes(): number {
    return this.total;
  }

  /** Entries currently held. */
  get size(): number {
    return this.map.size;
  }

  /** The value for `key` (and mark it most recently used), or undefined. */
  get(key: K): V | undefined {
    const e = this.map.get(key);
    if (!e) {
      this.misses++;
      return undefined;
    }
    this.hits++;
    this.map.delete(key);
    this.map.set(key, e);
    return e.value;
  }

  /** The value for `key` without changing its recency. */
  peek(key: K): V | undefined {
    return this.map.get(key)?.value;
  }

  /** Whether `key` is held. */
  has(key: K): boolean {
    return this.map.has(key);
  }

  /** Store `value` costing `bytes`, evicting least recently used entries to stay within the bound. */
  set(key: K, value: V, bytes: number): void {
    const old = this.map.get(key);
    if (old) {
      this.map.delete(key);
      this.total -= old.bytes;
    }
    if (bytes > this.maxBytes) return;
    this.map.set(key, { value, bytes });
    this.total += bytes;
    for (const [k, e] of this.map) {
      if (this.total <= this.maxBytes) break;
      this.map.delete(k);
      this.total -= e.bytes;
    }
  }

  /** Drop everything. */
  clear(): void {
    this.map.clear();
    this.total = 0;
  }
}
