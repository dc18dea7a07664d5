// The hosted API's other URL forms (static-server/aliases.ts): each alias answers with the same status,
// headers and bytes as tilebake's own route, for good requests and for every kind of error.
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashToken } from '../static-server/auth.ts';
import { startServer, type RunningServer } from '../static-server/serve.ts';
import { buildFullOutput, type FullOutput } from './fixtures/server/full-output.ts';
import { request, serveOptions, type RawResponse } from './fixtures/server/helpers.ts';
import { STYLE_ID } from './fixtures/styles/output.ts';

const TOKEN = randomBytes(18).toString('base64url');
const AUTH = { authorization: `Bearer ${TOKEN}` };

let fixture: FullOutput;
let server: RunningServer;

beforeAll(async () => {
  fixture = await buildFullOutput();
  server = await startServer(serveOptions(fixture.out), { tokenHashes: [hashToken(TOKEN)] });
}, 120_000);

afterAll(async () => {
  await server?.close();
  if (fixture) await rm(fixture.out, { recursive: true, force: true });
});

/** Headers that legitimately differ between two requests. */
const VOLATILE = new Set(['date', 'connection', 'keep-alive']);

function comparable(r: RawResponse): { status: number; headers: Record<string, unknown>; body: string } {
  const headers = Object.fromEntries(Object.entries(r.headers).filter(([k]) => !VOLATILE.has(k)));
  return { status: r.status, headers, body: r.body.toString('base64') };
}

async function same(alias: string, canonical: string, opts: Parameters<typeof request>[1] = {}): Promise<RawResponse> {
  const a = await request(`${server.url}${alias}`, opts);
  const c = await request(`${server.url}${canonical}`, opts);
  expect(comparable(a)).toEqual(comparable(c));
  return a;
}

describe('/tiles/{style}/{z}/{x}/{y}{@2x}.{png|jpg}', () => {
  it('answers the same tiles with the same headers as /styles/…', async () => {
    const tile = fixture.style.tiles.keys().next().value!.split('/').slice(1).join('/');
    for (const suffix of ['.png', '@2x.png', '.jpg']) {
      const r = await same(`/tiles/${STYLE_ID}/${tile}${suffix}`, `/styles/${STYLE_ID}/${tile}${suffix}`, { headers: AUTH });
      expect(r.status).toBe(200);
      expect(r.body.length).toBeGreaterThan(100);
    }
    const withEtag = await request(`${server.url}/tiles/${STYLE_ID}/${tile}.png`, { headers: AUTH });
    await same(`/tiles/${STYLE_ID}/${tile}.png?v=1`, `/styles/${STYLE_ID}/${tile}.png?v=1`, {
      headers: { ...AUTH, 'if-none-match': String(withEtag.headers.etag) },
    });
  });

  it('gives the same errors: 401, 400, 404 (zoom, style, scale/format), 405, 204 outside the data', async () => {
    const cases: [string, Record<string, string>, number][] = [
      [`/${STYLE_ID}/8/133/93.png`, {}, 401],
      [`/${STYLE_ID}/8/133/-1.png`, AUTH, 400],
      [`/${STYLE_ID}/21/266/186.png`, AUTH, 404],
      [`/${STYLE_ID}/9/266/186.png`, AUTH, 200],
      [`/nope/1/0/0.png`, AUTH, 404],
      [`/${STYLE_ID}/1/0/0@2x.jpg`, AUTH, 404],
      [`/${STYLE_ID}/1/0/0.webp`, AUTH, 404],
      [`/${STYLE_ID}/8/0/0.png`, AUTH, 204],
    ];
    for (const [path, headers, status] of cases) {
      const r = await same(`/tiles${path}`, `/styles${path}`, { headers });
      expect(r.status, path).toBe(status);
    }
    const put = await same(`/tiles/${STYLE_ID}/1/0/0.png`, `/styles/${STYLE_ID}/1/0/0.png`, { method: 'PUT', headers: AUTH });
    expect(put.status).toBe(405);
  });
});

describe('/styles/{style}.json', () => {
  it('is the style of /styles/{style}/style.json, errors included', async () => {
    const r = await same(`/styles/${STYLE_ID}.json`, `/styles/${STYLE_ID}/style.json`, { headers: AUTH });
    expect(r.status).toBe(200);
    expect(r.json()).toMatchObject({ version: 8, layers: expect.any(Array) });
    expect((await same('/styles/nope.json', '/styles/nope/style.json', { headers: AUTH })).status).toBe(404);
    expect((await same(`/styles/${STYLE_ID}.json`, `/styles/${STYLE_ID}/style.json`)).status).toBe(401);
  });

  it('the raster TileJSON is /styles/{style}/rendered.json', async () => {
    const r = await request(`${server.url}/styles/${STYLE_ID}/rendered.json`, { headers: AUTH });
    expect(r.status).toBe(200);
    expect(r.json().tiles[0]).toContain(`/styles/${STYLE_ID}/{z}/{x}/{y}.png`);
  });
});

describe('POST /elevation/v1', () => {
  const json = { 'content-type': 'application/json' };
  it('answers like POST /height', async () => {
    const body = JSON.stringify({ shape: [{ lat: 43.73, lon: 7.42 }, { lat: 43.74, lon: 7.41 }], range: true });
    const r = await same('/elevation/v1', '/height', { method: 'POST', headers: { ...AUTH, ...json }, body });
    expect(r.status).toBe(200);
    expect(r.json().range_height).toHaveLength(2);
    const q = `?json=${encodeURIComponent(body)}`;
    expect((await same(`/elevation/v1${q}`, `/height${q}`, { headers: AUTH })).status).toBe(200);
  });

  it('gives the same Valhalla-style errors', async () => {
    const bad: [Record<string, string>, string, number][] = [
      [{ ...AUTH, ...json }, '{"shape": [}', 400],
      [{ ...AUTH, ...json }, '{"shape": []}', 400],
      [{ ...AUTH, 'content-type': 'text/plain' }, '{}', 400],
      [json, '{}', 401],
    ];
    for (const [headers, body, status] of bad) {
      const r = await same('/elevation/v1', '/height', { method: 'POST', headers, body });
      expect(r.status, body).toBe(status);
      expect(r.json().status).toBe(status);
    }
    expect((await same('/elevation/v1', '/height', { method: 'DELETE', headers: AUTH })).status).toBe(405);
  });
});
