import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodePolyline } from '../lib/elevation/geo.ts';
import { cumulativeDistances, haversine } from '../lib/geo-distance.ts';
import { buildElevation } from '../pipeline/elevation/stage.ts';
import { hashToken } from '../static-server/auth.ts';
import { startServer, type RunningServer } from '../static-server/serve.ts';

process.env.TILEBAKE_QUIET = '1';
// Small limits so the limit errors need only small bodies.
process.env.TILEBAKE_HEIGHT_MAX_POINTS = '500';
process.env.TILEBAKE_HEIGHT_BODY_LIMIT = '100000';
const TOKEN = 'h4-height-test-token';
const SAMPLE_HGT = join(import.meta.dirname, '../data/sample/dem/N43E007.hgt');
const SIDE = 1201;

let dir: string;
let server: RunningServer;
let raw: Buffer;
/** Raw SRTM post (row from the north edge, column from the west edge). */
const post = (r: number, c: number) => raw.readInt16BE((r * SIDE + c) * 2);

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tilebake-height-'));
  raw = await readFile(SAMPLE_HGT);
  await buildElevation(dir, [{ path: SAMPLE_HGT }], { precision: 0.1, terrain: false });
  const logStream = new Writable({ write: (_c, _e, cb) => cb() });
  server = await startServer(
    { out: dir, port: 0, host: '127.0.0.1', routingPort: 0, auth: true, cacheControl: 'no-cache', cors: '*', cacheMb: 16, logLevel: 'error' },
    { tokenHashes: [hashToken(TOKEN)], logStream },
  );
});
afterAll(async () => {
  await server?.close();
  await rm(dir, { recursive: true, force: true });
});

