// /height points with Redis limits and two cluster workers: each worker takes from Redis and counts the
// points it answered there (static-server/keys/redis-limits.ts), so a height-point quota is one budget
// across the workers of a server and across servers sharing Redis.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildElevation } from '../pipeline/elevation/stage.ts';
import { periodOf } from '../static-server/keys/limits.ts';
import { freePort, request, startServe, type ServeProcess } from './fixtures/server/helpers.ts';
import { startRedis, type TestRedis } from './fixtures/server/redis.ts';

const SAMPLE_HGT = join(import.meta.dirname, '../data/sample/dem/N43E007.hgt');
const SECRET = `points-${randomBytes(16).toString('hex')}`;
const SHAPE = [{ lat: 43.74, lon: 7.42 }, { lat: 43.735, lon: 7.425 }, { lat: 43.73, lon: 7.43 }];
let dir: string;
let redis: TestRedis;
let client: Redis;
const running: ServeProcess[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tilebake-height-redis-'));
  await buildElevation(join(dir, 'out'), [{ path: SAMPLE_HGT }], { precision: 0.1, terrain: false });
  await writeFile(join(dir, 'keys.json'), JSON.stringify({ keys: [{ name: 'partner', secret: SECRET, quota: { heightPoints: 5, per: 'month' } }] }));
  redis = await startRedis(await freePort());
  client = new Redis(redis.url);
}, 240_000);

afterAll(async () => {
  client?.disconnect();
  for (const s of running) s.proc.kill('SIGKILL');
  await redis?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function serve(side: string): Promise<ServeProcess> {
  const s = await startServe(['--out', join(dir, 'out'), '--port', '0', '--host', '127.0.0.1', '--workers', '2', '--version-poll-ms', '0', '--keys', join(dir, 'keys.json'), '--limits', redis.url, '--state-dir', join(dir, `state-${side}`)]);
  running.push(s);
  return s;
}

/** POST /height of the three points, over a new connection (either worker answers). */
function post(url: string) {
  return request(`${url}/height`, { method: 'POST', headers: { authorization: `Bearer ${SECRET}`, 'content-type': 'application/json' }, body: JSON.stringify({ shape: SHAPE }) });
}

describe('height points with Redis limits', () => {
  it('two workers and a second server share one point quota in Redis', async () => {
    const a = await serve('a');
    const counter = `tilebake:quota:partner:heightPoints:${periodOf('month', Date.now()).day}`;
    const points = async () => Number((await client.get(counter)) ?? 0);
    // Points are counted after the answer: wait until Redis has them before the next request.
    expect((await post(a.url)).status).toBe(200);
    await expect.poll(points, { timeout: 5000, interval: 50 }).toBe(3);
    expect((await post(a.url)).status).toBe(200); // 3 of 5 used: one more request may start
    await expect.poll(points, { timeout: 5000, interval: 50 }).toBe(6);
    const refused = await post(a.url);
    expect(refused.status).toBe(429);
    expect(refused.json().error).toBe('key "partner": quota of 5 /height points per month used up');
    // Another server sharing the Redis: the same budget, already used up.
    const b = await serve('b');
    expect((await post(b.url)).status).toBe(429);
    expect(await points()).toBe(6);
  }, 120_000);
});
