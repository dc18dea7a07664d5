// WMTS capabilities (static-server/routes/wmts.ts) read by real clients: GDAL's WMTS driver (gdalinfo,
// gdal_translate with the token in GDAL_HTTP_HEADERS) returns the served tiles' pixels, and OpenLayers'
// optionsFromCapabilities in Debian's Chromium draws the layer.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { chromium, type Browser } from 'playwright-core';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { updateManifest } from '../lib/manifest.ts';
import { tileBounds } from '../lib/tile-math.ts';
import { hashToken } from '../static-server/auth.ts';
import { startServer, type RunningServer } from '../static-server/serve.ts';
import { request, serveOptions } from './fixtures/server/helpers.ts';
import { buildStyleOutput, FIXTURE_MAXZOOM, STYLE_ID, type StyleOutput } from './fixtures/styles/output.ts';
import { CHROMIUM_ARGS, CHROMIUM_PATH } from './fixtures/styles/client.ts';

const TOKEN = randomBytes(18).toString('base64url');
const AUTH = { authorization: `Bearer ${TOKEN}` };
/** The z8 tile over Monaco: the test's style covers exactly this tile, so GDAL's window is that tile. */
const TILE = { z: FIXTURE_MAXZOOM, x: 133, y: 93 };
const HALF_WORLD_M = 20037508.342789244;
const run = promisify(execFile);

let fixture: StyleOutput;
let server: RunningServer;
let work: string;
let browser: Browser;

beforeAll(async () => {
  fixture = await buildStyleOutput();
  await updateManifest(fixture.out, (m) => {
    m.styles[STYLE_ID].bounds = tileBounds(TILE.z, TILE.x, TILE.y);
  });
  server = await startServer(serveOptions(fixture.out), { tokenHashes: [hashToken(TOKEN)] });
  work = await mkdtemp(join(tmpdir(), 'tilebake-wmts-'));
  browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS, headless: true });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
  if (fixture) await rm(fixture.out, { recursive: true, force: true });
  if (work) await rm(work, { recursive: true, force: true });
});

/** GDAL with the token sent as a header, no disk cache. */
function gdal(cmd: string, args: string[]): Promise<{ stdout: string }> {
  return run(cmd, args, { env: { ...process.env, GDAL_HTTP_HEADERS: `Authorization: Bearer ${TOKEN}`, GDAL_ENABLE_WMS_CACHE: 'NO' } });
}

/** Raw RGB of a served tile. */
async function servedTile(suffix: string): Promise<{ data: Buffer; width: number }> {
  const r = await request(`${server.url}/styles/${STYLE_ID}/${TILE.z}/${TILE.x}/${TILE.y}${suffix}`, { headers: AUTH });
  expect(r.status).toBe(200);
  const { data, info } = await sharp(r.body).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  return { data, width: info.width };
}

describe('capabilities documents', () => {
  it('lists the layers, formats, matrix sets and ResourceURLs of the build, with auth and cache headers', async () => {
    const r = await request(`${server.url}/styles/${STYLE_ID}/wmts.xml`, { headers: AUTH });
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toBe('application/xml; charset=utf-8');
    expect(r.headers['cache-control']).toBe('private, max-age=300');
    const xml = r.body.toString();
    expect(xml).toContain('<ows:Identifier>osm-bright</ows:Identifier>');
    expect(xml).toContain('<ows:Identifier>osm-bright@2x</ows:Identifier>');
    expect(xml).toContain(`template="${server.url}/styles/osm-bright/{TileMatrix}/{TileCol}/{TileRow}.png"`);
    expect(xml).toContain(`template="${server.url}/styles/osm-bright/{TileMatrix}/{TileCol}/{TileRow}.jpg"`);
    expect(xml).toContain(`template="${server.url}/styles/osm-bright/{TileMatrix}/{TileCol}/{TileRow}@2x.png"`);
    // 2x.jpg is not built by the fixture: not offered.
    expect(xml).not.toContain('@2x.jpg');
    expect(xml).toContain('<WellKnownScaleSet>urn:ogc:def:wkss:OGC:1.0:GoogleMapsCompatible</WellKnownScaleSet>');
    expect(xml).toContain('<ows:Identifier>GoogleMapsCompatible_512</ows:Identifier>');
    expect(xml.match(/<TileMatrix>\s*<ows:Identifier>/g)).toHaveLength(2 * (FIXTURE_MAXZOOM + 1));
    expect(await request(`${server.url}/styles/${STYLE_ID}/wmts.xml`).then((x) => x.status)).toBe(401);
    const missing = await request(`${server.url}/styles/nope/wmts.xml`, { headers: AUTH });
    expect(missing.status).toBe(404);
    expect(missing.json()).toMatchObject({ status: 404, error: 'unknown style "nope"' });
    const all = await request(`${server.url}/styles/wmts.xml`, { headers: AUTH });
    expect(all.status).toBe(200);
    expect(all.body.toString()).toContain('<ows:Identifier>osm-bright@2x</ows:Identifier>');
  });
});

