// Real clients of an export: MapLibre GL JS in Debian's headless Chromium loads the exported style.json
// and TileJSON through nginx with the generated configuration (bearer token), following the versioned
// URLs `/v/{build}/…` they hand out, and the pmtiles:// page (docs/pmtiles/index.html) reads the
// build's archives from a plain static folder.
import { randomBytes } from 'node:crypto';
import { cp, mkdir, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportBuild } from '../export/index.ts';
import { exportBehindNginx, launchChromium, publishAsVersion, type ExportedNginx } from './fixtures/export/nginx.ts';
import { buildFullOutput, type FullOutput } from './fixtures/server/full-output.ts';
import { BUILD_ROOT_FILES, freePort, ROOT, runNginx, type Nginx } from './fixtures/server/helpers.ts';
import { openClient, runMap, type Client } from './fixtures/styles/client.ts';

const TOKEN = randomBytes(18).toString('base64url');
const MONACO: [number, number] = [7.4215, 43.7365];
const ZOOM = 14;
const IDLE_TIMEOUT_MS = 60_000;
const require = createRequire(import.meta.url);

/** The build's version id. */
const BUILD = 'b1';

let build: FullOutput;
let authed: ExportedNginx;
let authedUrl: string;
let plain: Nginx;
let client: Client;
let browser: Browser;

beforeAll(async () => {
  build = await buildFullOutput();
  // As `tilebake build` publishes it: current.json pointing at builds/b1/.
  await publishAsVersion(build.out, BUILD);
  // 1. An export behind nginx with the generated configuration.
  authed = await exportBehindNginx(build.out, { token: TOKEN });
  authedUrl = authed.url;

  // 2. The build folder as plain static files (Range requests), with an export and the pmtiles page in it.
  const plainPort = await freePort();
  const plainHttp = `  access_log off;\n  include /etc/nginx/mime.types;\n  types { text/javascript mjs; }\n  server { listen 127.0.0.1:${plainPort}; root ${build.out}; }`;
  plain = await runNginx(() => plainHttp, `http://127.0.0.1:${plainPort}/`, BUILD_ROOT_FILES, [build.out]);
  await exportBuild({ out: build.out, to: join(build.out, 'static'), publicUrl: `${plain.url}static` });
  const page = join(build.out, 'page');
  await mkdir(join(page, 'maplibre'), { recursive: true });
  await cp(join(ROOT, 'docs/pmtiles/index.html'), join(page, 'index.html'));
  await cp(join(dirname(require.resolve('pmtiles/package.json')), 'dist/pmtiles.js'), join(page, 'pmtiles.js'));
  const maplibreDist = dirname(require.resolve('maplibre-gl/dist/maplibre-gl.mjs'));
  for (const f of ['maplibre-gl.mjs', 'maplibre-gl-shared.mjs', 'maplibre-gl-worker.mjs', 'maplibre-gl.css']) await cp(join(maplibreDist, f), join(page, 'maplibre', f));

  client = await openClient();
  browser = await launchChromium();
}, 180_000);

afterAll(async () => {
  await client?.close();
  await browser?.close();
  await authed?.nginx.stop();
  await plain?.stop();
  if (build) await rm(build.out, { recursive: true, force: true });
});

