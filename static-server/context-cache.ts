/**
 * A cache kept per server context (a new build version gets a new context, so a rebuild never serves an
 * old entry): made on first use with its share of the tile cache's part of `--cache-mb`, and watched by
 * /metrics under its name. The finished static images, decoded tiles and search answers are such caches.
 */
import { cacheBudgetBytes, type ServerContext } from './context.ts';
import { serverMetrics, type CacheStats } from './metrics.ts';

/** `of(ctx)`: the context's cache, `make(maxBytes)` on first use, `stats(cache)` watched as `name`. */
export function perContextCache<T>(name: string, share: number, make: (maxBytes: number) => T, stats: (cache: T) => CacheStats): (ctx: ServerContext) => T {
  const byContext = new WeakMap<ServerContext, T>();
  return (ctx) => {
    let cache = byContext.get(ctx);
    if (!cache) {
      cache = make(Math.floor(cacheBudgetBytes(ctx, 'tiles') * share));
      serverMetrics().watchCache(name, stats(cache));
      byContext.set(ctx, cache);
    }
    return cache;
  };
}
