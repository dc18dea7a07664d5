// Rendered styles over real HTTP: raster tiles, style.json, raster TileJSON, sprites and fonts,
// from a real output folder (real PNG/JPEG tiles in PMTiles archives, the sample's sprites and glyphs).
import { randomBytes } from 'node:crypto';
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { validateStyleMin, type StyleSpecification } from '@maplibre/maplibre-gl-style-spec';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashToken } from '../static-server/auth.ts';
import type { ServeOptions } from '../static-server/context.ts';
import { startServer, type RunningServer } from '../static-server/serve.ts';
import { decodeGlyphs, type Glyph } from '../lib/glyphs/glyph-pbf.ts';
import { request, startNginx, type Nginx, type RawResponse, DEFAULT_CACHE_CONTROL, serveOptions } from './fixtures/server/helpers.ts';
import {
  buildStyleOutput,
  FIXTURE_MAXZOOM,
  fixtureTiles,
  neutralStyle,
  OSM_BRIGHT_DIR,
  SAMPLE_FONTS_DIR,
  STYLE_ID,
  type StyleOutput,
} from './fixtures/styles/output.ts';

const TOKEN = randomBytes(18).toString('base64url');
const AUTH = { authorization: `Bearer ${TOKEN}` };
const PUBLIC_URL = 'https://maps.example.org/tiles';

let fixture: StyleOutput;
let server: RunningServer;
let publicServer: RunningServer;

function options(extra: Partial<ServeOptions> = {}): ServeOptions {
  return serveOptions(fixture.out, extra);
}

function get(path: string, headers: Record<string, string> = {}, base = server.url): Promise<RawResponse> {
  return request(`${base}${path}`, { headers: { ...AUTH, ...headers } });
}

function expectJsonError(r: RawResponse, status: number): { error: string; status: number; [k: string]: unknown } {
  expect(r.status).toBe(status);
  expect(r.headers['content-type']).toMatch(/^application\/json/);
  const body = r.json();
  expect(body.status).toBe(status);
  expect(typeof body.error).toBe('string');
  return body;
}

function fontFile(font: string, range: string): Promise<Buffer> {
  return readFile(join(SAMPLE_FONTS_DIR, font, `${range}.pbf`));
}

function glyphMap(bytes: Uint8Array): Map<number, Glyph> {
  const stacks = decodeGlyphs(bytes);
  expect(stacks).toHaveLength(1);
  return new Map(stacks[0].glyphs.map((g) => [g.id, g]));
}

beforeAll(async () => {
  fixture = await buildStyleOutput();
  server = await startServer(options(), { tokenHashes: [hashToken(TOKEN)] });
  publicServer = await startServer(options({ publicUrl: `${PUBLIC_URL}/` }), { tokenHashes: [hashToken(TOKEN)] });
}, 60_000);

afterAll(async () => {
  await server?.close();
  await publicServer?.close();
  if (fixture) await rm(fixture.out, { recursive: true, force: true });
});

