import { describe, expect, it } from 'vitest';
import { PixelPool } from '../static-server/static-map/pixel-pool.ts';

describe('PixelPool', () => {
  it('lends a released buffer again instead of allocating, at the requested length', () => {
    const pool = new PixelPool(1 << 30);
    const a = pool.acquire(1000);
    expect(a.length).toBe(1000);
    a.fill(7);
    pool.release(a);
    const b = pool.acquire(900);
    expect(b.length).toBe(900);
    expect(b.buffer).toBe(a.buffer);
    // A buffer still lent out is never lent twice.
    const c = pool.acquire(900);
    expect(c.buffer).not.toBe(b.buffer);
  });

  it('ignores foreign buffers, null and a second release', () => {
    const pool = new PixelPool(1 << 30);
    pool.release(Buffer.alloc(10));
    pool.release(null);
    const a = pool.acquire(10);
    pool.release(a);
    pool.release(a);
    const b = pool.acquire(10), c = pool.acquire(10);
    expect(b.buffer).not.toBe(c.buffer);
  });

  it('keeps at most maxFreeBytes idle, dropping the oldest', () => {
    const pool = new PixelPool(600 * 1024);
    const bufs = [pool.acquire(200 * 1024), pool.acquire(200 * 1024), pool.acquire(200 * 1024)];
    for (const b of bufs) pool.release(b);
    // Each is rounded up to 256 KB: two fit in 600 KB, the first returned was dropped.
    expect(pool.idleBytes).toBe(512 * 1024);
    expect(pool.acquire(200 * 1024).buffer).not.toBe(bufs[0].buffer);
  });
});
