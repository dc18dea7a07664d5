// Limits of `tilebake serve` processes with cluster workers: one budget for all workers of a server,
// quotas that survive a restart, one budget for two servers sharing Redis, and local limits while
// Redis is unreachable or stops mid-run (said once in the log and in /health). Concurrent requests,
// which workers send in batches to the primary (local limits) or to Redis (one script call per key),
// get exactly the budget.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decideRun, LocalLimiter, type LimitDecision, type Take } from '../static-server/keys/limits.ts';
import { RedisLimiter } from '../static-server/keys/redis-limits.ts';
import { buildSampleVector, freePort, monacoTiles, request, startServe, type ServeProcess } from './fixtures/server/helpers.ts';
import { startRedis, type TestRedis } from './fixtures/server/redis.ts';

const SECRET = `quota-${randomBytes(16).toString('hex')}`;
let out: string;
let dir: string;
let tile: string;
const running: ServeProcess[] = [];
const redises: TestRedis[] = [];

async function keysFile(name: string, requests: number): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, JSON.stringify({ keys: [{ name: 'client', secret: SECRET, quota: { requests, per: 'day' } }] }));
  return path;
}

async function serve(args: string[]): Promise<ServeProcess> {
  const s = await startServe(['--out', out, '--port', '0', '--host', '127.0.0.1', '--workers', '2', '--version-poll-ms', '0', ...args]);
  running.push(s);
  return s;
}

async function stop(s: ServeProcess): Promise<void> {
  s.proc.kill('SIGTERM');
  expect(await s.exited).toBe(0);
  running.splice(running.indexOf(s), 1);
}

/** Statuses of `n` tile requests with the key, over new connections (so both workers answer). */
async function statuses(url: string, n: number, secret = SECRET): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await request(`${url}${tile}`, { headers: { authorization: `Bearer ${secret}` } })).status);
  return out;
}
const count = (xs: number[], v: number) => xs.filter((x) => x === v).length;

/** The keys of the two servers sharing Redis: one per test using them (each its own budget), a quota of 10 each. */
const PAIR_KEYS = { batch: `batch-${randomBytes(16).toString('hex')}`, shared: `shared-${randomBytes(16).toString('hex')}` };
let pair: Promise<[ServeProcess, ServeProcess]> | undefined;

/** A redis-server and two servers (own state folders) sharing it with PAIR_KEYS: started once, for the tests of both describes. */
function twoServersSharingRedis(): Promise<[ServeProcess, ServeProcess]> {
  pair ??= (async () => {
    const redis = await startRedis(await freePort());
    redises.push(redis);
    const keys = join(dir, 'pair.json');
    await writeFile(keys, JSON.stringify({ keys: Object.entries(PAIR_KEYS).map(([name, secret]) => ({ name, secret, quota: { requests: 10, per: 'day' } })) }));
    const start = (side: string) => serve(['--keys', keys, '--limits', redis.url, '--state-dir', join(dir, `state-pair-${side}`)]);
    return [await start('a'), await start('b')];
  })();
  return pair;
}

/** Statuses of `n` tile requests with the key sent at once (each worker batches what it reads in one turn). */
async function concurrentStatuses(url: string, n: number, secret = SECRET): Promise<number[]> {
  return Promise.all(Array.from({ length: n }, async () => (await request(`${url}${tile}`, { headers: { authorization: `Bearer ${secret}` } })).status));
}

beforeAll(async () => {
  out = await buildSampleVector();
  dir = await mkdtemp(join(tmpdir(), 'tilebake-limits-'));
  const t = monacoTiles()[0];
  tile = `/data/openmaptiles/${t.z}/${t.x}/${t.y}.pbf`;
}, 240_000);

afterAll(async () => {
  for (const s of running) s.proc.kill('SIGKILL');
  for (const r of redises) await r.stop();
  for (const d of [out, dir]) if (d) await rm(d, { recursive: true, force: true });
});

