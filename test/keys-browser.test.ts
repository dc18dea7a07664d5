// Real clients with origin keys (static-server/keys/): Leaflet (<img> tiles, judged by Referer) and
// OpenLayers (CORS tiles, judged by Origin) in Debian's Chromium, their pages served by a second
// local server, load raster tiles with no Authorization header and render them; the same pages from
// another origin get 401s; an origin key with a small quota gets 429 with Retry-After.
import { mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type RunningServer } from '../static-server/serve.ts';
import { buildStyleOutput, STYLE_ID, tileColour, type StyleOutput } from './fixtures/styles/output.ts';
import { CHROMIUM_ARGS, CHROMIUM_PATH } from './fixtures/styles/client.ts';

const require = createRequire(import.meta.url);
const LEAFLET_DIR = dirname(require.resolve('leaflet/dist/leaflet.js'));
const OL_JS = require.resolve('ol/dist/ol.js');
/** Monaco at a zoom the fixture has (z0–8), and the tile under it. */
const CENTER: [number, number] = [7.4245, 43.7383];
const ZOOM = 6;
const VIEW = 512;

let style: StyleOutput;
let dir: string;
let server: RunningServer;
let browser: Browser;
const pageServers: Server[] = [];
let allowed: string;
let other: string;
let limited: string;

