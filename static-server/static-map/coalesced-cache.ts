/**
 * A byte-bounded LRU of computed values in which concurrent requests for a missing key share one
 * computation (decoded tiles, finished static images). A failed computation is not cached.
 */
import { ByteLru } from '../../lib/lru.ts';

export class CoalescedCache<V> {
  readonly cache: ByteLru<string, V>;
  private readonly pending = new Map<string, Promise<V>>();

  constructor(
    maxBytes: number,
    private readonly bytesOf: (value: V) => number,
  ) {
    this.cache = new ByteLru(maxBytes);
  }

  /** The value under `key`, made by `make` when not cached (once, however many ask at the same time). */
  get(key: string, make: () => Promise<V>): Promise<V> {
    const hit = this.cache.get(key);
    if (hit !== undefined) return Promise.resolve(hit);
    let p = this.pending.get(key);
    if (!p) {
      p = make().then((value) => {
        this.cache.set(key, value, this.bytesOf(value));
        return value;
      });
      p.finally(() => this.pending.delete(key)).catch(() => undefined);
      this.pending.set(key, p);
    }
    return p;
  }
}
