// Real client: the served style.json (and the raster TileJSON) load in MapLibre GL JS in headless
// Chromium against a running server over a real build of the sample, and render without errors. The
// build bakes the dark style (dark-matter) as PNG and lossy WebP: both are served, listed in rendered.json,
// WMTS and the preview's catalog, and the WebP tiles (baked, upscaled, static images) are the PNG's pixels
// within lossy tolerance.
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashToken } from '../static-server/auth.ts';
import { startServer, type RunningServer } from '../static-server/serve.ts';
import { request } from './fixtures/server/http.ts';
import { openClient, runMap, type Client, type MapRun } from './fixtures/styles/client.ts';
import { ROOT } from './fixtures/styles/output.ts';
import { cliOk } from './fixtures/cli.ts';

const TOKEN = randomBytes(18).toString('base64url');
const SAMPLE = join(ROOT, 'data/sample');
/** Monaco harbour: land, sea, roads, buildings and labels in view. */
const MONACO: [number, number] = [7.4215, 43.7365];
/** Zoom the vector styles are shown at (the sample's vector tiles go to 14). */
const VECTOR_ZOOM = 14;
/** Rendered zoom range of the test build (kept small: the render stage has its own tests). */
const RENDER_MAXZOOM = 12;
/** Time a map may take to become idle in software WebGL. */
const IDLE_TIMEOUT_MS = 90_000;
/** A non-blank 512 px map of a city shows at least this many distinct colours. */
const MIN_DISTINCT_COLOURS = 16;
/** Mean luminance (0-255) below which a map is dark, and above which it is light. */
const DARK_BELOW = 60;
const LIGHT_ABOVE = 150;
/** Mean absolute difference per channel between a lossy WebP tile and its PNG, at most. */
const WEBP_MEAN_DIFF = 2;
/** dark-matter is baked from this zoom only (the tests read z8 and z12; each zoom is a render). */
const DARK_MINZOOM = 8;
/** The z12 tile over Monaco harbour (MONACO). */
const Z12_TILE = { z: 12, x: 2132, y: 1493 };

let out: string;
let server: RunningServer;
let client: Client;
/** Status of every response from the tile server the page received. */
const responses: { url: string; status: number }[] = [];

/** A build config over the sample with absolute paths and a small render. */
async function writeConfig(dir: string): Promise<string> {
  const sample = JSON.parse(await readFile(join(SAMPLE, 'config.json'), 'utf8'));
  const style = (id: string, scales: number[], formats: string[], minzoom = 0) => ({
    style: join(SAMPLE, sample.styles[id].style),
    tileset: 'openmaptiles',
    minzoom,
    maxzoom: RENDER_MAXZOOM,
    scales,
    formats,
  });
  const config = {
    out: join(dir, 'out'),
    attribution: sample.attribution,
    // Without the sample's search index (its extract stays in the sample folder; no test here searches).
    tilesets: { openmaptiles: { ...sample.tilesets.openmaptiles, source: join(SAMPLE, sample.tilesets.openmaptiles.source), search: false } },
    styles: { 'osm-bright': style('osm-bright', [1, 2], ['png']), positron: style('positron', [1], ['jpg']), 'dark-matter': style('dark-matter', [1], ['png', 'webp'], DARK_MINZOOM) },
    fonts: join(SAMPLE, sample.fonts),
    render: sample.render,
  };
  const file = join(dir, 'config.json');
  await writeFile(file, JSON.stringify(config, null, 2));
  return file;
}

/** The image of a PNG data URL. */
const dataUrlImage = (dataUrl: string) => Buffer.from(dataUrl.slice(dataUrl.indexOf(',') + 1), 'base64');

/** Distinct RGBA colours of a PNG data URL. */
async function distinctColours(dataUrl: string): Promise<number> {
  const { data, info } = await sharp(dataUrlImage(dataUrl)).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  const seen = new Set<number>();
  for (let i = 0; i < data.length; i += info.channels) seen.add(data.readUInt32LE(i));
  return seen.size;
}

/** Mean luminance (Rec. 601, 0-255) of an encoded image. */
async function meanLuminance(image: Buffer): Promise<number> {
  const { channels } = await sharp(image).removeAlpha().stats();
  return 0.299 * channels[0].mean + 0.587 * channels[1].mean + 0.114 * channels[2].mean;
}

