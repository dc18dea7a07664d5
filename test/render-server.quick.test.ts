// The render page's server: the app of `tilebake serve` in its `render` role, over a real output
// folder (the sample's vector tiles, fonts and sprites). What the page loads must be byte for byte
// what a client of `tilebake serve` gets; the page, maplibre-gl and pixel uploads come on top.
import { readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadManifest } from '../lib/manifest.ts';
import { openStore } from '../lib/storage.ts';
import { lonLatToTile } from '../lib/tile-math.ts';
import { parseConfig } from '../pipeline/config/index.ts';
import { runVectorStage } from '../pipeline/vector/stage.ts';
import { buildApp } from '../static-server/app.ts';
import { archivesOf } from '../static-server/archives.ts';
import type { ServerContext } from '../static-server/context.ts';
import { startRenderHost, type RenderHost } from '../workers/render-host/server.ts';
import { contextOver } from '../static-server/new-context.ts';
import { RENDER_PAGE_PATH, uploadUrl } from '../lib/upload-receipt.ts';
import { decodeGlyphs, type Glyph } from '../lib/glyphs/glyph-pbf.ts';
import { serveOptions } from './fixtures/server/helpers.ts';
import { buildStyleOutput, MONACO_BBOX, ROOT, STYLE_ID, type StyleOutput } from './fixtures/styles/output.ts';

process.env.TILEBAKE_QUIET = '1';
const PAGE_DIR = join(ROOT, 'workers/page');
/** A stack whose first font lacks code points the second has (Metropolis has 87 of Latin Extended-A, Noto all). */
const STACK = 'Metropolis Regular,Noto Sans Regular';
const Z14 = { z: 14, ...lonLatToTile((MONACO_BBOX[0] + MONACO_BBOX[2]) / 2, (MONACO_BBOX[1] + MONACO_BBOX[3]) / 2, 14) };

let fixture: StyleOutput;
let render: RenderHost;
/** A `tilebake serve` app (tiles role) over the same folder, giving its URLs on the render host's base. */
let client: FastifyInstance;
let clientCtx: ServerContext;

beforeAll(async () => {
  fixture = await buildStyleOutput();
  const config = parseConfig({ out: fixture.out, tilesets: { openmaptiles: join(ROOT, 'data/sample/monaco_omt.mbtiles') } }, join(fixture.out, 'config.json'));
  await runVectorStage(config, fixture.out);
  const store = openStore(fixture.out);
  const manifest = await loadManifest(store);
  // A tileset whose archive is not a PMTiles archive: reading it is a corrupt-store error (502).
  await writeFile(join(fixture.out, 'data', 'broken.pmtiles'), Buffer.alloc(1024, 7));
  manifest.tilesets.broken = { ...manifest.tilesets.openmaptiles, archive: 'data/broken.pmtiles' };
  // A style asking for MapLibre's globe: clients get it, the bake does not.
  const style = JSON.parse(await readFile(join(fixture.out, manifest.styles[STYLE_ID].style), 'utf8')) as Record<string, unknown>;
  await writeFile(join(fixture.out, 'styles', STYLE_ID, 'globe.json'), JSON.stringify({ ...style, projection: { type: 'globe' } }));
  manifest.styles.globe = { ...manifest.styles[STYLE_ID], style: `styles/${STYLE_ID}/globe.json` };
  render = await startRenderHost({ store, manifest, pageDir: PAGE_DIR, cacheMb: 16 });
  clientCtx = { ...contextOver(store, manifest, serveOptions(fixture.out, { auth: false })), baseUrl: () => render.url };
  client = await buildApp(clientCtx, { role: 'tiles', tokenHashes: null });
}, 60_000);

afterAll(async () => {
  await render?.close();
  await client?.close();
  if (clientCtx) await archivesOf(clientCtx).close();
  if (fixture) await rm(fixture.out, { recursive: true, force: true });
});

/** A glyph's metrics and bitmap bytes (an empty bitmap and none are the same). */
const plain = (g: Glyph) => ({ ...g, bitmap: Buffer.from(g.bitmap ?? []).toString('base64') });

const get = (path: string) => fetch(`${render.url}${path}`);