describe('raster tiles', () => {
  const cases = [
    { key: '1x.png', suffix: '.png', type: 'image/png', format: 'png', px: 256 },
    { key: '2x.png', suffix: '@2x.png', type: 'image/png', format: 'png', px: 512 },
    { key: '1x.jpg', suffix: '.jpg', type: 'image/jpeg', format: 'jpeg', px: 256 },
  ] as const;

  for (const c of cases) {
    it(`serves every stored ${c.key} tile bit-exact as ${c.type} with cache and CORS headers`, async () => {
      const tiles = fixtureTiles();
      expect(tiles.length).toBeGreaterThan(FIXTURE_MAXZOOM);
      for (const t of tiles) {
        const path = `/styles/${STYLE_ID}/${t.z}/${t.x}/${t.y}${c.suffix}`;
        const r = await get(path, { 'accept-encoding': 'gzip' });
        expect(r.status, path).toBe(200);
        expect(r.headers['content-type']).toBe(c.type);
        expect(r.headers['content-encoding']).toBeUndefined();
        expect(r.headers['cache-control']).toBe(DEFAULT_CACHE_CONTROL);
        expect(r.headers['access-control-allow-origin']).toBe('*');
        expect(r.headers.etag).toMatch(/^"[^"]+"$/);
        expect(r.body.equals(fixture.tiles.get(`${c.key}/${t.z}/${t.x}/${t.y}`)!), path).toBe(true);
        const meta = await sharp(r.body).metadata();
        expect([meta.format, meta.width, meta.height]).toEqual([c.format, c.px, c.px]);
      }
    });
  }

  it('answers If-None-Match with 304 and distinct tiles have distinct ETags', async () => {
    const [a, b] = fixtureTiles().slice(-2);
    const ra = await get(`/styles/${STYLE_ID}/${a.z}/${a.x}/${a.y}.png`);
    const rb = await get(`/styles/${STYLE_ID}/${b.z}/${b.x}/${b.y}.png`);
    expect(ra.headers.etag).not.toBe(rb.headers.etag);
    const r304 = await get(`/styles/${STYLE_ID}/${a.z}/${a.x}/${a.y}.png`, { 'if-none-match': String(ra.headers.etag) });
    expect(r304.status).toBe(304);
    expect(r304.body.length).toBe(0);
    expect(r304.headers.etag).toBe(ra.headers.etag);
    const stale = await get(`/styles/${STYLE_ID}/${a.z}/${a.x}/${a.y}.png`, { 'if-none-match': String(rb.headers.etag) });
    expect(stale.status).toBe(200);
  });

  it('answers 204 for a valid coordinate without a tile', async () => {
    const r = await get(`/styles/${STYLE_ID}/2/0/0.png`);
    expect(r.status).toBe(204);
    expect(r.body.length).toBe(0);
  });

  it('answers 404 for an unknown style, listing the styles', async () => {
    const body = expectJsonError(await get('/styles/nope/0/0/0.png'), 404);
    expect(body.error).toContain('"nope"');
    expect(body.styles).toEqual([STYLE_ID]);
  });

  it('answers 400 for bad coordinates', async () => {
    for (const p of ['3/8/0.png', '3/0/8.png', 'a/0/0.png', '1/-1/0.png', '1/0/1.5.png', '1/0/x@2x.png']) {
      const body = expectJsonError(await get(`/styles/${STYLE_ID}/${p}`), 400);
      expect(body.error, p).toMatch(/invalid tile coordinate/);
    }
  });

  it('answers 404 naming the served zoom range for a zoom outside it (above the baked zooms: upscaled up to 20)', async () => {
    const body = expectJsonError(await get(`/styles/${STYLE_ID}/21/0/0.png`), 404);
    expect(body.error).toContain('0-20');
    // Above the baked maxzoom but outside the build's tiles: no tile, as below it.
    expect((await get(`/styles/${STYLE_ID}/${FIXTURE_MAXZOOM + 1}/0/0.png`)).status).toBe(204);
  });

  it('answers 404 naming what was built for a format or scale not built', async () => {
    for (const p of ['0/0/0@2x.jpg', '0/0/0.webp', '0/0/0@2x.webp']) {
      const body = expectJsonError(await get(`/styles/${STYLE_ID}/${p}`), 404);
      expect(body.error, p).toContain('built: 1x.jpg, 1x.png, 2x.png');
      expect(body.built).toEqual(['1x.jpg', '1x.png', '2x.png']);
    }
  });
});

