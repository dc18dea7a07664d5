// lib/shared-work.ts: concurrent work per key shared while it runs, in a byte-bounded cache, or kept.
import { describe, expect, it } from 'vitest';
import { Coalescer, LoadingCache, Memo } from '../lib/shared-work.ts';
import { ByteLru } from '../lib/lru.ts';

/** A promise with its resolve and reject. */
function deferred<T>(): { promise: Promise<T>; resolve(v: T): void; reject(e: Error): void } {
  let resolve!: (v: T) => void, reject!: (e: Error) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

describe('Coalescer', () => {
  it('shares the running work of a key, then runs it again; a failure is not remembered', async () => {
    const c = new Coalescer<string, number>();
    let started = 0;
    const d = deferred<number>();
    const a = c.run('k', () => (started++, d.promise));
    const b = c.run('k', () => (started++, Promise.resolve(-1)));
    const other = c.run('j', () => (started++, Promise.resolve(7)));
    expect([c.size, started, c.get('k') === a]).toEqual([2, 2, true]);
    d.resolve(1);
    expect(await Promise.all([a, b, other])).toEqual([1, 1, 7]);
    expect([c.size, c.get('k')]).toEqual([0, undefined]);
    await expect(c.run('k', () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(await c.run('k', () => Promise.resolve(2))).toBe(2);
    expect(started).toBe(2);
  });
});

describe('LoadingCache', () => {
  it('fills a shared ByteLru at sizeOf(value, key) bytes, one load per concurrent miss', async () => {
    const lru = new ByteLru<string, string | null>(100);
    const cache = new LoadingCache(lru, (v, k) => k.length + (v?.length ?? 0));
    let loads = 0;
    const d = deferred<string | null>();
    const both = Promise.all([cache.getOrLoad('ab', () => (loads++, d.promise)), cache.getOrLoad('ab', () => (loads++, Promise.resolve('x')))]);
    d.resolve(null);
    expect(await both).toEqual([null, null]);
    expect([loads, lru.peek('ab'), cache.size, cache.bytes]).toEqual([1, null, 1, 2]);
    // A cached null is a hit; a value another writer put in the ByteLru too.
    lru.set('c', 'ccc', 4);
    expect(await cache.getOrLoad('ab', () => Promise.resolve('new'))).toBe(null);
    expect(await cache.getOrLoad('c', () => Promise.resolve('new'))).toBe('ccc');
    expect([lru.hits, lru.misses]).toEqual([2, 2]); // both concurrent first calls missed
    // Too big for the budget: returned, not kept.
    expect(await cache.getOrLoad('big', () => Promise.resolve('y'.repeat(200)))).toHaveLength(200);
    expect(lru.has('big')).toBe(false);
  });
});

describe('Memo', () => {
  it('keeps the first result of a key, shares it with concurrent calls, and forgets failures', async () => {
    const m = new Memo<string, number>();
    let runs = 0;
    const d = deferred<number>();
    const a = m.get('k', () => (runs++, d.promise));
    const b = m.get('k', () => (runs++, Promise.resolve(-1)));
    d.resolve(1);
    expect([await a, await b, await m.get('k', () => (runs++, Promise.resolve(-1))), runs]).toEqual([1, 1, 1, 1]);
    const f = deferred<number>();
    const failing = m.get('f', () => f.promise);
    f.reject(new Error('transient'));
    await expect(failing).rejects.toThrow('transient');
    expect(await m.get('f', () => Promise.resolve(3))).toBe(3);
    expect(await m.get('f', () => Promise.resolve(4))).toBe(3);
  });
});
