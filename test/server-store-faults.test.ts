// Object storage failing under a running `tilebake serve`: Debian's nginx hung (SIGSTOP) and stopped.
// Uncached reads answer 504/502 in the JSON error shape, cached tiles keep being served, /health
// reports the store's state, the log gets a line per failure kind per interval, and start-up against
// an unreachable store names the URL and the cause without a stack.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { freePort, monacoTiles, request, runServeToExit, serveSampleFromNginx, type Nginx, type NginxServe, type RawResponse, type ServeProcess, type SourceTile } from './fixtures/server/helpers.ts';

const TOKEN = randomBytes(18).toString('base64url');
const AUTH = { authorization: `Bearer ${TOKEN}` };
const ENV = { TILEBAKE_TOKENS: TOKEN };
/** A short store deadline keeps the test quick; the default is 5 s. */
const STORE_TIMEOUT_MS = 1500;

let setup: NginxServe;
let nginx: Nginx;
let server: ServeProcess;
let tiles: SourceTile[];

const path = (t: { z: number; x: number; y: number }) => `/data/openmaptiles/${t.z}/${t.x}/${t.y}.pbf`;
const get = (t: SourceTile) => request(`${server.url}${path(t)}`, { headers: { ...AUTH, 'accept-encoding': 'gzip' } });
const health = () => request(`${server.url}/health`);

/** A gateway error in the documented JSON shape, naming neither the store's URL nor the archive. */
function expectGatewayError(r: RawResponse, status: 502 | 504): void {
  expect(r.status).toBe(status);
  expect(r.headers['content-type']).toMatch(/^application\/json/);
  expect(r.headers['cache-control']).toBe('no-store');
  const body = r.json();
  expect(body).toEqual({ error: expect.any(String), status });
  expect(r.body.toString()).not.toContain('127.0.0.1');
  expect(r.body.toString()).not.toContain('pmtiles');
}

/** Server log lines reporting store failures. */
function failureLines(): string[] {
  return server.output().split('\n').filter((l) => l.includes('store read failed') || l.includes('more store'));
}

beforeAll(async () => {
  tiles = monacoTiles();
  setup = await serveSampleFromNginx(TOKEN, ['--store-timeout-ms', String(STORE_TIMEOUT_MS)]);
  ({ nginx, server } = setup);
});

afterAll(async () => {
  await setup?.close();
});

describe('object storage failing under a running server', () => {
  it('hung (SIGSTOP): 504 for uncached tiles, cached ones still served, /health 503 until it answers again', async () => {
    const [warm, uncached] = tiles;
    expect((await get(warm)).status).toBe(200);
    expect((await health()).status).toBe(200);
    await nginx.pause();
    try {
      expectGatewayError(await get(uncached), 504);
      const cached = await get(warm);
      expect(cached.status).toBe(200);
      expect(cached.body.equals(warm.data)).toBe(true);
      await vi.waitFor(async () => {
        const h = await health();
        expect(h.status).toBe(503);
        expect(h.json()).toEqual({ error: expect.stringContaining('timeout'), status: 503, store: 'failing' });
      }, { timeout: 20_000, interval: 250 });
    } finally {
      await nginx.resume();
    }
    await vi.waitFor(async () => expect((await health()).status).toBe(200), { timeout: 20_000, interval: 250 });
    const again = await get(uncached);
    expect(again.status).toBe(200);
    expect(again.body.equals(uncached.data)).toBe(true);
  });

  it('refuses to start against a hung store, naming the URL and the timeout', async () => {
    await nginx.pause();
    try {
      const r = await runServeToExit(['--out', nginx.url, '--port', '0', '--workers', '1', '--store-timeout-ms', '1000'], ENV);
      expect(r.code).not.toBe(0);
      expect(r.output).toContain(`tilebake: ${nginx.url}current.json: no answer within 1000 ms`);
      expect(r.output).not.toMatch(/\n\s+at /);
    } finally {
      await nginx.resume();
    }
  });

  it('stopped: 502 for uncached tiles with a few log lines and no stacks, /health 503', async () => {
    const linesBefore = failureLines().length;
    await nginx.stop();
    const uncached = tiles.slice(2);
    for (const t of uncached) expectGatewayError(await get(t), 502);
    // Only this kind: the hung test's timeouts may still be summed up in a line of their own meanwhile.
    const lines = failureLines().slice(linesBefore).filter((l) => l.includes('"kind":"store bad-answer"'));
    // ~20 failed requests, each read retried: one line for the kind (the summary comes later).
    expect(lines.length).toBeGreaterThanOrEqual(1);
    expect(lines.length).toBeLessThanOrEqual(2);
    expect(lines[0], lines.join('\n')).toContain('cannot reach the store');
    expect(lines[0]).toContain('ECONNREFUSED');
    expect(server.output()).not.toMatch(/\n\s+at /);
    expect(server.output()).not.toContain('"stack"');
    await vi.waitFor(async () => expect((await health()).status).toBe(503), { timeout: 20_000, interval: 250 });
  });
});

describe('start-up against an unreachable store', () => {
  it('names the URL and the cause, without a stack', async () => {
    const url = `http://127.0.0.1:${await freePort()}/`;
    const r = await runServeToExit(['--out', url, '--port', '0', '--workers', '1'], ENV);
    expect(r.code).not.toBe(0);
    expect(r.output).toContain(`tilebake: ${url}current.json: cannot reach the store (connect ECONNREFUSED`);
    expect(r.output).not.toContain('TypeError');
    expect(r.output).not.toMatch(/\n\s+at /);
  });
});