describe('style.json', () => {
  it('serves the prepared style with absolute URLs on this server', async () => {
    const r = await get(`/styles/${STYLE_ID}/style.json`);
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toMatch(/^application\/json/);
    expect(r.headers['access-control-allow-origin']).toBe('*');
    expect(r.body.toString()).not.toContain('tilebake://');
    const style = r.json() as StyleSpecification;
    expect((style.sources.openmaptiles as { url: string }).url).toBe(`${server.url}/data/openmaptiles.json`);
    expect(style.sprite).toBe(`${server.url}/styles/${STYLE_ID}/sprite`);
    expect(style.glyphs).toBe(`${server.url}/fonts/{fontstack}/{range}.pbf`);
    const neutral = await neutralStyle();
    expect(style.layers).toEqual(neutral.layers);
    expect(validateStyleMin(style)).toEqual([]);
    const r304 = await get(`/styles/${STYLE_ID}/style.json`, { 'if-none-match': String(r.headers.etag) });
    expect(r304.status).toBe(304);
  });

  it('uses --public-url when set', async () => {
    const r = await get(`/styles/${STYLE_ID}/style.json`, {}, publicServer.url);
    expect(r.status).toBe(200);
    const style = r.json() as StyleSpecification;
    expect((style.sources.openmaptiles as { url: string }).url).toBe(`${PUBLIC_URL}/data/openmaptiles.json`);
    expect(style.sprite).toBe(`${PUBLIC_URL}/styles/${STYLE_ID}/sprite`);
    expect(style.glyphs).toBe(`${PUBLIC_URL}/fonts/{fontstack}/{range}.pbf`);
  });

  it('answers 404 for an unknown style', async () => {
    expectJsonError(await get('/styles/nope/style.json'), 404);
  });

  it('?projection=globe sets MapLibre\'s globe (a valid style), the rest unchanged; mercator overrides; a bad value is a 400', async () => {
    const plain = (await get(`/styles/${STYLE_ID}/style.json`)).json() as StyleSpecification;
    const r = await get(`/styles/${STYLE_ID}/style.json?projection=globe`);
    expect(r.status).toBe(200);
    const globe = r.json() as StyleSpecification;
    expect(globe.projection).toEqual({ type: 'globe' });
    expect(validateStyleMin(globe)).toEqual([]);
    expect({ ...globe, projection: undefined }).toEqual({ ...plain, projection: undefined });
    expect(plain.projection).toBeUndefined();
    // The alias answers the same.
    expect((await get(`/styles/${STYLE_ID}.json?projection=globe`)).body.equals(r.body)).toBe(true);
    expect(((await get(`/styles/${STYLE_ID}/style.json?projection=mercator`)).json() as StyleSpecification).projection).toEqual({ type: 'mercator' });
    expect(expectJsonError(await get(`/styles/${STYLE_ID}/style.json?projection=albers`), 400).error).toBe('projection: "albers" is not one of globe, mercator');
    expect(expectJsonError(await get(`/styles/${STYLE_ID}/style.json?projection=globe&projection=globe`), 400).error).toBe('projection: given 2 times');
  });
});

describe('raster TileJSON', () => {
  it('describes the rendered style with absolute tile URLs and the @2x variant', async () => {
    const r = await get(`/styles/${STYLE_ID}/rendered.json`);
    expect(r.status).toBe(200);
    const tj = r.json();
    const e = fixture.entry;
    expect(tj.tilejson).toBe('3.0.0');
    expect(tj.tiles).toEqual([`${server.url}/styles/${STYLE_ID}/{z}/{x}/{y}.png`]);
    expect(tj.tiles_2x).toEqual([`${server.url}/styles/${STYLE_ID}/{z}/{x}/{y}@2x.png`]);
    expect(tj.description).toContain('@2x');
    expect([tj.minzoom, tj.maxzoom, tj.bounds, tj.center, tj.attribution, tj.tileSize, tj.format]).toEqual([
      e.minzoom,
      e.maxzoom,
      e.bounds,
      e.center,
      e.attribution,
      256,
      'png',
    ]);
    // The advertised URLs work.
    const t = fixtureTiles().at(-1)!;
    for (const [tpl, px] of [[tj.tiles[0], 256], [tj.tiles_2x[0], 512]] as const) {
      const url = tpl.replace('{z}', String(t.z)).replace('{x}', String(t.x)).replace('{y}', String(t.y));
      const tile = await request(url, { headers: AUTH });
      expect(tile.status).toBe(200);
      expect((await sharp(tile.body).metadata()).width).toBe(px);
    }
  });

  it('uses --public-url when set and 404s an unknown style', async () => {
    const tj = (await get(`/styles/${STYLE_ID}/rendered.json`, {}, publicServer.url)).json();
    expect(tj.tiles).toEqual([`${PUBLIC_URL}/styles/${STYLE_ID}/{z}/{x}/{y}.png`]);
    expectJsonError(await get('/styles/nope/rendered.json'), 404);
  });
});

describe('sprites', () => {
  for (const name of ['sprite.json', 'sprite.png', 'sprite@2x.json', 'sprite@2x.png']) {
    it(`serves ${name} as stored`, async () => {
      const r = await get(`/styles/${STYLE_ID}/${name}`);
      expect(r.status).toBe(200);
      expect(r.headers['content-type']).toMatch(name.endsWith('.png') ? /^image\/png$/ : /^application\/json/);
      expect(r.headers['cache-control']).toBe(DEFAULT_CACHE_CONTROL);
      expect(r.body.equals(await readFile(join(OSM_BRIGHT_DIR, name)))).toBe(true);
      if (name.endsWith('.json')) expect(Object.keys(r.json()).length).toBeGreaterThan(10);
      const r304 = await get(`/styles/${STYLE_ID}/${name}`, { 'if-none-match': String(r.headers.etag) });
      expect(r304.status).toBe(304);
    });
  }

  it('answers 404 for other sprite names and unknown styles', async () => {
    expectJsonError(await get(`/styles/${STYLE_ID}/sprite@3x.png`), 404);
    expectJsonError(await get(`/styles/${STYLE_ID}/sprite.svg`), 404);
    expectJsonError(await get('/styles/nope/sprite.json'), 404);
  });
});