/** A page server (its own origin) for the Leaflet and OpenLayers pages pointing at `tiles`. */
async function pageServer(tiles: () => string): Promise<string> {
  const s = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const send = (type: string, body: string | Buffer) => res.writeHead(200, { 'content-type': type }).end(body);
    const tileUrl = `${tiles()}/styles/${STYLE_ID}/{z}/{x}/{y}.png`;
    const head = `<!doctype html><meta charset="utf-8"><style>html,body,#map{margin:0;width:${VIEW}px;height:${VIEW}px}</style>`;
    if (path === '/leaflet.html') {
      return send(
        'text/html',
        `${head}<link rel="stylesheet" href="/lib/leaflet.css"><script src="/lib/leaflet.js"></script><div id="map"></div><script>
        const map = L.map('map', { zoomControl: false, attributionControl: false, fadeAnimation: false, zoomAnimation: false }).setView([${CENTER[1]}, ${CENTER[0]}], ${ZOOM});
        const layer = L.tileLayer(${JSON.stringify(tileUrl)}, { maxZoom: 8 });
        layer.on('load', () => { window.mapDone = true; });
        layer.addTo(map);
        window.toPixel = (lon, lat) => { const p = map.latLngToContainerPoint([lat, lon]); return [p.x, p.y]; };
        </script>`,
      );
    }
    if (path === '/ol.html') {
      return send(
        'text/html',
        `${head}<script src="/lib/ol.js"></script><div id="map"></div><script>
        const map = new ol.Map({ target: 'map', controls: [], layers: [new ol.layer.Tile({ source: new ol.source.XYZ({ url: ${JSON.stringify(tileUrl)}, crossOrigin: 'anonymous', maxZoom: 8 }) })],
          view: new ol.View({ center: ol.proj.fromLonLat([${CENTER[0]}, ${CENTER[1]}]), zoom: ${ZOOM} }) });
        map.once('rendercomplete', () => { window.mapDone = true; });
        window.toPixel = (lon, lat) => map.getPixelFromCoordinate(ol.proj.fromLonLat([lon, lat]));
        </script>`,
      );
    }
    const libs: Record<string, [string, string]> = {
      '/lib/leaflet.js': [join(LEAFLET_DIR, 'leaflet.js'), 'text/javascript'],
      '/lib/leaflet.css': [join(LEAFLET_DIR, 'leaflet.css'), 'text/css'],
      '/lib/ol.js': [OL_JS, 'text/javascript'],
    };
    const lib = libs[path];
    if (!lib) return void res.writeHead(404).end();
    void readFile(lib[0]).then((b) => send(lib[1], b));
  });
  await new Promise<void>((ok) => s.listen(0, '127.0.0.1', ok));
  pageServers.push(s);
  return `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
}

/** Header names in lower case. */
function lower(h: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(h).map(([k, v]) => [k.toLowerCase(), v]));
}

/** Top-left corner (lon, lat) of tile z/x/y. */
function tileCorner(z: number, x: number, y: number): [number, number] {
  const n = 2 ** z;
  return [(x / n) * 360 - 180, (Math.atan(Math.sinh(Math.PI * (1 - (2 * y) / n))) * 180) / Math.PI];
}

/** The tile containing a point. */
function tileAt(z: number, lon: number, lat: number): { x: number; y: number } {
  const n = 2 ** z;
  const r = (lat * Math.PI) / 180;
  return { x: Math.floor(((lon + 180) / 360) * n), y: Math.floor(((1 - Math.log(Math.tan(r) + 1 / Math.cos(r)) / Math.PI) / 2) * n) };
}

interface PageRun {
  tiles: { url: string; status: number; headers: Record<string, string>; auth?: string; origin?: string; referer?: string }[];
  /** RGB just inside the top-left corner of the Monaco tile, from a screenshot. */
  corner: [number, number, number];
}

/** Open `page` of a page server, wait until the map is done (or `timeoutMs`), and collect its tile requests. */
async function runPage(base: string, page: 'leaflet.html' | 'ol.html', waitDone = true): Promise<PageRun> {
  const context = await browser.newContext({ viewport: { width: VIEW, height: VIEW } });
  try {
    const p = await context.newPage();
    // The DevTools protocol sees every answer: Chromium blocks JSON error bodies to <img> (ORB), so
    // refused tiles never reach Playwright's response events.
    const cdp = await context.newCDPSession(p);
    await cdp.send('Network.enable');
    const sent = new Map<string, { url: string; headers: Record<string, string> }>();
    const answered = new Map<string, { status: number; headers: Record<string, string> }>();
    cdp.on('Network.requestWillBeSent', (e) => {
      if (e.request.url.startsWith(server.url)) sent.set(e.requestId, { url: e.request.url, headers: lower(e.request.headers as Record<string, string>) });
    });
    cdp.on('Network.requestWillBeSentExtraInfo', (e) => {
      const s = sent.get(e.requestId);
      if (s) s.headers = { ...s.headers, ...lower(e.headers as Record<string, string>) };
    });
    cdp.on('Network.responseReceivedExtraInfo', (e) => answered.set(e.requestId, { status: e.statusCode, headers: lower(e.headers as Record<string, string>) }));
    await p.goto(`${base}/${page}`);
    if (waitDone) await p.waitForFunction(() => (window as unknown as { mapDone?: boolean }).mapDone === true, undefined, { timeout: 60_000 });
    else await p.waitForTimeout(3000);
    const t = tileAt(ZOOM, ...CENTER);
    const [lon, lat] = tileCorner(ZOOM, t.x, t.y);
    const [px, py] = await p.evaluate(([a, b]) => (window as unknown as { toPixel(lon: number, lat: number): [number, number] }).toPixel(a, b), [lon, lat]);
    const shot = await p.screenshot();
    const { data, info } = await sharp(shot).removeAlpha().raw().toBuffer({ resolveWithObject: true });
    const o = (Math.round(py) + 3) * info.width * 3 + (Math.round(px) + 3) * 3;
    const tiles: PageRun['tiles'] = [];
    for (const [id, req] of sent) {
      const a = answered.get(id);
      if (a) tiles.push({ url: req.url, status: a.status, headers: a.headers, auth: req.headers.authorization, origin: req.headers.origin, referer: req.headers.referer });
    }
    return { tiles, corner: [data[o], data[o + 1], data[o + 2]] };
  } finally {
    await context.close();
  }
}

beforeAll(async () => {
  style = await buildStyleOutput();
  dir = await mkdtemp(join(tmpdir(), 'tilebake-keys-browser-'));
  allowed = await pageServer(() => server.url);
  other = await pageServer(() => server.url);
  limited = await pageServer(() => server.url);
  const keys = join(dir, 'keys.json');
  await writeFile(
    keys,
    JSON.stringify({
      keys: [
        { name: 'website', origins: [allowed] },
        { name: 'small', origins: [limited], quota: { requests: 3, per: 'day' } },
      ],
    }),
  );
  server = await startServer({ out: style.out, port: 0, host: '127.0.0.1', auth: true, keysFile: keys, stateDir: join(dir, 'state'), cors: '*', cacheMb: 16, logLevel: 'silent', versionPollMs: 0 });
  browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS, headless: true });
}, 240_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
  for (const s of pageServers) await new Promise((ok) => s.close(ok));
  for (const d of [style?.out, dir]) if (d) await rm(d, { recursive: true, force: true });
});

describe('origin keys with real clients', () => {
  const t = tileAt(ZOOM, ...CENTER);
  const monacoTile = `/styles/${STYLE_ID}/${ZOOM}/${t.x}/${t.y}.png`;
  const expectRendered = (run: PageRun) => {
    const want = tileColour(ZOOM, t.x, t.y);
    run.corner.forEach((c, i) => expect(Math.abs(c - want[i]), `channel ${i}: ${run.corner} vs ${want}`).toBeLessThanOrEqual(12));
  };

  it('Leaflet from an allowed origin: <img> tiles without any header, judged by Referer, rendered', async () => {
    const run = await runPage(allowed, 'leaflet.html');
    const monaco = run.tiles.find((r) => r.url.endsWith(monacoTile))!;
    expect(monaco).toMatchObject({ status: 200 });
    expect(monaco.headers['content-type']).toBe('image/png');
    for (const r of run.tiles) {
      expect(r.auth).toBeUndefined();
      expect(r.origin).toBeUndefined();
      expect(r.referer).toBe(`${allowed}/`);
      expect([200, 204]).toContain(r.status);
    }
    expectRendered(run);
  }, 120_000);

  it('OpenLayers from an allowed origin: CORS tiles without Authorization, judged by Origin, rendered', async () => {
    const run = await runPage(allowed, 'ol.html');
    const monaco = run.tiles.find((r) => r.url.endsWith(monacoTile))!;
    expect(monaco).toMatchObject({ status: 200, origin: allowed });
    expect(monaco.headers['access-control-allow-origin']).toBe(allowed);
    for (const r of run.tiles) {
      expect(r.auth).toBeUndefined();
      expect([200, 204]).toContain(r.status);
    }
    expectRendered(run);
  }, 120_000);

  it('the same pages from another origin get 401s and show no tile', async () => {
    for (const page of ['leaflet.html', 'ol.html'] as const) {
      const run = await runPage(other, page, false);
      expect(run.tiles.length, page).toBeGreaterThan(0);
      for (const r of run.tiles) expect(r.status, `${page} ${r.url}`).toBe(401);
      const want = tileColour(ZOOM, t.x, t.y);
      expect(run.corner.some((c, i) => Math.abs(c - want[i]) > 12)).toBe(true);
    }
  }, 120_000);

  it('the preview page works with an origin key for the server itself: no token asked, tiles without Authorization', async () => {
    const keys = join(dir, 'keys.json');
    const doc = JSON.parse(await readFile(keys, 'utf8')) as { keys: object[] };
    doc.keys.push({ name: 'preview', origins: [server.url] });
    await writeFile(`${keys}.tmp`, JSON.stringify(doc));
    await rename(`${keys}.tmp`, keys);
    await expect.poll(async () => (await fetch(`${server.url}/catalog.json`, { headers: { origin: server.url } })).status, { timeout: 10_000 }).toBe(200);
    const context = await browser.newContext({ viewport: { width: VIEW, height: VIEW } });
    try {
      const p = await context.newPage();
      const tiles: { status: number; auth?: string }[] = [];
      p.on('response', (r) => {
        if (/\/styles\/[^/]+\/\d+\/\d+\/\d+\.png$/.test(r.url())) tiles.push({ status: r.status(), auth: r.request().headers().authorization });
      });
      await p.goto(`${server.url}/`);
      await p.waitForFunction(() => !!(window as unknown as { tilebakePreview?: unknown }).tilebakePreview, undefined, { timeout: 60_000 });
      await expect.poll(() => tiles.filter((t) => t.status === 200).length, { timeout: 60_000 }).toBeGreaterThan(0);
      expect(await p.locator('#login').isHidden()).toBe(true);
      for (const t of tiles) expect(t.auth).toBeUndefined();
    } finally {
      await context.close();
    }
  }, 120_000);

  it('an origin key with a quota of 3 requests gets 429 with Retry-After after its budget', async () => {
    const run = await runPage(limited, 'leaflet.html', false);
    const statuses = run.tiles.map((r) => r.status);
    expect(statuses.filter((s) => s !== 429)).toHaveLength(3);
    const refused = run.tiles.filter((r) => r.status === 429);
    expect(refused.length).toBeGreaterThan(0);
    for (const r of refused) {
      expect(Number(r.headers['retry-after'])).toBeGreaterThan(0);
      expect(r.headers['ratelimit-limit']).toBe('3');
      expect(r.headers['ratelimit-remaining']).toBe('0');
    }
  }, 120_000);
});
