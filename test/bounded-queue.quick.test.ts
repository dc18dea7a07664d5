// The one bounded queue (static-server/bounded-queue.ts) that static images and on-demand renders
// share: slots, order, and the 503 with Retry-After beyond the queue (their own tests check it over HTTP).
import { describe, expect, it } from 'vitest';
import { BoundedQueue } from '../static-server/bounded-queue.ts';
import { HttpError } from '../lib/http-error.ts';

describe('BoundedQueue', () => {
  it('runs `concurrency` jobs, queues `queue` more in order, refuses the next at once with 503 and Retry-After', async () => {
    const q = new BoundedQueue({ concurrency: 2, queue: 1, what: 'test jobs', retryAfterS: 3 });
    const started: number[] = [];
    const release: (() => void)[] = [];
    const job = (i: number) => () => {
      started.push(i);
      return new Promise<number>((resolve) => release.push(() => resolve(i)));
    };
    const done = [0, 1, 2].map((i) => q.run(job(i)));
    expect(q.size).toBe(3);
    let refused: unknown;
    try {
      void q.run(job(3));
    } catch (e) {
      refused = e;
    }
    expect(refused).toBeInstanceOf(HttpError);
    expect(refused).toMatchObject({ status: 503, headers: { 'retry-after': '3' } });
    expect((refused as Error).message).toMatch(/^too many test jobs in progress \(2 running, 1 waiting\); retry in 3 s$/);
    await Promise.resolve();
    expect(started).toEqual([0, 1]);
    release.shift()!();
    expect(await done[0]).toBe(0);
    await new Promise((r) => setImmediate(r));
    expect(started).toEqual([0, 1, 2]);
    release.shift()!();
    release.shift()!();
    expect(await Promise.all(done)).toEqual([0, 1, 2]);
    expect(q.size).toBe(0);
    // A failed job frees its slot too.
    await expect(q.run(() => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(q.size).toBe(0);
  });
});