describe('fonts', () => {
  it('serves a single font stack as stored', async () => {
    const r = await get('/fonts/Noto%20Sans%20Regular/0-255.pbf');
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toBe('application/x-protobuf');
    expect(r.headers['cache-control']).toBe(DEFAULT_CACHE_CONTROL);
    expect(r.body.equals(await fontFile('Noto Sans Regular', '0-255'))).toBe(true);
    const r304 = await get('/fonts/Noto%20Sans%20Regular/0-255.pbf', { 'if-none-match': String(r.headers.etag) });
    expect(r304.status).toBe(304);
  });

  it('combines a comma-separated stack: each codepoint from the first font that has it', async () => {
    for (const range of ['0-255', '768-1023']) {
      const metro = glyphMap(await fontFile('Metropolis Regular', range));
      const noto = glyphMap(await fontFile('Noto Sans Regular', range));
      const onlyNoto = [...noto.keys()].filter((id) => !metro.has(id));
      expect(onlyNoto.length, `${range}: Noto has glyphs Metropolis lacks`).toBeGreaterThan(0);
      const r = await get(`/fonts/${encodeURIComponent('Metropolis Regular,Noto Sans Regular')}/${range}.pbf`);
      expect(r.status).toBe(200);
      const stacks = decodeGlyphs(r.body);
      expect(stacks.map((s) => [s.name, s.range])).toEqual([['Metropolis Regular,Noto Sans Regular', range]]);
      const got = glyphMap(r.body);
      expect(new Set(got.keys())).toEqual(new Set([...metro.keys(), ...noto.keys()]));
      for (const [id, g] of got) {
        expect(g, `${range} glyph ${id}`).toEqual(metro.get(id) ?? noto.get(id));
        if (g.bitmap) expect(g.bitmap.length).toBe((g.width + 6) * (g.height + 6));
      }
      // The other order takes the shared codepoints from Noto.
      const rev = glyphMap((await get(`/fonts/${encodeURIComponent('Noto Sans Regular,Metropolis Regular')}/${range}.pbf`)).body);
      for (const [id, g] of rev) expect(g).toEqual(noto.get(id) ?? metro.get(id));
      const shared = [...metro.keys()].find((id) => noto.has(id) && metro.get(id)!.advance !== noto.get(id)!.advance);
      if (shared !== undefined) expect(rev.get(shared)).not.toEqual(got.get(shared));
    }
  });

  it('skips fonts of a stack that are not in the build', async () => {
    const r = await get(`/fonts/${encodeURIComponent('No Such Font,Noto Sans Bold')}/0-255.pbf`);
    expect(r.status).toBe(200);
    const want = glyphMap(await fontFile('Noto Sans Bold', '0-255'));
    expect(glyphMap(r.body)).toEqual(want);
  });

  it('answers an empty glyph set for existing fonts without that range', async () => {
    // The Private Use Area: no font of the generated Noto Sans stack has it.
    const r = await get('/fonts/Noto%20Sans%20Regular/57344-57599.pbf');
    expect(r.status).toBe(200);
    expect(decodeGlyphs(r.body)).toEqual([{ name: 'Noto Sans Regular', range: '57344-57599', glyphs: [] }]);
  });

  it('answers 404 for a stack with none of its fonts', async () => {
    const body = expectJsonError(await get(`/fonts/${encodeURIComponent('No Such Font,Nor This')}/0-255.pbf`), 404);
    expect(body.error).toContain('No Such Font');
  });

  it('answers 400 for a range that is not 256-aligned and for path tricks', async () => {
    for (const range of ['0-100', '1-256', '256-255', '256-767', 'a-b', '65536-65791']) {
      const body = expectJsonError(await get(`/fonts/Noto%20Sans%20Regular/${range}.pbf`), 400);
      expect(body.error, range).toContain(range);
    }
    expectJsonError(await get(`/fonts/${encodeURIComponent('../styles')}/0-255.pbf`), 400);
    expectJsonError(await get(`/fonts/${encodeURIComponent('Noto Sans Regular,')}/0-255.pbf`), 400);
  });
});