async function post_(body: unknown, opts: { url?: string; token?: string | null; type?: string; raw?: string } = {}) {
  const headers: Record<string, string> = { 'content-type': opts.type ?? 'application/json' };
  if (opts.token !== null) headers.authorization = `Bearer ${opts.token ?? TOKEN}`;
  const res = await fetch(`${opts.url ?? server.routingUrl}/height`, { method: 'POST', headers, body: opts.raw ?? JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, text, json: JSON.parse(text) as Record<string, unknown> };
}

// Posts in Monaco: row 318 from the north (lat 44 - 318/1200 ≈ 43.735), columns around lon 7.42.
const R = 318, C = 505;
const latOf = (r: number) => 44 - r / 1200;
const lonOf = (c: number) => 7 + c / 1200;

describe('POST /height', () => {
  it('answers heights of the posts exactly and interpolates between them, keys in order', async () => {
    const shape = [{ lat: latOf(R), lon: lonOf(C) }, { lat: latOf(R + 1), lon: lonOf(C + 2) }, { lat: (latOf(R) + latOf(R + 1)) / 2, lon: (lonOf(C) + lonOf(C + 1)) / 2 }];
    const { status, json, text } = await post_({ shape, id: 'monaco' });
    expect(status).toBe(200);
    expect(Object.keys(json)).toEqual(['shape', 'height', 'id']);
    const mid = (post(R, C) + post(R, C + 1) + post(R + 1, C) + post(R + 1, C + 1)) / 4;
    expect(json.height).toEqual([post(R, C), post(R + 1, C + 2), Math.round(mid)]);
    expect(json.id).toBe('monaco');
    // Shape echoed with at most 6 decimals.
    expect((json.shape as { lat: number }[])[0].lat).toBe(Math.round(latOf(R) * 1e6) / 1e6);
    expect(text.startsWith('{"shape":')).toBe(true);
    expect(post(R, C)).toBeGreaterThan(0);
  });

  it('range: cumulative haversine distances from 0, rounded per height_precision', async () => {
    const shape = [{ lat: 43.7384, lon: 7.4246 }, { lat: 43.7311, lon: 7.4197 }, { lat: 43.7503, lon: 7.439 }];
    const d = cumulativeDistances(shape);
    const r0 = await post_({ shape, range: true });
    expect(Object.keys(r0.json)).toEqual(['shape', 'range_height']);
    const rh0 = r0.json.range_height as [number, number][];
    expect(rh0.map((p) => p[0])).toEqual(d.map((x) => Math.round(x)));
    expect(rh0.every(([, h]) => Number.isInteger(h))).toBe(true);
    const r2 = await post_({ shape, range: true, height_precision: 2 });
    const rh2 = r2.json.range_height as [number, number][];
    expect(rh2.map((p) => p[0])).toEqual(d.map((x) => Math.round(x * 100) / 100));
    expect(rh2.some(([, h]) => !Number.isInteger(h))).toBe(true);
    rh2.forEach(([, h], i) => expect(Math.abs(h - rh0[i][1])).toBeLessThanOrEqual(0.5));
    const r1 = await post_({ shape, height_precision: 1 });
    (r1.json.height as number[]).forEach((h) => expect(Math.round(h * 10)).toBeCloseTo(h * 10, 6));
    // Precision 0 given explicitly is the default.
    const r0b = await post_({ shape, range: true, height_precision: 0 });
    expect(r0b.json.range_height).toEqual(rh0);
    expect(haversine(shape[0], shape[1])).toBeGreaterThan(800);
  });

  it('encoded_polyline (6 and 5) is echoed back as a polyline; resampling echoes the resampled line', async () => {
    const shape = [{ lat: 43.7384, lon: 7.4246 }, { lat: 43.7311, lon: 7.4197 }];
    const direct = await post_({ shape });
    const p6 = encodePolyline(shape, 6);
    const r6 = await post_({ encoded_polyline: p6 });
    expect(Object.keys(r6.json)).toEqual(['encoded_polyline', 'height']);
    expect(r6.json).toEqual({ encoded_polyline: p6, height: direct.json.height });
    const p5 = encodePolyline(shape, 5);
    const r5 = await post_({ encoded_polyline: p5, shape_format: 'polyline5' });
    expect(r5.json.height).toEqual(direct.json.height);
    const rs = await post_({ shape, resample_distance: 100, range: true });
    const pts = rs.json.shape as { lat: number; lon: number }[];
    const total = haversine(shape[0], shape[1]);
    expect(pts.length).toBe(Math.floor(total / 100) + 2);
    expect(pts[0]).toEqual(shape[0]);
    expect(pts[pts.length - 1]).toEqual(shape[1]);
    expect((rs.json.range_height as number[][])[1][0]).toBe(100);
  });

  it('null and a warning for points outside coverage; GET /height?json= works too', async () => {
    const shape = [{ lat: 43.7384, lon: 7.4246 }, { lat: 45.5, lon: 7.5 }];
    const r = await post_({ shape, id: 7 });
    expect(Object.keys(r.json)).toEqual(['shape', 'height', 'id', 'warnings']);
    expect((r.json.height as unknown[])[1]).toBeNull();
    expect(r.json.warnings).toEqual([expect.objectContaining({ indexes: [1] })]);
    const q = encodeURIComponent(JSON.stringify({ shape }));
    const g = await fetch(`${server.url}/height?json=${q}`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(g.status).toBe(200);
    expect(((await g.json()) as { height: unknown[] }).height).toEqual(r.json.height);
  });

  it('every error: status, body and error_code', async () => {
    const shape = [{ lat: 43.7384, lon: 7.4246 }];
    const cases: [Parameters<typeof post_>, number, number | undefined, RegExp][] = [
      [[undefined, { raw: '{"shape": [' }], 400, 100, /parse json/i],
      [[undefined, { raw: JSON.stringify({ shape }), type: 'text/plain' }], 400, 100, /Content-Type/],
      [[{ range: true }], 400, 312, /shape' or 'encoded_polyline/],
      [[{ shape: [] }], 400, 311, /empty/],
      [[{ shape: [{ lat: '43.7', lon: 7.4 }] }], 400, 130, /shape\[0\]/],
      [[{ shape: [{ lat: 43.7, lon: 7.4 }, { lat: 91, lon: 7 }] }], 400, 130, /shape\[1\].*lat 91/],
      [[{ shape: [{ lat: 43.7, lon: 181 }] }], 400, 130, /lon 181/],
      [[{ encoded_polyline: 'abc~' }], 400, 131, /malformed/],
      [[{ encoded_polyline: encodePolyline(shape), shape_format: 'geojson' }], 400, 131, /shape_format/],
      [[{ shape, resample_distance: 9.9 }], 400, 313, />= 10/],
      [[{ shape, height_precision: '2' }], 400, 100, /height_precision: expected 0, 1 or 2 \(got "2"\)/],
      [[{ shape, height_precision: 3 }], 400, 100, /height_precision.*got 3/],
      [[{ shape, height_precision: -1 }], 400, 100, /height_precision.*got -1/],
      [[{ shape: Array.from({ length: 501 }, () => shape[0]) }], 400, 314, /limit is 500/],
      [[{ shape: [shape[0], { lat: 43.8, lon: 7.5 }], resample_distance: 10 }], 400, 314, /limit is 500/],
      [[undefined, { raw: JSON.stringify({ shape: Array.from({ length: 5000 }, () => shape[0]) }) }], 413, 100, /too large/],
    ];
    for (const [k, [args, status, code, msg]] of cases.entries()) {
      const r = await post_(...args);
      expect(r.status, `case ${k}`).toBe(status);
      expect(r.json.status).toBe(status);
      expect(r.json.error_code, `case ${k}`).toBe(code);
      expect(r.json.error as string).toMatch(msg);
    }
  });

  it('needs a valid bearer token on both listeners', async () => {
    for (const url of [server.url, server.routingUrl]) {
      const none = await post_({ shape: [{ lat: 43.7, lon: 7.4 }] }, { url, token: null });
      expect(none.status).toBe(401);
      expect(none.json.status).toBe(401);
      const wrong = await post_({ shape: [{ lat: 43.7, lon: 7.4 }] }, { url, token: 'nope' });
      expect(wrong.status).toBe(401);
      const ok = await post_({ shape: [{ lat: 43.7, lon: 7.4 }] }, { url });
      expect(ok.status).toBe(200);
    }
  });
});
