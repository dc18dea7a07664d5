// Versioned URLs with a real client: a MapLibre map in Chromium open across a rebuild keeps using one
// build (every tile from /v/{old}/), and a reload shows the new build at once (no cache to wait for).
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashToken } from '../static-server/auth.ts';
import { startServer, type RunningServer } from '../static-server/serve.ts';
import { buildSampleVector } from './fixtures/server/helpers.ts';
import { publishRotatedVersion } from './fixtures/server/versions.ts';
import { openClient, type Client } from './fixtures/styles/client.ts';

const TOKEN = randomBytes(18).toString('base64url');
const MONACO: [number, number] = [7.4245, 43.7383];
let out: string;
let server: RunningServer;
let client: Client;

interface MapState {
  requested: string[];
  errors: string[];
}

/** Open a map of the server's vector tileset in the page (kept in window.map); resolves when idle. */
function openMap(c: Client, zoom: number): Promise<MapState> {
  return c.page.evaluate(
    async ({ server, token, center, zoom }) => {
      // Imported through Function: vitest would rewrite an import() written here.
      const maplibregl = await (new Function('u', 'return import(u)') as (u: string) => Promise<any>)('/maplibre/maplibre-gl.mjs');
      const w = window as unknown as { map: unknown; state: MapState };
      w.state = { requested: [], errors: [] };
      const map = new maplibregl.Map({
        container: 'map',
        style: {
          version: 8,
          sources: { v: { type: 'vector', url: `${server}/data/openmaptiles.json` } },
          layers: [
            { id: 'bg', type: 'background', paint: { 'background-color': '#fff' } },
            { id: 'water', type: 'fill', source: 'v', 'source-layer': 'water', paint: { 'fill-color': '#00f' } },
            { id: 'roads', type: 'line', source: 'v', 'source-layer': 'transportation', paint: { 'line-color': '#000' } },
          ],
        },
        center,
        zoom,
        interactive: false,
        fadeDuration: 0,
        transformRequest: (url: string) => {
          w.state.requested.push(url);
          return { url, headers: { Authorization: `Bearer ${token}` } };
        },
      });
      map.on('error', (e: { error?: Error }) => w.state.errors.push(String(e.error?.message ?? e)));
      w.map = map;
      await new Promise((r) => map.once('idle', r));
      return w.state;
    },
    { server: server.url, token: TOKEN, center: MONACO, zoom },
  );
}

/** Move the open map and wait until it is idle again; returns what it requested meanwhile. */
function moveMap(c: Client, zoom: number, center: [number, number]): Promise<MapState> {
  return c.page.evaluate(
    async ({ zoom, center }) => {
      const w = window as unknown as { map: { jumpTo(o: object): void; once(e: string, f: () => void): void }; state: MapState };
      w.state.requested = [];
      const idle = new Promise<void>((r) => w.map.once('idle', r));
      w.map.jumpTo({ zoom, center });
      await idle;
      return w.state;
    },
    { zoom, center },
  );
}

const tileUrls = (s: MapState) => s.requested.filter((u) => /\/data\/openmaptiles\/\d+\/\d+\/\d+\.pbf$/.test(u));

beforeAll(async () => {
  out = await buildSampleVector();
  server = await startServer(
    { out, port: 0, host: '127.0.0.1', auth: true, cors: '*', cacheMb: 16, logLevel: 'silent', versionedUrls: true, versionPollMs: 0 },
    { tokenHashes: [hashToken(TOKEN)] },
  );
  client = await openClient();
}, 240_000);

afterAll(async () => {
  await client?.close();
  await server?.close();
  if (out) await rm(out, { recursive: true, force: true });
});

describe('MapLibre across a rebuild', () => {
  it('an open map keeps the build it started with; a reload shows the new build at once', async () => {
    const first = server.version.id!;
    const opened = await openMap(client, 13);
    expect(opened.errors).toEqual([]);
    expect(tileUrls(opened).length).toBeGreaterThan(0);
    for (const u of tileUrls(opened)) expect(u).toContain(`/v/${first}/`);

    const { next } = await publishRotatedVersion(out);
    expect(await server.checkVersion()).toBe(true);

    // New tiles of the open map (another zoom and place) still come from the build it started with.
    const moved = await moveMap(client, 14, [7.4200, 43.7350]);
    expect(moved.errors).toEqual([]);
    expect(tileUrls(moved).length).toBeGreaterThan(0);
    for (const u of tileUrls(moved)) expect(u).toContain(`/v/${first}/`);

    // A reload: the TileJSON is revalidated (no-cache), so the new build is used at once.
    await client.page.reload();
    await client.page.waitForFunction(() => (window as unknown as { clientReady?: boolean }).clientReady === true);
    const reloaded = await openMap(client, 14);
    expect(reloaded.errors).toEqual([]);
    expect(tileUrls(reloaded).length).toBeGreaterThan(0);
    for (const u of tileUrls(reloaded)) expect(u).toContain(`/v/${next}/`);
    expect(client.consoleErrors).toEqual([]);
  }, 180_000);
});