describe('build folder on object storage (nginx, HTTP Range)', () => {
  let nginx: Nginx;
  let remote: RunningServer;
  beforeAll(async () => {
    nginx = await startNginx(fixture.out);
    remote = await startServer(options({ out: nginx.url }), { tokenHashes: [hashToken(TOKEN)] });
  });
  afterAll(async () => {
    await remote?.close();
    await nginx?.stop();
  });

  it('serves tiles, style.json, sprites and combined glyphs read over HTTP', async () => {
    const t = fixtureTiles().at(-1)!;
    const tile = await get(`/styles/${STYLE_ID}/${t.z}/${t.x}/${t.y}@2x.png`, {}, remote.url);
    expect(tile.status).toBe(200);
    expect(tile.body.equals(fixture.tiles.get(`2x.png/${t.z}/${t.x}/${t.y}`)!)).toBe(true);
    expect((await get(`/styles/${STYLE_ID}/2/0/0.png`, {}, remote.url)).status).toBe(204);
    const style = (await get(`/styles/${STYLE_ID}/style.json`, {}, remote.url)).json() as StyleSpecification;
    expect(style.glyphs).toBe(`${remote.url}/fonts/{fontstack}/{range}.pbf`);
    const sprite = await get(`/styles/${STYLE_ID}/sprite@2x.png`, {}, remote.url);
    expect(sprite.body.equals(await readFile(join(OSM_BRIGHT_DIR, 'sprite@2x.png')))).toBe(true);
    const stack = encodeURIComponent('Metropolis Regular,Noto Sans Regular');
    const local = await get(`/fonts/${stack}/768-1023.pbf`);
    const viaHttp = await get(`/fonts/${stack}/768-1023.pbf`, {}, remote.url);
    expect(viaHttp.status).toBe(200);
    expect(viaHttp.body.equals(local.body)).toBe(true);
    expectJsonError(await get(`/fonts/${encodeURIComponent('No Such Font')}/0-255.pbf`, {}, remote.url), 404);
    expect(await nginx.accessLog()).toMatch(/^206 "bytes=/m);
  });
});

describe('methods', () => {
  it('answers HEAD like GET without a body and other methods with 405', async () => {
    const head = await request(`${server.url}/styles/${STYLE_ID}/0/0/0.png`, { method: 'HEAD', headers: AUTH });
    expect(head.status).toBe(200);
    expect(head.headers['content-type']).toBe('image/png');
    expect(head.body.length).toBe(0);
    for (const p of [`/styles/${STYLE_ID}/0/0/0.png`, `/styles/${STYLE_ID}/style.json`, '/fonts/Noto%20Sans%20Regular/0-255.pbf']) {
      const r = await request(`${server.url}${p}`, { method: 'POST', headers: AUTH, body: '' });
      expectJsonError(r, 405);
      expect(r.headers.allow).toContain('GET');
    }
  });
});

describe('auth', () => {
  const paths = [
    `/styles/${STYLE_ID}/0/0/0.png`,
    `/styles/${STYLE_ID}/0/0/0@2x.png`,
    `/styles/${STYLE_ID}/0/0/0.jpg`,
    `/styles/${STYLE_ID}/style.json`,
    `/styles/${STYLE_ID}.json`,
    `/styles/${STYLE_ID}/rendered.json`,
    `/styles/${STYLE_ID}/sprite.json`,
    `/styles/${STYLE_ID}/sprite@2x.png`,
    '/fonts/Noto%20Sans%20Regular/0-255.pbf',
    `/fonts/${encodeURIComponent('Metropolis Regular,Noto Sans Regular')}/0-255.pbf`,
  ];

  it('requires a valid bearer token on every style route', async () => {
    for (const p of paths) {
      expect((await get(p)).status, p).toBe(200);
      const missing = await request(`${server.url}${p}`);
      expectJsonError(missing, 401);
      expect(missing.headers['www-authenticate']).toMatch(/^Bearer realm="tilebake"/);
      const wrong = await request(`${server.url}${p}`, { headers: { authorization: 'Bearer not-the-token' } });
      expectJsonError(wrong, 401);
      expect(wrong.headers['www-authenticate']).toContain('invalid_token');
      expect(wrong.body.toString()).not.toContain(TOKEN);
    }
  });
});
