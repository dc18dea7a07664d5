// Vector tiles and TileJSON over real HTTP, from the sample's vector stage output.
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { gunzipSync } from 'node:zlib';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashToken } from '../static-server/auth.ts';
import type { ServeOptions } from '../static-server/context.ts';
import { startServer, type RunningServer } from '../static-server/serve.ts';
import { buildQuickSample, MONACO_MBTILES, monacoTiles, request, type RawResponse, type SourceTile, DEFAULT_CACHE_CONTROL, serveOptions } from './fixtures/server/helpers.ts';

const TOKEN = randomBytes(18).toString('base64url');
const AUTH = { authorization: `Bearer ${TOKEN}` };

let out: string;
let server: RunningServer;
let tiles: SourceTile[];

function options(extra: Partial<ServeOptions> = {}): ServeOptions {
  return serveOptions(out, extra);
}

function get(path: string, headers: Record<string, string> = {}, base = server.url): Promise<RawResponse> {
  return request(`${base}${path}`, { headers: { ...AUTH, ...headers } });
}

function tilePath(t: { z: number; x: number; y: number }): string {
  return `/data/openmaptiles/${t.z}/${t.x}/${t.y}.pbf`;
}

function expectJsonError(r: RawResponse, status: number): { error: string; status: number } {
  expect(r.status).toBe(status);
  expect(r.headers['content-type']).toMatch(/^application\/json/);
  const body = r.json();
  expect(body.status).toBe(status);
  expect(typeof body.error).toBe('string');
  return body;
}

beforeAll(async () => {
  out = await buildQuickSample();
  tiles = monacoTiles();
  server = await startServer(options(), { tokenHashes: [hashToken(TOKEN)] });
});

afterAll(async () => {
  await server?.close();
  if (out) await rm(out, { recursive: true, force: true });
});

describe('vector tiles', () => {
  it('serves every Monaco tile bit-exact as stored gzip when gzip is accepted', async () => {
    expect(tiles.length).toBeGreaterThan(20);
    for (const t of tiles) {
      const r = await get(tilePath(t), { 'accept-encoding': 'gzip, deflate, br' });
      expect(r.status, tilePath(t)).toBe(200);
      expect(r.headers['content-encoding']).toBe('gzip');
      expect(r.headers['content-type']).toBe('application/x-protobuf');
      expect(r.body.equals(t.data), tilePath(t)).toBe(true);
    }
  });

  it('serves every tile decompressed when gzip is not accepted', async () => {
    for (const t of tiles) {
      const r = await get(tilePath(t));
      expect(r.status).toBe(200);
      expect(r.headers['content-encoding']).toBeUndefined();
      expect(r.headers['content-type']).toBe('application/x-protobuf');
      expect(r.body.equals(gunzipSync(t.data)), tilePath(t)).toBe(true);
    }
  });

  it('negotiates gzip from Accept-Encoding q-values and wildcards', async () => {
    const t = tiles[0];
    const cases: [string, boolean][] = [
      ['gzip;q=0', false],
      ['br', false],
      ['identity', false],
      ['*', true],
      ['gzip;q=0.5, br', true],
      ['*, gzip;q=0', false],
      ['deflate, GZIP', true],
    ];
    for (const [header, gz] of cases) {
      const r = await get(tilePath(t), { 'accept-encoding': header });
      expect(r.headers['content-encoding'], header).toBe(gz ? 'gzip' : undefined);
      expect(r.body.equals(gz ? t.data : gunzipSync(t.data)), header).toBe(true);
    }
  });

  it('sends strong ETags, Cache-Control, Vary and CORS headers, and 304 on If-None-Match', async () => {
    const etags = new Set<string>();
    for (const t of tiles) {
      const r = await get(tilePath(t), { 'accept-encoding': 'gzip' });
      const etag = r.headers.etag as string;
      expect(etag).toMatch(/^"[^"]+"$/);
      etags.add(etag);
      expect(r.headers['cache-control']).toBe(DEFAULT_CACHE_CONTROL);
      expect(r.headers.vary).toBe('Accept-Encoding');
      expect(r.headers['access-control-allow-origin']).toBe('*');
      const again = await get(tilePath(t), { 'accept-encoding': 'gzip', 'if-none-match': etag });
      expect(again.status).toBe(304);
      expect(again.body.length).toBe(0);
      expect(again.headers.etag).toBe(etag);
      expect(again.headers['cache-control']).toBe(DEFAULT_CACHE_CONTROL);
      const listed = await get(tilePath(t), { 'accept-encoding': 'gzip', 'if-none-match': `"nope", W/${etag}` });
      expect(listed.status).toBe(304);
    }
    const distinct = new Set(tiles.map((t) => t.data.toString('base64'))).size;
    expect(etags.size).toBe(distinct);
    const t = tiles[0];
    const stale = await get(tilePath(t), { 'accept-encoding': 'gzip', 'if-none-match': '"something-else"' });
    expect(stale.status).toBe(200);
    expect(stale.body.equals(t.data)).toBe(true);
  });

  it('gives the decompressed representation its own ETag', async () => {
    const t = tiles[0];
    const gz = await get(tilePath(t), { 'accept-encoding': 'gzip' });
    const plain = await get(tilePath(t));
    expect(plain.headers.etag).not.toBe(gz.headers.etag);
    const notModified = await get(tilePath(t), { 'if-none-match': plain.headers.etag as string });
    expect(notModified.status).toBe(304);
    const wrongRepresentation = await get(tilePath(t), { 'if-none-match': gz.headers.etag as string });
    expect(wrongRepresentation.status).toBe(200);
  });

  it('answers HEAD with the headers and no body', async () => {
    const t = tiles[0];
    const r = await request(`${server.url}${tilePath(t)}`, { method: 'HEAD', headers: { ...AUTH, 'accept-encoding': 'gzip' } });
    expect(r.status).toBe(200);
    expect(r.body.length).toBe(0);
    expect(r.headers['content-type']).toBe('application/x-protobuf');
    expect(Number(r.headers['content-length'])).toBe(t.data.length);
  });

  it('answers a CORS preflight without a token, allowing Authorization', async () => {
    const r = await request(`${server.url}${tilePath(tiles[0])}`, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://app.example.org',
        'access-control-request-method': 'GET',
        'access-control-request-headers': 'authorization',
      },
    });
    expect(r.status).toBe(204);
    expect(r.headers['access-control-allow-origin']).toBe('*');
    expect(String(r.headers['access-control-allow-headers']).toLowerCase()).toContain('authorization');
    expect(String(r.headers['access-control-allow-methods'])).toContain('GET');
  });
});

