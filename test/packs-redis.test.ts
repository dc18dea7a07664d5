// The pack-tile quota with Redis limits (--limits redis://…, static-server/keys/redis-limits.ts): a pack
// reserves its tiles in Redis before anything is sent, so servers sharing the Redis share one budget; a
// pack the rest of the budget cannot hold is refused with the estimate and reserves nothing. Over the
// packs fixture (fixtures/packs.ts), one server, Debian's redis-server.
import { cp, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUILDS_DIR } from '../lib/build-version.ts';
import { periodOf } from '../static-server/keys/limits.ts';
import { packsBuild, VADUZ_BOX } from './fixtures/packs.ts';
import { freePort, request, startServe, type ServeProcess } from './fixtures/server/helpers.ts';
import { startRedis, type TestRedis } from './fixtures/server/redis.ts';

const APP = 'field-app-redis-secret';
const QUOTA = 100;
let dir: string;
let redis: TestRedis;
let client: Redis;
let server: ServeProcess;

beforeAll(async () => {
  const b = await packsBuild();
  dir = await mkdtemp(join(tmpdir(), 'tilebake-packs-redis-'));
  const out = join(dir, 'out');
  await mkdir(out, { recursive: true });
  await cp(join(b.dir, BUILDS_DIR), join(out, BUILDS_DIR), { recursive: true });
  await cp(join(b.dir, 'current.json'), join(out, 'current.json'));
  await writeFile(join(dir, 'keys.json'), JSON.stringify({ keys: [{ name: 'field-app', secret: APP, scopes: ['packs'], quota: { packTiles: QUOTA, per: 'day' } }] }));
  redis = await startRedis(await freePort());
  client = new Redis(redis.url);
  server = await startServe(['--out', out, '--port', '0', '--host', '127.0.0.1', '--workers', '1', '--version-poll-ms', '0', '--keys', join(dir, 'keys.json'), '--limits', redis.url, '--state-dir', join(dir, 'state')]);
}, 600_000);

afterAll(async () => {
  client?.disconnect();
  server?.proc.kill('SIGTERM');
  if (server) await server.exited;
  await redis?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('the pack-tile quota in Redis', () => {
  it('a pack reserves its tiles in Redis before it is sent; what another server used there counts; a refused pack reserves nothing', async () => {
    const counter = `tilebake:quota:field-app:packTiles:${periodOf('day', Date.now()).day}`;
    const used = async () => Number((await client.get(counter)) ?? 0);
    const get = (path: string) => request(`${server.url}${path}`, { headers: { authorization: `Bearer ${APP}` } });
    const path = `/packs/omt.pmtiles?bbox=${VADUZ_BOX.join(',')}`;
    const first = await get(path);
    expect(first.status).toBe(200);
    const tiles = Number(first.headers['x-tilebake-pack-tiles']);
    expect(tiles).toBeGreaterThan(QUOTA / 3);
    expect(tiles).toBeLessThanOrEqual(QUOTA / 2);
    expect(await used()).toBe(tiles);
    // Another server sharing this Redis sent packs of (QUOTA - 2 * tiles + 1) tiles: one more pack of this size does not fit.
    const other = QUOTA - 2 * tiles + 1;
    await client.incrby(counter, other);
    const over = await get(path);
    expect(over.status).toBe(429);
    expect(over.json()).toMatchObject({ status: 429, estimate: { tiles }, remaining: tiles - 1 });
    expect(over.json().error).toContain(`a pack of ${tiles} tiles is more than the ${tiles - 1} left of its quota of ${QUOTA} pack tiles per day`);
    expect(await used()).toBe(tiles + other);
    // A pack that fits in what is left is sent and reserved.
    const small = await get(`${path}&maxzoom=0`);
    expect(small.status).toBe(200);
    expect(await used()).toBe(tiles + other + Number(small.headers['x-tilebake-pack-tiles']));
  }, 60_000);
});