describe('clients of an export', () => {
  it('MapLibre renders the exported style.json through nginx with a bearer token, without errors', async () => {
    const responses: { url: string; status: number }[] = [];
    const onResponse = (r: { url(): string; status(): number; request(): { method(): string } }) => {
      if (r.url().startsWith(authedUrl) && r.request().method() !== 'OPTIONS') responses.push({ url: r.url(), status: r.status() });
    };
    client.page.on('response', onResponse);
    try {
      const run = await runMap(client, { style: `${authedUrl}/styles/osm-bright/style.json`, server: authedUrl, token: TOKEN, center: MONACO, zoom: ZOOM, timeoutMs: IDLE_TIMEOUT_MS });
      // MapLibre warns about a style layer whose source layer the TileJSON does not list: not an error here.
      expect(run.errors.filter((e) => !/^Source layer "[^"]+" does not exist/.test(e))).toEqual([]);
      expect(run.idle).toBe(true);
      expect(client.consoleErrors.filter((e) => !/Source layer "[^"]+" does not exist/.test(e))).toEqual([]);
      const ok = responses.filter((r) => r.status === 200).map((r) => decodeURIComponent(new URL(r.url).pathname));
      expect(ok).toContain('/styles/osm-bright/style.json');
      // Everything the style names is loaded under the build's version.
      const v = `/v/${BUILD}`;
      expect(ok).toContain(`${v}/data/openmaptiles.json`);
      expect(ok.some((p) => new RegExp(`^${v}/data/openmaptiles/14/\\d+/\\d+\\.pbf$`).test(p))).toBe(true);
      expect(ok.some((p) => p.startsWith(`${v}/styles/osm-bright/sprite`))).toBe(true);
      expect(ok.some((p) => p.startsWith(`${v}/fonts/`))).toBe(true);
      expect(ok.filter((p) => p !== '/styles/osm-bright/style.json' && !p.startsWith(`${v}/`))).toEqual([]);
      // 404s only for vector tiles outside the sample (MapLibre draws them empty).
      expect(responses.filter((r) => r.status !== 200 && !(r.status === 404 && r.url.endsWith('.pbf')))).toEqual([]);
    } finally {
      client.page.off('response', onResponse);
    }
  }, IDLE_TIMEOUT_MS + 30_000);

  it('MapLibre shows the exported raster tiles through the raster TileJSON', async () => {
    const style = { version: 8, sources: { r: { type: 'raster', url: `${authedUrl}/styles/osm-bright/rendered.json`, tileSize: 256 } }, layers: [{ id: 'r', type: 'raster', source: 'r' }] };
    const run = await runMap(client, { style, server: authedUrl, token: TOKEN, center: MONACO, zoom: 8, timeoutMs: IDLE_TIMEOUT_MS });
    expect(run.errors).toEqual([]);
    expect(run.requested.some((u) => new RegExp(`/v/${BUILD}/styles/osm-bright/8/\\d+/\\d+\\.png$`).test(u))).toBe(true);
  }, IDLE_TIMEOUT_MS + 30_000);

  it('the pmtiles:// page reads the archives with Range requests from a static folder and renders without errors', async () => {
    const page = await browser.newPage({ viewport: { width: 512, height: 512 } });
    const errors: string[] = [];
    const ranges: string[] = [];
    page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('request', (r) => {
      if (r.url().endsWith('.pmtiles') && r.headers().range) ranges.push(r.url());
    });
    try {
      const style = `${plain.url}static/styles/osm-bright/style.json`;
      await page.goto(`${plain.url}page/index.html?style=${encodeURIComponent(style)}&build=${encodeURIComponent(plain.url)}`);
      await page
        .waitForFunction(() => (window as unknown as { mapIdle?: unknown }).mapIdle !== undefined, undefined, { timeout: IDLE_TIMEOUT_MS })
        .catch((e: Error) => Promise.reject(new Error(`${e.message}; page errors: ${errors.join('; ')}`)));
      const result = await page.evaluate(() => (window as unknown as { mapIdle: Promise<{ errors: string[] }> }).mapIdle);
      const real = (list: string[]) => list.filter((e) => !/Source layer "[^"]+" does not exist/.test(e));
      expect(real(result.errors)).toEqual([]);
      expect(real(errors)).toEqual([]);
      expect(ranges.some((u) => u.endsWith(`/builds/${BUILD}/data/openmaptiles.pmtiles`))).toBe(true);
    } finally {
      await page.close();
    }
  }, IDLE_TIMEOUT_MS + 30_000);
});