describe('status codes', () => {
  it('404 for an unknown tileset', async () => {
    const body = expectJsonError(await get('/data/nope/0/0/0.pbf'), 404);
    expect(body.error).toContain('nope');
    expectJsonError(await get('/data/constructor/0/0/0.pbf'), 404);
    expectJsonError(await get('/data/nope.json'), 404);
  });

  it('400 for malformed coordinates', async () => {
    for (const p of ['1.5/0/0', 'a/0/0', '1/0.5/0', '1/0/x', '-1/0/0', '1/-1/0', '1/0/-1', '1/2/0', '1/0/2', '3/8/0', '3/0/8', '0/1/0', '1e1/0/0']) {
      const body = expectJsonError(await get(`/data/openmaptiles/${p}.pbf`), 400);
      expect(body.error, p).toMatch(/invalid tile coordinate/);
    }
    const neg = expectJsonError(await get('/data/openmaptiles/2/-1/0.pbf'), 400);
    expect(neg.error).toContain('negative');
    const big = expectJsonError(await get('/data/openmaptiles/2/4/0.pbf'), 400);
    expect(big.error).toContain('2^z');
  });

  it('404 naming the range for a zoom outside the archive', async () => {
    const body = expectJsonError(await get('/data/openmaptiles/15/17059/11948.pbf'), 404);
    expect(body.error).toContain('0-14');
    expect(body).toMatchObject({ minzoom: 0, maxzoom: 14 });
  });

  it('204 for a valid coordinate without a tile', async () => {
    const have = new Set(tiles.map((t) => `${t.z}/${t.x}/${t.y}`));
    expect(have.has('14/0/0')).toBe(false);
    const r = await get('/data/openmaptiles/14/0/0.pbf', { 'accept-encoding': 'gzip' });
    expect(r.status).toBe(204);
    expect(r.body.length).toBe(0);
    expect((await get('/data/openmaptiles/14/0/0.pbf')).status).toBe(204);
  });

  it('404 for a format the tileset does not have', async () => {
    const body = expectJsonError(await get('/data/openmaptiles/0/0/0.png'), 404);
    expect(body.error).toContain('.pbf');
    expectJsonError(await get('/data/openmaptiles/0/0/0@2x.pbf'), 404);
  });

  it('404 JSON for an unknown route', async () => {
    for (const p of ['/nope', '/data', '/data/openmaptiles', '/data/openmaptiles/0/0/0/0.pbf', '/styles']) {
      expectJsonError(await get(p), 404);
    }
  });

  it('JSON errors for malformed URLs and over-long path segments', async () => {
    const bad = expectJsonError(await get('/data/openmaptiles/0/0/%zz.pbf'), 400);
    expect(bad.error).toContain('malformed URL');
    expectJsonError(await get(`/data/${'a'.repeat(300)}/0/0/0.pbf`), 414);
    expectJsonError(await get(`/data/${'a'.repeat(200)}/0/0/0.pbf`), 404);
  });

  it('404 and 405 come before any body parsing', async () => {
    const headers = { ...AUTH, 'content-type': 'application/json' };
    expectJsonError(await request(`${server.url}/nope`, { method: 'POST', headers, body: '{bad' }), 404);
    expectJsonError(await request(`${server.url}${tilePath(tiles[0])}`, { method: 'POST', headers, body: '{bad' }), 405);
    const odd = { ...AUTH, 'content-type': 'application/x-unknown' };
    expectJsonError(await request(`${server.url}${tilePath(tiles[0])}`, { method: 'PUT', headers: odd, body: 'zz' }), 405);
  });

  it('405 JSON with Allow for a wrong method', async () => {
    for (const method of ['POST', 'PUT', 'DELETE', 'PATCH']) {
      const r = await request(`${server.url}${tilePath(tiles[0])}`, { method, headers: AUTH });
      expectJsonError(r, 405);
      expect(String(r.headers.allow)).toContain('GET');
    }
    const health = await request(`${server.url}/health`, { method: 'DELETE', headers: AUTH });
    expectJsonError(health, 405);
    const tj = await request(`${server.url}/data/openmaptiles.json`, { method: 'POST', headers: { ...AUTH, 'content-type': 'application/json' }, body: '{}' });
    expectJsonError(tj, 405);
  });
});

