import { LoadingCache } from './coalesce.ts';
import { ByteLru } from './lru.ts';

/**
 * A cache of its own bounded by total size (bytes as reported by `sizeOf`), with concurrent loads of
 * the same key shared (lib/coalesce.ts). Failed loads are not cached.
 */
export class BoundedCache<V> extends LoadingCache<string, V> {
  constructor(maxBytes: number, sizeOf: (v: V) => number) {
    super(new ByteLru(maxBytes), sizeOf);
  }
}
