// MLT over HTTP: /data/{id}/{z}/{x}/{y}.mlt, the .pbf route by Accept (Vary: Accept), the TileJSON and
// style.json with ?encoding=mlt, versioned URLs, and the answers to bad requests.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Manifest } from '../lib/manifest.ts';
import { openArchiveFile } from '../lib/pmtiles/index.ts';
import { prefersMlt } from '../static-server/tile-response.ts';
import { startServer, type RunningServer } from '../static-server/serve.ts';
import { request } from './fixtures/server/http.ts';
import { MLT_TILESET, sharedMltBuild } from './fixtures/mlt.ts';
import { buildSampleVector } from './fixtures/server/sample.ts';
import { rm } from 'node:fs/promises';

const MLT_TYPE = 'application/vnd.maplibre-tile';
let server: RunningServer;
let tile: { z: number; x: number; y: number; mvt: Buffer; mlt: Buffer };

beforeAll(async () => {
  const { out, version } = await sharedMltBuild();
  const m = JSON.parse(await readFile(join(version, 'manifest.json'), 'utf8')) as Manifest;
  const mvt = await openArchiveFile(join(version, m.tilesets[MLT_TILESET].archive));
  const mlt = await openArchiveFile(join(version, m.tilesets[MLT_TILESET].mlt!.archive));
  for await (const e of mvt.entries()) {
    if (e.z !== 14) continue;
    tile = { z: e.z, x: e.x, y: e.y, mvt: Buffer.from(await mvt.readRange(e.offset, e.length)), mlt: Buffer.from((await mlt.getTile(e.z, e.x, e.y))!) };
    break;
  }
  await mvt.close();
  await mlt.close();
  server = await startServer({ out, port: 0, host: '127.0.0.1', auth: false, cacheControl: 'public, max-age=60', cors: '*', cacheMb: 16, logLevel: 'warn', versionedUrls: true }, { tokenHashes: null });
}, 600_000);

afterAll(async () => {
  await server?.close();
});

const path = (ext: string) => `/data/${MLT_TILESET}/${tile.z}/${tile.x}/${tile.y}.${ext}`;

