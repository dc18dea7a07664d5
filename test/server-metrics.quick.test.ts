// Prometheus metrics: one scrape sums every cluster worker; counters move by exactly the requests made.
import { currentVersionDir } from '../lib/build-version.ts';
import { randomBytes } from 'node:crypto';
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StoreTimeoutError } from '../lib/store-read.ts';
import { ServerMetrics } from '../static-server/metrics.ts';
import { buildQuickSample, freePort, monacoTiles, request, startServe, type ServeProcess, type SourceTile } from './fixtures/server/helpers.ts';

const TOKEN = randomBytes(18).toString('base64url');
const AUTH = { authorization: `Bearer ${TOKEN}` };
/** Requests of each kind the test makes between two scrapes. */
const N = 24;
/** Points of each /height request. */
const SHAPE = [
  { lat: 43.7384, lon: 7.4246 },
  { lat: 43.7311, lon: 7.4197 },
  { lat: 43.7503, lon: 7.439 },
];

/** Value of one series in a Prometheus text scrape (0 when absent). */
function value(text: string, name: string, labels: Record<string, string> = {}): number {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const m = /^[^{ ]+(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const got = Object.fromEntries([...(m[1] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]]));
    if (Object.entries(labels).every(([k, v]) => got[k] === v)) return Number(m[2]);
  }
  return 0;
}

let out: string;
let tiles: SourceTile[];
let server: ServeProcess;
let metricsUrl: string;

beforeAll(async () => {
  out = await buildQuickSample(['vector', 'elevation']);
  tiles = monacoTiles();
  const port = await freePort();
  server = await startServe(['--out', out, '--port', '0', '--host', '127.0.0.1', '--workers', '2', '--metrics-port', String(port)], { TILEBAKE_TOKENS: TOKEN });
  metricsUrl = `http://127.0.0.1:${port}/metrics`;
});

afterAll(async () => {
  server?.proc.kill('SIGTERM');
  await server?.exited;
  if (out) await rm(out, { recursive: true, force: true });
});

async function scrape(): Promise<string> {
  const r = await request(metricsUrl);
  expect(r.status).toBe(200);
  expect(r.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
  return r.body.toString('utf8');
}

describe('metrics across cluster workers', () => {
  it('N requests move the counters by exactly N in one scrape', async () => {
    const before = await scrape();
    let vectorBytes = 0;
    // A new connection per request: the primary hands connections to the workers in turn.
    for (let i = 0; i < N; i++) {
      const t = tiles[i % tiles.length];
      const r = await request(`${server.url}/data/openmaptiles/${t.z}/${t.x}/${t.y}.pbf`, { headers: { ...AUTH, 'accept-encoding': 'gzip' } });
      expect(r.status).toBe(200);
      vectorBytes += r.body.length;
    }
    for (let i = 0; i < N; i++) {
      const r = await request(`${server.url}/height`, { method: 'POST', headers: { ...AUTH, 'content-type': 'application/json' }, body: JSON.stringify({ shape: SHAPE }) });
      expect(r.status).toBe(200);
    }
    for (let i = 0; i < N; i++) expect((await request(`${server.url}/styles/none/1/0/0.png`)).status).toBe(401);
    const after = await scrape();
    const delta = (name: string, labels: Record<string, string> = {}) => value(after, name, labels) - value(before, name, labels);

    expect(delta('tilebake_http_requests_total', { kind: 'vector', status: '200' })).toBe(N);
    expect(delta('tilebake_http_requests_total', { kind: 'height', status: '200' })).toBe(N);
    expect(delta('tilebake_http_requests_total', { kind: 'raster', status: '401' })).toBe(N);
    expect(delta('tilebake_http_request_duration_seconds_count', { kind: 'vector' })).toBe(N);
    expect(delta('tilebake_http_response_bytes_total', { kind: 'vector' })).toBe(vectorBytes);
    expect(delta('tilebake_height_points_total')).toBe(N * SHAPE.length);
    // One tile-cache lookup per vector request (gzip accepted: no decompressed copy is looked up).
    expect(delta('tilebake_cache_hits_total', { cache: 'tiles' }) + delta('tilebake_cache_misses_total', { cache: 'tiles' })).toBe(N);
    expect(delta('tilebake_cache_misses_total', { cache: 'tiles' })).toBeGreaterThan(0);
    expect(delta('tilebake_store_reads_total', { store: 'local', outcome: 'ok' })).toBeGreaterThan(0);
    expect(delta('tilebake_store_read_bytes_total', { store: 'local' })).toBeGreaterThan(0);
    expect(value(after, 'tilebake_cache_bytes', { cache: 'tiles' })).toBeGreaterThan(0);

    // The served build, once per build (not summed over the workers), and process metrics of both workers.
    const served = (await currentVersionDir(out))!;
    const manifest = JSON.parse(await readFile(join(served.dir, 'manifest.json'), 'utf8')) as { generatedAt: string };
    expect(value(after, 'tilebake_build_info', { build_id: served.id ?? manifest.generatedAt, version: '1' })).toBe(1);
    expect(value(after, 'tilebake_process_cpu_user_seconds_total')).toBeGreaterThan(0);
  });

  it('serves /metrics on the main port behind the token, with the same sums', async () => {
    expect((await request(`${server.url}/metrics`)).status).toBe(401);
    const before = value(await scrape(), 'tilebake_http_requests_total', { kind: 'health', status: '200' });
    for (let i = 0; i < 4; i++) expect((await request(`${server.url}/health`)).status).toBe(200);
    const r = await request(`${server.url}/metrics`, { headers: AUTH });
    expect(r.status).toBe(200);
    expect(value(r.body.toString('utf8'), 'tilebake_http_requests_total', { kind: 'health', status: '200' }) - before).toBe(4);
    const other = await request(metricsUrl.replace('/metrics', '/data'));
    expect(other.status).toBe(404);
    expect(other.json()).toMatchObject({ status: 404 });
  });
});

describe('store metrics', () => {
  it('counts reads, bytes, errors and timeouts from the read listener', async () => {
    const m = new ServerMetrics();
    const listen = m.storeListener('http');
    listen({ ok: true, attempts: 1, ms: 3, bytes: 1000 });
    listen({ ok: true, attempts: 2, ms: 9, bytes: 24 });
    listen({ ok: false, attempts: 1, ms: 5000, error: new StoreTimeoutError('x: no answer within 5000 ms') });
    const text = await m.text();
    expect(value(text, 'tilebake_store_reads_total', { store: 'http', outcome: 'ok' })).toBe(2);
    expect(value(text, 'tilebake_store_reads_total', { store: 'http', outcome: 'error' })).toBe(1);
    expect(value(text, 'tilebake_store_read_bytes_total', { store: 'http' })).toBe(1024);
    expect(value(text, 'tilebake_store_errors_total', { store: 'http', kind: 'timeout' })).toBe(1);
    expect(value(text, 'tilebake_store_timeouts_total', { store: 'http' })).toBe(1);
  });
});
