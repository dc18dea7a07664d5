// MLT in a real client: MapLibre GL JS in headless Chromium draws the Liechtenstein build's osm-bright
// and positron styles from MLT (`style.json?encoding=mlt`: the .mlt tiles) with the same pixels as
// from MVT (the .pbf tiles), at a low zoom and at the tiles' maxzoom (each zoom is two map runs in
// software WebGL, ~5 CPU s).
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type RunningServer } from '../static-server/serve.ts';
import { openClient, runMap, type Client, type MapRun } from './fixtures/styles/client.ts';
import { MLT_STYLES, MLT_TILESET, sharedMltBuild } from './fixtures/mlt.ts';

/** Vaduz: town, roads, buildings, the Rhine and labels in view. */
const VADUZ: [number, number] = [9.5215, 47.1410];
const ZOOMS = [10, 14];
/** Time a map may take to become idle in software WebGL. */
const IDLE_TIMEOUT_MS = 90_000;
/** Two renders agree when this share of pixels differ by at most CHANNEL_TOLERANCE in every channel. */
const MIN_SAME_SHARE = 0.999;
const CHANNEL_TOLERANCE = 8;
/** A map of a town shows at least this many distinct colours (not a blank canvas). */
const MIN_DISTINCT_COLOURS = 16;

let server: RunningServer;
let client: Client;
const responses: { url: string; status: number; type: string }[] = [];

beforeAll(async () => {
  const { out } = await sharedMltBuild();
  server = await startServer({ out, port: 0, host: '127.0.0.1', auth: false, cacheControl: 'no-store', cors: '*', cacheMb: 64, logLevel: 'warn' }, { tokenHashes: null });
  client = await openClient();
  client.page.on('response', (r) => {
    if (r.url().startsWith(server.url)) responses.push({ url: r.url(), status: r.status(), type: r.headers()['content-type'] ?? '' });
  });
}, 900_000);

afterAll(async () => {
  await client?.close();
  await server?.close();
});

async function rgba(dataUrl: string): Promise<Buffer> {
  return sharp(Buffer.from(dataUrl.slice(dataUrl.indexOf(',') + 1), 'base64')).ensureAlpha().raw().toBuffer();
}

/** Share of pixels whose every channel differs by at most CHANNEL_TOLERANCE, and the distinct colours of `a`. */
async function compare(a: MapRun, b: MapRun): Promise<{ same: number; colours: number }> {
  const [pa, pb] = [await rgba(a.image), await rgba(b.image)];
  expect(pa.length).toBe(pb.length);
  let same = 0;
  const colours = new Set<number>();
  for (let i = 0; i < pa.length; i += 4) {
    colours.add(pa.readUInt32LE(i));
    let ok = true;
    for (let c = 0; c < 4; c++) if (Math.abs(pa[i + c] - pb[i + c]) > CHANNEL_TOLERANCE) ok = false;
    if (ok) same++;
  }
  return { same: same / (pa.length / 4), colours: colours.size };
}

/** Draw `style` at `zoom`; the tile responses it got. */
async function draw(style: string, zoom: number): Promise<{ run: MapRun; tiles: typeof responses }> {
  responses.length = 0;
  const run = await runMap(client, { style, server: server.url, token: '', center: VADUZ, zoom, timeoutMs: IDLE_TIMEOUT_MS });
  expect(run.errors).toEqual([]);
  expect(run.idle).toBe(true);
  const tiles = responses.filter((r) => new URL(r.url).pathname.startsWith(`/data/${MLT_TILESET}/`));
  expect(tiles.length).toBeGreaterThan(0);
  expect(responses.filter((r) => r.status !== 200 && r.status !== 204)).toEqual([]);
  return { run, tiles };
}

describe('MapLibre GL JS draws MLT as it draws MVT', () => {
  for (const id of MLT_STYLES) {
    for (const zoom of ZOOMS) {
      it(`${id} at z${zoom}`, async () => {
        const mvt = await draw(`${server.url}/styles/${id}/style.json`, zoom);
        const mlt = await draw(`${server.url}/styles/${id}/style.json?encoding=mlt`, zoom);
        expect(mvt.tiles.every((t) => t.url.endsWith('.pbf'))).toBe(true);
        expect(mlt.tiles.every((t) => t.url.endsWith('.mlt'))).toBe(true);
        expect(mlt.tiles.filter((t) => t.status === 200).every((t) => t.type === 'application/vnd.maplibre-tile')).toBe(true);
        const { same, colours } = await compare(mvt.run, mlt.run);
        expect(colours).toBeGreaterThanOrEqual(MIN_DISTINCT_COLOURS);
        expect(same).toBeGreaterThanOrEqual(MIN_SAME_SHARE);
        expect(client.consoleErrors).toEqual([]);
      }, 2 * IDLE_TIMEOUT_MS + 30_000);
    }
  }

  it('the preview page switches a style between MVT and MLT', async () => {
    const seen = () => responses.map((r) => new URL(r.url).pathname);
    try {
      responses.length = 0;
      await client.page.goto(`${server.url}/#style=positron&mode=vector&encoding=mlt`);
      await expect.poll(() => seen().some((p) => p.endsWith('.mlt')), { timeout: IDLE_TIMEOUT_MS }).toBe(true);
      expect(seen().some((p) => p.endsWith('.pbf') && p.startsWith('/data/'))).toBe(false);
      expect(await client.page.locator('#encoding-box').isVisible()).toBe(true);
      responses.length = 0;
      await client.page.selectOption('#encoding', 'mvt');
      await expect.poll(() => seen().some((p) => p.startsWith('/data/') && p.endsWith('.pbf')), { timeout: IDLE_TIMEOUT_MS }).toBe(true);
      expect(client.page.url()).not.toContain('encoding=mlt');
    } finally {
      await client.page.goto(client.pageUrl);
      client.consoleErrors.length = 0;
    }
  }, 2 * IDLE_TIMEOUT_MS);
});