describe('GDAL WMTS driver', () => {
  const url = () => `WMTS:${server.url}/styles/wmts.xml`;

  it('gdalinfo lists both layers and gives the layer the tile grid of the build (EPSG:3857, z8 pixels)', async () => {
    const { stdout } = await gdal('gdalinfo', [url()]);
    expect(stdout).toContain(`SUBDATASET_1_NAME=${url()},layer=osm-bright`);
    expect(stdout).toContain(`SUBDATASET_2_NAME=${url()},layer=osm-bright@2x`);
    const info = JSON.parse((await gdal('gdalinfo', ['-json', `${url()},layer=osm-bright`])).stdout);
    const res = (2 * HALF_WORLD_M) / 256 / 2 ** TILE.z;
    expect(info.size).toEqual([256, 256]);
    expect(info.geoTransform[1]).toBeCloseTo(res, 6);
    expect(info.geoTransform[0]).toBeCloseTo(-HALF_WORLD_M + TILE.x * 256 * res, 3);
    expect(info.geoTransform[3]).toBeCloseTo(HALF_WORLD_M - TILE.y * 256 * res, 3);
    expect(info.coordinateSystem.wkt).toContain('Pseudo-Mercator');
  });

  for (const layer of [
    { id: 'osm-bright', suffix: '.png', size: 256 },
    { id: 'osm-bright@2x', suffix: '@2x.png', size: 512 },
  ]) {
    it(`gdal_translate of a window of ${layer.id} gives the served tile's pixels`, async () => {
      const tile = await servedTile(layer.suffix);
      expect(tile.width).toBe(layer.size);
      const [x0, y0, w, h] = [layer.size / 8, layer.size / 4, layer.size / 2, (layer.size * 3) / 8];
      const out = join(work, `${layer.size}.png`);
      // The dataset's extent is the layer's WGS84 box rounded out to whole pixels: place the window by its geotransform.
      const gt = JSON.parse((await gdal('gdalinfo', ['-json', `${url()},layer=${layer.id}`])).stdout).geoTransform as number[];
      const res = (2 * HALF_WORLD_M) / layer.size / 2 ** TILE.z;
      const left = Math.round((gt[0] + HALF_WORLD_M) / res) - TILE.x * layer.size;
      const top = Math.round((HALF_WORLD_M - gt[3]) / res) - TILE.y * layer.size;
      const srcwin = [x0 - left, y0 - top, w, h].map(String);
      await gdal('gdal_translate', ['-of', 'PNG', '-b', '1', '-b', '2', '-b', '3', '-srcwin', ...srcwin, `${url()},layer=${layer.id}`, out]);
      const got = await sharp(await readFile(out)).raw().toBuffer({ resolveWithObject: true });
      expect([got.info.width, got.info.height, got.info.channels]).toEqual([w, h, 3]);
      const expected = Buffer.alloc(w * h * 3);
      for (let j = 0; j < h; j++) tile.data.copy(expected, j * w * 3, ((y0 + j) * layer.size + x0) * 3, ((y0 + j) * layer.size + x0 + w) * 3);
      expect(got.data.equals(expected)).toBe(true);
    }, 60_000);
  }
});

describe('OpenLayers', () => {
  it('optionsFromCapabilities builds the layer and draws the served tiles', async () => {
    const page = await browser.newPage({ viewport: { width: 256, height: 256 } });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.setContent(await readFile(join(import.meta.dirname, 'fixtures/wmts-client.html'), 'utf8'));
    await page.addScriptTag({ path: createRequire(import.meta.url).resolve('ol/dist/ol.js') });
    const res = (2 * HALF_WORLD_M) / 256 / 2 ** TILE.z;
    // The view is the z8 tile exactly: the canvas is that tile, pixel for pixel.
    const center = [-HALF_WORLD_M + (TILE.x + 0.5) * 256 * res, HALF_WORLD_M - (TILE.y + 0.5) * 256 * res];
    const out = await page.evaluate(
      (a) => (window as unknown as { runWmts(x: typeof a): Promise<{ done: boolean; requested: { url: string; status: number }[]; width: number; height: number; pixels: number[] }> }).runWmts(a),
      { capabilities: `${server.url}/styles/wmts.xml`, layer: STYLE_ID, token: TOKEN, center, resolution: res, timeoutMs: 30_000 },
    );
    await page.close();
    expect(errors).toEqual([]);
    expect(out.done).toBe(true);
    expect(out.requested).toContainEqual({ url: `${server.url}/styles/${STYLE_ID}/${TILE.z}/${TILE.x}/${TILE.y}.png`, status: 200 });
    expect([out.width, out.height]).toEqual([256, 256]);
    const tile = await servedTile('.png');
    let maxDiff = 0;
    for (let i = 0; i < 256 * 256; i++) {
      for (let c = 0; c < 3; c++) maxDiff = Math.max(maxDiff, Math.abs(out.pixels[i * 4 + c] - tile.data[i * 3 + c]));
    }
    expect(maxDiff).toBeLessThanOrEqual(2);
  }, 60_000);
});