describe('limits across workers and restarts', () => {
  it('two workers share one quota, which survives a restart (state folder)', async () => {
    const args = ['--keys', await keysFile('local.json', 5), '--state-dir', join(dir, 'state-local')];
    const s = await serve(args);
    const first = await statuses(s.url, 8);
    expect(first.slice(0, 5)).toEqual([200, 200, 200, 200, 200]);
    expect(first.slice(5)).toEqual([429, 429, 429]);
    await new Promise((r) => setTimeout(r, 1500)); // usage reaches the primary's store once a second
    await stop(s);
    const again = await serve(args);
    expect(await statuses(again.url, 2)).toEqual([429, 429]);
    expect(again.output()).not.toContain(SECRET);
    await stop(again);
  }, 120_000);
});

describe('batched limits', () => {
  it('40 requests at once on two workers: exactly the quota of 12 is let through', async () => {
    const s = await serve(['--keys', await keysFile('batch-local.json', 12), '--state-dir', join(dir, 'state-batch-local')]);
    const got = await concurrentStatuses(s.url, 40);
    expect([count(got, 200), count(got, 429)]).toEqual([12, 28]);
    await stop(s);
  }, 120_000);

  it('two servers sharing Redis, 20 requests at once on each: exactly the quota of 10 is let through', async () => {
    const [a, b] = await twoServersSharingRedis();
    const got = (await Promise.all([concurrentStatuses(a.url, 20, PAIR_KEYS.batch), concurrentStatuses(b.url, 20, PAIR_KEYS.batch)])).flat();
    expect([count(got, 200), count(got, 429)]).toEqual([10, 30]);
  }, 120_000);

  it('a worker replaying the primary\'s state per key gets the decisions the primary made (headers included)', () => {
    let t = Date.UTC(2026, 10, 27, 12);
    const clock = () => t;
    const key = { name: 'k', rate: { perSecond: 2, burst: 3 }, quota: { requests: 5, heightPoints: 100, per: 'day' as const } };
    const heights = [false, true, false, true, false, false, true];
    const primary = new LocalLimiter(undefined, clock);
    const oneByOne = new LocalLimiter(undefined, clock);
    primary.points(key, 99);
    oneByOne.points(key, 99);
    for (let round = 0; round < 3; round++, t += 700) {
      const made: LimitDecision[] = [];
      const { before, now } = primary.takeRun(key, heights, (d) => made.push(d));
      const state = { ...before };
      const replayed = heights.map((h) => decideRun(key, state, h, now));
      expect(replayed).toEqual(made);
      expect(made).toEqual(heights.map((h) => oneByOne.decide(key, h)));
    }
  });

  it('a Redis script call taking a batch decides like the local limiter taking them one by one', async () => {
    const redis = await startRedis(await freePort());
    redises.push(redis);
    const limiter = await RedisLimiter.alone(redis.url, new LocalLimiter(), pino({ level: 'silent' }));
    try {
      // A bucket of 4 refilling very slowly and a quota of 6 requests; a second key with only a quota.
      const a = { name: 'a', rate: { perSecond: 0.001, burst: 4 }, quota: { requests: 6, per: 'day' as const } };
      const b = { name: 'b', quota: { requests: 3, per: 'day' as const } };
      const takes: Take[] = [a, b, a, a, b, a, b, a, b, a].map((key) => ({ key, height: false }));
      const summary = (ds: { allowed: boolean; limit: number; remaining: number }[]) => ds.map((d) => [d.allowed, d.limit, Math.floor(d.remaining)]);
      const fromRedis = summary(await limiter.takeMany(takes));
      expect(fromRedis).toEqual(summary(await new LocalLimiter().takeMany(takes)));
      expect(fromRedis.filter(([ok]) => ok)).toHaveLength(4 + 3);
      // The next batch continues from what Redis kept: the bucket is empty, b's quota used up.
      expect((await limiter.takeMany(takes.slice(0, 2))).map((d) => d.allowed)).toEqual([false, false]);
    } finally {
      await limiter.close();
    }
  }, 60_000);
});

