import { LoadingCache } from './shared-work.ts';
import { ByteLru } from './lru.ts';

/**
 * A cache of its own bounded by total size (bytes as reported by `sizeOf`), with concurrent loads of
 * the same key shared (lib/shared-work.ts). Failed loads are not cached.
 */
export class BoundedCache<V> extends LoadingCache<string, V> {
  constructor(maxBytes: number, sizeOf: (v: V) => number) {
    super(new ByteLru(maxBytes), sizeOf);
  }
}