describe('MLT tiles over HTTP', () => {
  it('GET .mlt answers the stored MLT tile: its media type, gzip or plain, cached as .pbf', async () => {
    const gz = await request(server.url + path('mlt'), { headers: { 'accept-encoding': 'gzip' } });
    expect(gz.status).toBe(200);
    expect(gz.headers['content-type']).toBe(MLT_TYPE);
    expect(gz.headers['content-encoding']).toBe('gzip');
    expect(gz.headers['cache-control']).toBe('public, max-age=60');
    expect(Buffer.compare(gz.body, tile.mlt)).toBe(0);
    const plain = await request(server.url + path('mlt'));
    expect(Buffer.compare(plain.body, gunzipSync(tile.mlt))).toBe(0);
    const again = await request(server.url + path('mlt'), { headers: { 'accept-encoding': 'gzip', 'if-none-match': String(gz.headers.etag) } });
    expect(again.status).toBe(304);
  });

  it('GET .pbf answers MLT to an Accept naming the MLT type, MVT otherwise, and varies by Accept', async () => {
    const asMlt = await request(server.url + path('pbf'), { headers: { 'accept-encoding': 'gzip', accept: MLT_TYPE } });
    expect(asMlt.headers['content-type']).toBe(MLT_TYPE);
    expect(Buffer.compare(asMlt.body, tile.mlt)).toBe(0);
    expect(String(asMlt.headers.vary)).toMatch(/\bAccept\b(?!-)/);
    const asMvt = await request(server.url + path('pbf'), { headers: { 'accept-encoding': 'gzip', accept: '*/*' } });
    expect(asMvt.headers['content-type']).toBe('application/x-protobuf');
    expect(Buffer.compare(asMvt.body, tile.mvt)).toBe(0);
    expect(String(asMvt.headers.vary)).toMatch(/\bAccept\b(?!-)/);
    expect(asMvt.headers.etag).not.toBe(asMlt.headers.etag);
  });

  it('the Accept rule: the MLT type with q > 0, not below an MVT type', () => {
    expect(prefersMlt(MLT_TYPE)).toBe(true);
    expect(prefersMlt(`${MLT_TYPE}, application/x-protobuf;q=0.9`)).toBe(true);
    expect(prefersMlt(`${MLT_TYPE};q=0.5, application/vnd.mapbox-vector-tile`)).toBe(false);
    expect(prefersMlt(`${MLT_TYPE};q=0`)).toBe(false);
    expect(prefersMlt('*/*')).toBe(false);
    expect(prefersMlt(undefined)).toBe(false);
  });

  it('the TileJSON with ?encoding=mlt points at .mlt under the version and says "encoding": "mlt"', async () => {
    const r = await request(`${server.url}/data/${MLT_TILESET}.json?encoding=mlt`);
    expect(r.status).toBe(200);
    const doc = r.json();
    expect(doc.encoding).toBe('mlt');
    expect(doc.format).toBe('mlt');
    expect(doc.tiles).toHaveLength(1);
    expect(doc.tiles[0]).toMatch(new RegExp(`^${server.url}/v/[^/]+/data/${MLT_TILESET}/\\{z\\}/\\{x\\}/\\{y\\}\\.mlt$`));
    const plain = (await request(`${server.url}/data/${MLT_TILESET}.json`)).json();
    expect(plain.tiles[0]).toMatch(/\.pbf$/);
    expect(plain.encoding).toBeUndefined();
    // The versioned tile URL answers the same tile, immutable.
    const v = await request(doc.tiles[0].replace('{z}/{x}/{y}', `${tile.z}/${tile.x}/${tile.y}`), { headers: { 'accept-encoding': 'gzip' } });
    expect(v.status).toBe(200);
    expect(Buffer.compare(v.body, tile.mlt)).toBe(0);
    expect(v.headers['cache-control']).toMatch(/immutable/);
  });

  it('style.json?encoding=mlt points the vector sources at the MLT TileJSON with "encoding": "mlt"', async () => {
    const style = (await request(`${server.url}/styles/positron/style.json?encoding=mlt`)).json();
    const sources = Object.values(style.sources) as { type: string; url: string; encoding?: string }[];
    const vector = sources.filter((s) => s.type === 'vector');
    expect(vector.length).toBeGreaterThan(0);
    for (const s of vector) {
      expect(s.encoding).toBe('mlt');
      expect(s.url).toMatch(new RegExp(`/data/${MLT_TILESET}\\.json\\?encoding=mlt$`));
    }
    const mvt = (await request(`${server.url}/styles/positron/style.json`)).json();
    expect(Object.values(mvt.sources).some((s) => (s as { encoding?: string }).encoding !== undefined)).toBe(false);
  });

  it('bad requests: an unknown encoding is 400; MLT of a tileset without it is 404 naming its encodings', async () => {
    for (const url of [`/data/${MLT_TILESET}.json?encoding=webp`, '/styles/positron/style.json?encoding=x']) {
      const r = await request(server.url + url);
      expect(r.status).toBe(400);
      expect(r.json()).toMatchObject({ status: 400, error: 'encoding: expected mvt or mlt (got "webp")'.replace('webp', url.endsWith('x') ? 'x' : 'webp') });
    }
    const twice = await request(`${server.url}/data/${MLT_TILESET}/${tile.z}/${tile.x}/${tile.y}@2x.mlt`);
    expect(twice.status).toBe(404);
    // The Monaco sample, built without MLT.
    const dir = await buildSampleVector();
    const mvtOnly = await startServer({ out: dir, port: 0, host: '127.0.0.1', auth: false, cors: '*', cacheMb: 16, logLevel: 'warn' }, { tokenHashes: null });
    try {
      const error = 'tileset "openmaptiles" has no MLT tiles (its encodings: mvt; a tileset gets them with "encodings": ["mvt", "mlt"] in the build config)';
      for (const url of ['/data/openmaptiles/14/8529/5975.mlt', '/data/openmaptiles.json?encoding=mlt']) {
        const r = await request(mvtOnly.url + url);
        expect(r.status, url).toBe(404);
        expect(r.json()).toEqual({ error, status: 404, encodings: ['mvt'] });
      }
      // Accept asking for MLT from a tileset without it: MVT, as before.
      const pbf = await request(`${mvtOnly.url}/data/openmaptiles/14/8529/5975.pbf`, { headers: { accept: MLT_TYPE } });
      expect(pbf.headers['content-type']).toBe('application/x-protobuf');
    } finally {
      await mvtOnly.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
