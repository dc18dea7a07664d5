// Versioned URLs (static-server/versioned.ts): documents name the build, /v/{build}/ answers are
// immutable, an older version on disk serves its own bytes, an unknown or pruned one answers 404.
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashToken } from '../static-server/auth.ts';
import { startServer, type RunningServer } from '../static-server/serve.ts';
import { buildQuickSample, monacoTiles, request } from './fixtures/server/helpers.ts';
import { publishRotatedVersion, rotatedTiles } from './fixtures/server/versions.ts';

const TOKEN = randomBytes(18).toString('base64url');
const AUTH = { authorization: `Bearer ${TOKEN}`, 'accept-encoding': 'gzip' };
let out: string;
let server: RunningServer;
let first: string;

beforeAll(async () => {
  out = await buildQuickSample();
  server = await startServer(
    { out, port: 0, host: '127.0.0.1', auth: true, cors: '*', cacheMb: 16, logLevel: 'silent', versionedUrls: true, versionPollMs: 0 },
    { tokenHashes: [hashToken(TOKEN)] },
  );
  first = server.version.id!;
}, 240_000);

afterAll(async () => {
  await server?.close();
  if (out) await rm(out, { recursive: true, force: true });
});

const tilePath = (t: { z: number; x: number; y: number }) => `/data/openmaptiles/${t.z}/${t.x}/${t.y}.pbf`;

describe('versioned URLs', () => {
  it('TileJSON names the build in its tile URL and is revalidated every time', async () => {
    const r = await request(`${server.url}/data/openmaptiles.json`, { headers: AUTH });
    expect(r.json().tiles).toEqual([`${server.url}/v/${first}/data/openmaptiles/{z}/{x}/{y}.pbf`]);
    expect(r.headers['cache-control']).toBe('private, no-cache');
    const v = await request(`${server.url}/v/${first}/data/openmaptiles.json`, { headers: AUTH });
    expect(v.json().tiles).toEqual(r.json().tiles);
    expect(v.headers['cache-control']).toBe('private, max-age=31536000, immutable');
  });

  it('a versioned tile has the same bytes, cached for a year; the unversioned one keeps its lifetime', async () => {
    const t = monacoTiles()[3];
    const plain = await request(`${server.url}${tilePath(t)}`, { headers: AUTH });
    const versioned = await request(`${server.url}/v/${first}${tilePath(t)}`, { headers: AUTH });
    expect(plain.headers['cache-control']).toBe('private, max-age=86400');
    expect(versioned.status).toBe(200);
    expect(versioned.headers['cache-control']).toBe('private, max-age=31536000, immutable');
    expect(versioned.body.equals(t.data)).toBe(true);
    expect(plain.body.equals(t.data)).toBe(true);
    // Auth applies the same under /v/.
    expect((await request(`${server.url}/v/${first}${tilePath(t)}`)).status).toBe(401);
  });

  it('after a rebuild the old version still serves its own bytes; documents name the new one', async () => {
    const { previous, next } = await publishRotatedVersion(out);
    expect(previous).toBe(first);
    expect(await server.checkVersion()).toBe(true);
    const t = monacoTiles()[3];
    const v2 = rotatedTiles()[3];
    expect(v2.data.equals(t.data)).toBe(false);
    const old = await request(`${server.url}/v/${first}${tilePath(t)}`, { headers: AUTH });
    expect(old.status).toBe(200);
    expect(old.body.equals(t.data)).toBe(true);
    expect(old.headers['cache-control']).toBe('private, max-age=31536000, immutable');
    expect((await request(`${server.url}/v/${next}${tilePath(t)}`, { headers: AUTH })).body.equals(v2.data)).toBe(true);
    expect((await request(`${server.url}${tilePath(t)}`, { headers: AUTH })).body.equals(v2.data)).toBe(true);
    expect((await request(`${server.url}/data/openmaptiles.json`, { headers: AUTH })).json().tiles[0]).toContain(`/v/${next}/`);
    // The old version's TileJSON still names the old version.
    expect((await request(`${server.url}/v/${first}/data/openmaptiles.json`, { headers: AUTH })).json().tiles[0]).toContain(`/v/${first}/`);
    const metrics = (await request(`${server.url}/metrics`, { headers: AUTH })).body.toString();
    expect(metrics).toMatch(new RegExp(`tilebake_build_info\\{build_id="${next}"`));
    expect(metrics).not.toMatch(new RegExp(`tilebake_build_info\\{build_id="${first}"`));
  });

  it('a version that is not on disk answers 404 naming the current one, never cached', async () => {
    const r = await request(`${server.url}/v/20200101T000000Z-000000${tilePath(monacoTiles()[0])}`, { headers: AUTH });
    expect(r.status).toBe(404);
    expect(r.headers['cache-control']).toBe('no-store');
    expect(r.json()).toEqual({
      status: 404,
      error: `build version 20200101T000000Z-000000 is not on this server (pruned, or never built); the current version is ${server.version.id}`,
      current: server.version.id,
    });
    expect((await request(`${server.url}/v/..%2f..${tilePath(monacoTiles()[0])}`, { headers: AUTH })).status).toBe(404);
  });
});