describe('limits shared through Redis', () => {
  it('two servers sharing Redis enforce one budget', async () => {
    const [a, b] = await twoServersSharingRedis();
    const fromA = await statuses(a.url, 7, PAIR_KEYS.shared);
    const fromB = await statuses(b.url, 7, PAIR_KEYS.shared);
    expect(count(fromA, 200)).toBe(7);
    expect(fromB).toEqual([200, 200, 200, 429, 429, 429, 429]);
    const health = await request(`${b.url}/health`);
    expect(health.json()).toEqual({ status: 'ok', store: 'ok', limits: { backend: 'redis', redis: 'ok' } });
    await stop(a);
    await stop(b);
  }, 120_000);

  it('--workers 1 with Redis: the only process takes from Redis in batches, exactly the quota', async () => {
    const redis = await startRedis(await freePort());
    redises.push(redis);
    const keys = await keysFile('one-process.json', 6);
    const s = await startServe(['--out', out, '--port', '0', '--host', '127.0.0.1', '--workers', '1', '--version-poll-ms', '0', '--keys', keys, '--limits', redis.url, '--state-dir', join(dir, 'state-one-process')]);
    running.push(s);
    const got = await concurrentStatuses(s.url, 15);
    expect([count(got, 200), count(got, 429)]).toEqual([6, 9]);
    expect((await request(`${s.url}/health`)).json().limits).toEqual({ backend: 'redis', redis: 'ok' });
    await stop(s);
  }, 120_000);

  it('Redis stopped mid-run: the workers fall back to the primary\'s local limits without a failed request, one budget per server', async () => {
    const redis = await startRedis(await freePort());
    redises.push(redis);
    const OTHER = `other-${randomBytes(16).toString('hex')}`;
    const keys = join(dir, 'mid-run.json');
    await writeFile(keys, JSON.stringify({ keys: [{ name: 'client', secret: SECRET, quota: { requests: 1000, per: 'day' } }, { name: 'other', secret: OTHER, quota: { requests: 5, per: 'day' } }] }));
    const s = await serve(['--keys', keys, '--limits', redis.url, '--state-dir', join(dir, 'state-mid-run')]);
    expect((await request(`${s.url}/health`)).json().limits).toEqual({ backend: 'redis', redis: 'ok' });
    // Requests at once on both workers, before, while and after Redis stops under them.
    let stopped = false;
    const load = (async () => {
      const got: number[] = [];
      for (let i = 0; i < 30 && !stopped; i++) got.push(...(await concurrentStatuses(s.url, 10)));
      for (let i = 0; i < 3; i++) got.push(...(await concurrentStatuses(s.url, 10)));
      return got;
    })();
    await new Promise((r) => setTimeout(r, 100));
    await redis.stop();
    stopped = true;
    const during = await load;
    expect(during.length).toBeGreaterThan(30);
    expect(count(during, 200)).toBe(during.length);
    await expect.poll(async () => (await request(`${s.url}/health`)).json().limits, { timeout: 5000, interval: 100 }).toEqual({ backend: 'redis', redis: 'unreachable' });
    // A key not used before: its budget is exact for the server's two workers (decided by the primary).
    const other = await Promise.all(Array.from({ length: 12 }, async () => (await request(`${s.url}${tile}`, { headers: { authorization: `Bearer ${OTHER}` } })).status));
    expect([count(other, 200), count(other, 429)]).toEqual([5, 7]);
    expect(s.output().split('Redis is unreachable').length - 1).toBe(1);
    expect(s.output()).not.toContain(OTHER);
    await stop(s);
  }, 120_000);

  it('Redis unreachable: local limits, said once in the log and in /health; back to Redis when it answers', async () => {
    const port = await freePort();
    const s = await serve(['--keys', await keysFile('down.json', 3), '--limits', `redis://127.0.0.1:${port}`, '--state-dir', join(dir, 'state-down')]);
    expect((await request(`${s.url}/health`)).json()).toEqual({ status: 'ok', store: 'ok', limits: { backend: 'redis', redis: 'unreachable' } });
    expect(await statuses(s.url, 5)).toEqual([200, 200, 200, 429, 429]);
    await new Promise((r) => setTimeout(r, 2500)); // several reconnect attempts
    expect(s.output().split('Redis is unreachable').length - 1).toBe(1);
    const redis = await startRedis(port);
    redises.push(redis);
    await expect
      .poll(async () => (await request(`${s.url}/health`)).json().limits, { timeout: 15_000, interval: 250 })
      .toEqual({ backend: 'redis', redis: 'ok' });
    expect(s.output()).toContain('Redis answers again');
    // Redis has its own count (the requests answered while it was down were counted locally).
    expect(await statuses(s.url, 4)).toEqual([200, 200, 200, 429]);
    await stop(s);
  }, 120_000);
});