describe('the render host serves what clients get', () => {
  const paths = [
    `/styles/${STYLE_ID}/style.json`,
    '/data/openmaptiles.json',
    `/fonts/${encodeURIComponent(STACK)}/0-255.pbf`,
    `/fonts/${encodeURIComponent(STACK)}/256-511.pbf`,
    `/styles/${STYLE_ID}/sprite@2x.png`,
    `/data/openmaptiles/${Z14.z}/${Z14.x}/${Z14.y}.pbf`,
  ];
  for (const path of paths) {
    it(`${decodeURIComponent(path)}: the same bytes as from \`tilebake serve\``, async () => {
      const r = await get(path);
      expect(r.status).toBe(200);
      const served = await client.inject({ url: path });
      expect(served.statusCode).toBe(200);
      expect(Buffer.from(await r.arrayBuffer()).equals(served.rawPayload)).toBe(true);
    });
  }

  it('merges a font stack per code point, as the served style.json gives clients', async () => {
    const font = async (name: string) => decodeGlyphs(await readFile(join(ROOT, `data/sample/fonts/${name}/256-511.pbf`)))[0].glyphs;
    const [metropolis, noto] = await Promise.all([font('Metropolis Regular'), font('Noto Sans Regular')]);
    const merged = new Map(decodeGlyphs(new Uint8Array(await (await get(`/fonts/${encodeURIComponent(STACK)}/256-511.pbf`)).arrayBuffer()))[0].glyphs.map((g) => [g.id, g]));
    // Each code point from the first font that has it: Metropolis's own, then Noto's for the rest.
    const first = new Set(metropolis.map((g) => g.id));
    const fromNoto = noto.filter((g) => !first.has(g.id));
    expect(fromNoto.length).toBeGreaterThan(100);
    expect(merged.size).toBe(first.size + fromNoto.length);
    const same = (g: Glyph) => expect(plain(merged.get(g.id)!)).toEqual(plain(g));
    metropolis.forEach(same);
    fromNoto.forEach(same);
  });

  it('needs no token, listens on 127.0.0.1 only and lets no browser cache what it serves', async () => {
    expect(render.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const r = await get(`/data/openmaptiles/${Z14.z}/${Z14.x}/${Z14.y}.pbf`);
    expect(r.status).toBe(200);
    expect(r.headers.get('cache-control')).toBe('no-store');
    const style = (await (await get(`/styles/${STYLE_ID}/style.json`)).json()) as { sources: Record<string, { url: string }> };
    expect(style.sources.openmaptiles.url).toBe(`${render.url}/data/openmaptiles.json`);
  });
});

describe('the projection', () => {
  it('a style asking for the globe is rendered in Web Mercator (raster tiles are baked on its grid); clients still get its globe', async () => {
    const baked = (await (await get('/styles/globe/style.json')).json()) as Record<string, unknown>;
    const served = JSON.parse((await client.inject({ url: '/styles/globe/style.json' })).body) as Record<string, unknown>;
    expect(baked.projection).toEqual({ type: 'mercator' });
    expect(served.projection).toEqual({ type: 'globe' });
    expect({ ...baked, projection: undefined }).toEqual({ ...served, projection: undefined });
    // A style without a projection is served as it is.
    expect(((await (await get(`/styles/${STYLE_ID}/style.json`)).json()) as Record<string, unknown>).projection).toBeUndefined();
  });
});

describe('the render page and maplibre-gl', () => {
  it('serves the page and the pinned maplibre-gl from node_modules', async () => {
    const page = await get(RENDER_PAGE_PATH);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await page.text()).toContain('render.js');
    const lib = await get('/maplibre/maplibre-gl.mjs');
    expect(lib.status).toBe(200);
    expect(lib.headers.get('content-type')).toMatch(/^text\/javascript/);
    const file = createRequire(import.meta.url).resolve('maplibre-gl/dist/maplibre-gl.mjs');
    expect(Buffer.from(await lib.arrayBuffer()).equals(await readFile(file))).toBe(true);
  });

  it('answers 404 for files outside the page and maplibre-gl folders', async () => {
    for (const path of ['/page/..%2Fchromium.ts', '/page/.hidden', '/maplibre/..%2Fpackage.json', '/maplibre/nope.mjs']) {
      const r = await get(path);
      expect(r.status, path).toBe(404);
      expect(((await r.json()) as { status: number }).status).toBe(404);
    }
  });
});

describe('pixel uploads and failed requests', () => {
  const post = (id: string, body: Uint8Array<ArrayBuffer>, query = '?width=2&height=1') =>
    fetch(`${uploadUrl(render.url, id)}${query}`, { method: 'POST', body, headers: { 'content-type': 'application/octet-stream' } });

  it('keeps an expected upload and answers a receipt; refuses unexpected, repeated and oversized ones', async () => {
    render.session.takeFailures();
    const uploads = render.session.uploads;
    const id = uploads.expect(8);
    const pixels = new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8]);
    const r = await post(id, pixels);
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({ upload: id, bytes: 8, width: 2, height: 1 });
    expect((await post(id, pixels)).status).toBe(404);
    expect((await post('999', pixels)).status).toBe(404);
    const small = uploads.expect(4);
    expect((await post(small, pixels)).status).toBe(413);
    expect((await post(small, pixels.subarray(0, 4), '?width=0&height=1')).status).toBe(400);
    expect(uploads.take(id)).toEqual({ body: Buffer.from(pixels), width: 2, height: 1 });
    expect(uploads.take(small)).toBeUndefined();
    expect(uploads.open).toBe(0);
    // Upload failures are the render task's to report, not missing resources.
    expect(render.session.takeFailures()).toEqual([]);
  });

  it('records every failed request of the page, naming the URL asked for', async () => {
    render.session.takeFailures();
    expect((await get('/fonts/Missing%20Sans/0-255.pbf')).status).toBe(404);
    expect((await get(`/__blocked?url=${encodeURIComponent('https://example.com/a.png')}`)).status).toBe(404);
    expect((await get(`/styles/${STYLE_ID}/style.json`)).status).toBe(200);
    const failed = render.session.takeFailures();
    expect(failed.map((f) => f.url)).toEqual([`${render.url}/fonts/Missing Sans/0-255.pbf`, 'https://example.com/a.png']);
    expect(failed[0]).toMatchObject({ status: 404, error: expect.stringMatching(/Missing Sans/) });
    expect(failed[1].error).toBe('not available locally: https://example.com/a.png');
    expect(render.session.takeFailures()).toEqual([]);
  });

  it('records the cause of a failed read, which its response does not name', async () => {
    render.session.takeFailures();
    const r = await get('/data/broken/0/0/0.pbf');
    expect(r.status).toBe(502);
    const body = ((await r.json()) as { error: string }).error;
    expect(body).not.toContain('broken.pmtiles');
    const [failed] = render.session.takeFailures();
    expect(failed).toMatchObject({ url: `${render.url}/data/broken/0/0/0.pbf`, status: 502 });
    expect(failed.error).not.toBe(body);
    expect(failed.error).toContain('broken.pmtiles');
  });
});