describe('TileJSON', () => {
  function mbtilesMetadata(): Record<string, string> {
    const db = new Database(MONACO_MBTILES, { readonly: true });
    try {
      const rows = db.prepare('SELECT name, value FROM metadata').all() as { name: string; value: string }[];
      return Object.fromEntries(rows.map((r) => [r.name, r.value]));
    } finally {
      db.close();
    }
  }

  it('describes the tileset with absolute URLs from the request host', async () => {
    const r = await get('/data/openmaptiles.json');
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toMatch(/^application\/json/);
    expect(r.headers['access-control-allow-origin']).toBe('*');
    const tj = r.json();
    const meta = mbtilesMetadata();
    expect(tj.tilejson).toBe('3.0.0');
    expect(tj.tiles).toEqual([`${server.url}/data/openmaptiles/{z}/{x}/{y}.pbf`]);
    expect(tj.minzoom).toBe(0);
    expect(tj.maxzoom).toBe(14);
    const bounds = meta.bounds.split(',').map(Number);
    expect(tj.bounds).toHaveLength(4);
    tj.bounds.forEach((v: number, i: number) => expect(v).toBeCloseTo(bounds[i], 5));
    // The MBTiles' own center (7.4, 43.7) lies outside its bounds; TileJSON 3.0.0 wants it inside: the middle, same zoom.
    expect(tj.center).toEqual([(bounds[0] + bounds[2]) / 2, (bounds[1] + bounds[3]) / 2, Number(meta.center.split(',')[2])]);
    const layers = (JSON.parse(meta.json) as { vector_layers: { id: string }[] }).vector_layers.map((l) => l.id);
    expect(tj.vector_layers.map((l: { id: string }) => l.id)).toEqual(layers);
    expect(tj.attribution).toContain('OpenStreetMap');
    expect(tj.name).toBe('OpenMapTiles Monaco');

    const other = await get('/data/openmaptiles.json', { host: 'tiles.example.com:8443' });
    expect(other.json().tiles).toEqual(['http://tiles.example.com:8443/data/openmaptiles/{z}/{x}/{y}.pbf']);
  });

  it('uses --public-url when given', async () => {
    const s = await startServer(options({ publicUrl: 'https://maps.example.com/base/' }), { tokenHashes: [hashToken(TOKEN)] });
    try {
      const tj = (await get('/data/openmaptiles.json', { host: 'ignored.example' }, s.url)).json();
      expect(tj.tiles).toEqual(['https://maps.example.com/base/data/openmaptiles/{z}/{x}/{y}.pbf']);
    } finally {
      await s.close();
    }
  });
});

describe('configured headers', () => {
  it('uses the configured Cache-Control and CORS origin', async () => {
    const s = await startServer(options({ cacheControl: 'public, max-age=60, immutable', cors: 'https://app.example.org' }), {
      tokenHashes: [hashToken(TOKEN)],
    });
    try {
      const t = tiles[0];
      const r = await get(tilePath(t), { 'accept-encoding': 'gzip' }, s.url);
      expect(r.status).toBe(200);
      expect(r.headers['cache-control']).toBe('public, max-age=60, immutable');
      expect(r.headers['access-control-allow-origin']).toBe('https://app.example.org');
      expect(r.headers.vary).toBe('Origin, Accept-Encoding');
      expect(r.body.equals(t.data)).toBe(true);
    } finally {
      await s.close();
    }
  });

  it('sends no CORS headers when CORS is disabled', async () => {
    const s = await startServer(options({ cors: '' }), { tokenHashes: [hashToken(TOKEN)] });
    try {
      const r = await get(tilePath(tiles[0]), {}, s.url);
      expect(r.status).toBe(200);
      expect(r.headers['access-control-allow-origin']).toBeUndefined();
    } finally {
      await s.close();
    }
  });
});
