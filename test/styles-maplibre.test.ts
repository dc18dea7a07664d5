// Real client: the served style.json (and the raster TileJSON) load in MapLibre GL JS in headless
// Chromium against a running server over a real build of the sample, and render without errors.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashToken } from '../static-server/auth.ts';
import { startServer, type RunningServer } from '../static-server/serve.ts';
import { openClient, runMap, type Client, type MapRun } from './fixtures/styles/client.ts';
import { ROOT } from './fixtures/styles/output.ts';

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

let out: string;
let server: RunningServer;
let client: Client;
/** Status of every response from the tile server the page received. */
const responses: { url: string; status: number }[] = [];

/** A build config over the sample with absolute paths and a small render. */
async function writeConfig(dir: string): Promise<string> {
  const sample = JSON.parse(await readFile(join(SAMPLE, 'config.json'), 'utf8'));
  const style = (id: string, scales: number[], formats: string[]) => ({
    style: join(SAMPLE, sample.styles[id].style),
    tileset: 'openmaptiles',
    minzoom: 0,
    maxzoom: RENDER_MAXZOOM,
    scales,
    formats,
  });
  const config = {
    out: join(dir, 'out'),
    attribution: sample.attribution,
    tilesets: { openmaptiles: { ...sample.tilesets.openmaptiles, source: join(SAMPLE, sample.tilesets.openmaptiles.source) } },
    styles: { 'osm-bright': style('osm-bright', [1, 2], ['png']), positron: style('positron', [1], ['jpg']) },
    fonts: join(SAMPLE, sample.fonts),
    render: sample.render,
  };
  const file = join(dir, 'config.json');
  await writeFile(file, JSON.stringify(config, null, 2));
  return file;
}

/** Distinct RGBA colours of a PNG data URL. */
async function distinctColours(dataUrl: string): Promise<number> {
  const png = Buffer.from(dataUrl.slice(dataUrl.indexOf(',') + 1), 'base64');
  const { data, info } = await sharp(png).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  const seen = new Set<number>();
  for (let i = 0; i < data.length; i += info.channels) seen.add(data.readUInt32LE(i));
  return seen.size;
}

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
  await promisify(execFile)(process.execPath, [join(ROOT, 'bin/tilebake.js'), 'build', '--config', config], {
    cwd: ROOT,
    env: { ...process.env, CI: '1' },
    maxBuffer: 64 * 1024 * 1024,
  });
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
    }, IDLE_TIMEOUT_MS + 30_000);
  }

  it('shows the rendered raster tiles through the raster TileJSON', async () => {
    responses.length = 0;
    const style = {
      version: 8,
      sources: { raster: { type: 'raster', url: `${server.url}/styles/osm-bright/rendered.json`, tileSize: 256 } },
      layers: [{ id: 'raster', type: 'raster', source: 'raster' }],
    };
    const run = await runMap(client, { style, server: server.url, token: TOKEN, center: MONACO, zoom: RENDER_MAXZOOM, timeoutMs: IDLE_TIMEOUT_MS });
    expectClean(run);
    const tiles = responses.filter((r) => r.status === 200 && /\/styles\/osm-bright\/\d+\/\d+\/\d+\.png$/.test(r.url));
    expect(tiles.length).toBeGreaterThan(0);
    expect(await distinctColours(run.image)).toBeGreaterThanOrEqual(MIN_DISTINCT_COLOURS);
  }, IDLE_TIMEOUT_MS + 30_000);
});