/** GET a path of the server with the token. */
const get = (path: string) => request(`${server.url}${path}`, { headers: { authorization: `Bearer ${TOKEN}` } });

function expectClean(run: MapRun): void {
  expect(run.errors).toEqual([]);
  expect(run.idle).toBe(true);
  expect(client.consoleErrors).toEqual([]);
  const bad = responses.filter((r) => r.status !== 200 && r.status !== 204);
  expect(bad).toEqual([]);
}

beforeAll(async () => {
  const dir = await mkdtemp(join(tmpdir(), 'tilebake-client-'));
  out = join(dir, 'out');
  const config = await writeConfig(dir);
  await cliOk(['build', '--config', config], { quiet: false, env: { CI: '1' } });
  server = await startServer(
    { out, port: 0, host: '127.0.0.1', auth: true, cacheControl: 'public, max-age=86400', cors: '*', cacheMb: 64, logLevel: 'warn' },
    { tokenHashes: [hashToken(TOKEN)] },
  );
  client = await openClient();
  client.page.on('response', (r) => {
    if (r.url().startsWith(server.url) && r.request().method() !== 'OPTIONS') responses.push({ url: r.url(), status: r.status() });
  });
}, 900_000);

afterAll(async () => {
  await client?.close();
  await server?.close();
  if (out) await rm(join(out, '..'), { recursive: true, force: true });
});

describe('MapLibre GL JS against the server', () => {
  // dark-matter is positron's layers in other colours (the build drew it with MapLibre): not loaded again here.
  for (const id of ['osm-bright', 'positron']) {
    it(`loads /styles/${id}/style.json and renders it without errors`, async () => {
      responses.length = 0;
      const run = await runMap(client, {
        style: `${server.url}/styles/${id}/style.json`,
        server: server.url,
        token: TOKEN,
        center: MONACO,
        zoom: VECTOR_ZOOM,
        timeoutMs: IDLE_TIMEOUT_MS,
      });
      expectClean(run);
      const paths = responses.filter((r) => r.status === 200).map((r) => new URL(r.url).pathname);
      expect(paths).toContain(`/styles/${id}/style.json`);
      expect(paths).toContain('/data/openmaptiles.json');
      expect(paths.some((p) => /^\/data\/openmaptiles\/14\/\d+\/\d+\.pbf$/.test(p))).toBe(true);
      expect(paths.some((p) => p.startsWith(`/styles/${id}/sprite`))).toBe(true);
      const glyphs = paths.filter((p) => p.startsWith('/fonts/')).map(decodeURIComponent);
      expect(glyphs.length).toBeGreaterThan(0);
      // positron's stacks fall back from Metropolis to Noto Sans: served combined.
      if (id === 'positron') expect(glyphs.some((p) => p.includes('Metropolis') && p.includes(',Noto Sans'))).toBe(true);
      expect(await distinctColours(run.image)).toBeGreaterThanOrEqual(MIN_DISTINCT_COLOURS);
      expect(await meanLuminance(dataUrlImage(run.image))).toBeGreaterThan(LIGHT_ABOVE);
    }, IDLE_TIMEOUT_MS + 30_000);
  }

  it('shows the rendered raster tiles through the raster TileJSON, and the WebP tiles of dark-matter', async () => {
    const sources = [
      { url: `${server.url}/styles/osm-bright/rendered.json`, tile: /\/styles\/osm-bright\/\d+\/\d+\/\d+\.png$/ },
      { tiles: [`${server.url}/styles/dark-matter/{z}/{x}/{y}.webp`], tile: /\/styles\/dark-matter\/\d+\/\d+\/\d+\.webp$/ },
    ];
    for (const { tile, ...source } of sources) {
      responses.length = 0;
      const style = { version: 8, sources: { raster: { type: 'raster', tileSize: 256, ...source } }, layers: [{ id: 'raster', type: 'raster', source: 'raster' }] };
      const run = await runMap(client, { style, server: server.url, token: TOKEN, center: MONACO, zoom: RENDER_MAXZOOM, timeoutMs: IDLE_TIMEOUT_MS });
      expectClean(run);
      expect(responses.filter((r) => r.status === 200 && tile.test(r.url)).length, String(tile)).toBeGreaterThan(0);
      expect(await distinctColours(run.image)).toBeGreaterThanOrEqual(MIN_DISTINCT_COLOURS);
    }
  }, 2 * IDLE_TIMEOUT_MS + 30_000);
});

