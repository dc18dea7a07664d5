// /height points per key: counted in /metrics and usage, and a height-point quota answered with 429.
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildElevation } from '../pipeline/elevation/stage.ts';
import { UsageStore } from '../static-server/keys/usage-store.ts';
import { startServer, type RunningServer } from '../static-server/serve.ts';
import { request } from './fixtures/server/helpers.ts';

const SAMPLE_HGT = join(import.meta.dirname, '../data/sample/dem/N43E007.hgt');
const SECRET = `points-${randomBytes(16).toString('hex')}`;
let dir: string;
let server: RunningServer;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tilebake-keys-height-'));
  await buildElevation(join(dir, 'out'), [{ path: SAMPLE_HGT }], { precision: 0.1, terrain: false });
  await writeFile(join(dir, 'keys.json'), JSON.stringify({ keys: [{ name: 'partner', secret: SECRET, quota: { heightPoints: 5, per: 'month' } }] }));
  server = await startServer({ out: join(dir, 'out'), port: 0, host: '127.0.0.1', auth: true, keysFile: join(dir, 'keys.json'), stateDir: join(dir, 'state'), cors: '*', cacheMb: 16, logLevel: 'silent' });
}, 240_000);

afterAll(async () => {
  await server?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('height points per key', () => {
  it('counts points per key and refuses once the point quota is used up', async () => {
    const shape = [{ lat: 43.74, lon: 7.42 }, { lat: 43.735, lon: 7.425 }, { lat: 43.73, lon: 7.43 }];
    const post = () =>
      request(`${server.url}/height`, { method: 'POST', headers: { authorization: `Bearer ${SECRET}`, 'content-type': 'application/json' }, body: JSON.stringify({ shape }) });
    const first = await post();
    expect(first.status).toBe(200);
    expect(first.json().height).toHaveLength(3);
    expect((await post()).status).toBe(200); // 3 points used of 5: one more request may start
    const refused = await post();
    expect(refused.status).toBe(429);
    expect(refused.json().error).toBe('key "partner": quota of 5 /height points per month used up');
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    const metrics = (await request(`${server.url}/metrics`, { headers: { authorization: `Bearer ${SECRET}` } })).body.toString();
    expect(metrics).toMatch(/^tilebake_key_height_points_total\{key="partner"\} 6$/m);
    await new Promise((r) => setTimeout(r, 1500));
    const store = new UsageStore(join(dir, 'state'), true);
    try {
      expect(store.report('2000-01-01')).toEqual([expect.objectContaining({ key: 'partner', requests: 3, points: 6 })]);
    } finally {
      store.close();
    }
    expect(await readFile(join(dir, 'state', 'usage.sqlite'))).toBeTruthy();
  }, 60_000);
});