describe('dark-matter and WebP tiles', () => {
  const { z, x, y } = Z12_TILE;
  /** Decoded RGB of an encoded image. */
  const pixels = (bytes: Buffer) => sharp(bytes).removeAlpha().raw().toBuffer({ resolveWithObject: true });

  it('serves baked WebP tiles as image/webp: the PNG tile\'s pixels within lossy tolerance, smaller, and dark', async () => {
    for (const t of [{ z: 8, x: 133, y: 93 }, Z12_TILE]) {
      const [png, webp] = await Promise.all(['png', 'webp'].map((f) => get(`/styles/dark-matter/${t.z}/${t.x}/${t.y}.${f}`)));
      expect([png.status, webp.status]).toEqual([200, 200]);
      expect(webp.headers['content-type']).toBe('image/webp');
      expect((await sharp(webp.body).metadata()).format).toBe('webp');
      const [a, b] = await Promise.all([pixels(png.body), pixels(webp.body)]);
      expect(b.info).toMatchObject({ format: 'raw', width: 256, height: 256 });
      let sum = 0;
      for (let i = 0; i < a.data.length; i++) sum += Math.abs(a.data[i] - b.data[i]);
      expect(sum / a.data.length, `${t.z}/${t.x}/${t.y}`).toBeLessThan(WEBP_MEAN_DIFF);
      expect(webp.body.length).toBeLessThan(png.body.length);
      expect(await meanLuminance(png.body)).toBeLessThan(DARK_BELOW);
    }
  });

  it('upscales WebP tiles above the baked zoom and composes static images as .webp', async () => {
    const up = await get(`/styles/dark-matter/${z + 1}/${2 * x}/${2 * y}.webp`);
    expect(up.status).toBe(200);
    expect(up.headers['content-type']).toBe('image/webp');
    expect(up.headers['x-tilebake-source-zoom']).toBe(String(z));
    expect((await sharp(up.body).metadata()).format).toBe('webp');
    expect((await pixels(up.body)).info).toMatchObject({ width: 256, height: 256 });
    for (const [size, w, h] of [['300x200.webp', 300, 200], ['300x200@2x.webp', 600, 400]] as const) {
      const img = await get(`/styles/dark-matter/static/${MONACO.join(',')},${z}/${size}`);
      expect(img.status, size).toBe(200);
      expect(img.headers['content-type']).toBe('image/webp');
      expect((await sharp(img.body).metadata()).format).toBe('webp');
      expect((await pixels(img.body)).info).toMatchObject({ width: w, height: h });
      expect(await meanLuminance(img.body)).toBeLessThan(DARK_BELOW);
    }
  });

  it('lists WebP and the dark style in rendered.json, WMTS and the preview\'s catalog', async () => {
    const tj = (await get('/styles/dark-matter/rendered.json')).json() as Record<string, unknown>;
    expect(tj.built).toEqual(['1x.png', '1x.webp']);
    expect(tj.tiles).toEqual([`${server.url}/styles/dark-matter/{z}/{x}/{y}.png`]);
    expect(tj.description).toContain('1x.webp');
    const wmts = (await get('/styles/wmts.xml')).body.toString();
    const layer = wmts.split('<Layer>').find((l) => l.includes('<ows:Identifier>dark-matter</ows:Identifier>'));
    expect(layer).toBeDefined();
    expect(layer).toContain('<Format>image/png</Format>\n    <Format>image/webp</Format>');
    expect(layer).toContain(`<ResourceURL format="image/webp" resourceType="tile" template="${server.url}/styles/dark-matter/{TileMatrix}/{TileCol}/{TileRow}.webp"/>`);
    const catalog = (await get('/catalog.json')).json() as { styles: { id: string; name: string; rasters: string[] }[] };
    expect(catalog.styles.find((st) => st.id === 'dark-matter')).toMatchObject({ name: 'Dark Matter', rasters: ['1x.png', '1x.webp'] });
  });
});
