// Raster tiles above the baked zooms in `render` mode (static-server/overzoom/render.ts): a tile
// rendered on demand is byte for byte the tile a build baked one zoom deeper (PNG, JPEG and lossless
// WebP, which decodes to the PNG's pixels; the same build bakes a copy of the style at that zoom, one
// browser for both); the disk cache holds its
// cap (least recently used first); 200 concurrent requests for uncached tiles never exceed the queue or
// the deadline; `serve --workers 2` shares the cache and survives its browsers being killed.
import { randomBytes } from 'node:crypto';
import { readdir, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { currentVersionDir } from '../lib/build-version.ts';
import { enumerateMetatiles, metatileContaining, metatileKey } from '../lib/metatiles.ts';
import { chromiumBrowsersUnder } from '../lib/process-tree.ts';
import { tilesInBBox, type BBox } from '../lib/tile-math.ts';
import { runRenderStage } from '../pipeline/render/stage.ts';
import { hashToken } from '../static-server/auth.ts';
import { RENDER_DEFAULTS } from '../static-server/overzoom/policy.ts';
import { RenderCache } from '../static-server/overzoom/render-cache.ts';
import { startServer, type RunningServer } from '../static-server/serve.ts';
import { buildSampleVector, request, serveOptions, startServe, type RawResponse, type ServeProcess } from './fixtures/server/helpers.ts';
import { readTile, sampleConfig, tempDir, writeConfig } from './render-helpers.ts';

process.env.TILEBAKE_QUIET = '1';
const TOKEN = randomBytes(18).toString('base64url');
const AUTH = { authorization: `Bearer ${TOKEN}` };
const STYLE = 'osm-bright';
/** A few streets of Monaco-Ville and the port: 3×3 tiles at z16. */
const BBOX: BBox = [7.4165, 43.73, 7.4275, 43.738];
const BAKED = 15;
const DEEP = BAKED + 1;
const SERVED = BAKED + 4;
/** Not the defaults: the server must take the grid, margin and encoders the build baked with from the manifest. */
const RENDER = { metatile: 2, margin: 32, workers: 1, webp: { quality: 60, lossless: true } };
const ARCHIVES = ['1x.png', '1x.jpg', '1x.webp', '2x.png', '2x.jpg', '2x.webp'] as const;
const CONTENT_TYPES: Record<string, string> = { png: 'image/png', jpg: 'image/jpeg', webp: 'image/webp' };
const LONG = 300_000;

/** osm-bright again, baked at DEEP only in the same build: the tiles rendered on demand must equal its. */
const DEEP_STYLE = 'osm-bright-deep';

let shallow: Awaited<ReturnType<typeof bake>>;
/** The folder of DEEP_STYLE's archives. */
let deepStyle: string;
const dirs: string[] = [];
const servers: RunningServer[] = [];

/**
 * The sample's vector stage (a published build version), then the render stage of osm-bright over
 * BBOX baked at zoom BAKED only and of DEEP_STYLE at DEEP only, into that version. Returns the build
 * folder and the version's folder.
 */
async function bake(): Promise<{ root: string; version: string; id: string }> {
  const root = await buildSampleVector();
  dirs.push(root);
  const v = (await currentVersionDir(root))!;
  const at = (z: number) => ({ bbox: BBOX, minzoom: z, maxzoom: z, scales: [1, 2], formats: ['png', 'jpg', 'webp'], overzoom: 'render', maxzoom_served: SERVED });
  const raw = sampleConfig(v.dir, at(BAKED), RENDER);
  const styles = raw.styles as Record<string, Record<string, unknown>>;
  styles[DEEP_STYLE] = { ...styles[STYLE], ...at(DEEP) };
  const { config } = await writeConfig(v.dir, 'config.json', raw);
  await runRenderStage(config, v.dir, { workers: 1 });
  return { root, version: v.dir, id: v.id! };
}

/** `/styles/osm-bright/z/x/y[@2x].fmt` for an archive key. */
function tilePath(key: string, z: number, x: number, y: number): string {
  const [scale, format] = key.split('x.');
  return `/styles/${STYLE}/${z}/${x}/${y}${scale === '2' ? '@2x' : ''}.${format}`;
}

/** Bytes of every file under `dir`. */
async function bytesUnder(dir: string): Promise<{ bytes: number; files: number }> {
  let bytes = 0;
  let files = 0;
  for (const e of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!e.isFile()) continue;
    bytes += (await stat(join(e.parentPath, e.name))).size;
    files++;
  }
  return { bytes, files };
}

async function serveShallow(extra: Parameters<typeof serveOptions>[1]): Promise<RunningServer> {
  const s = await startServer(serveOptions(shallow.root, { logLevel: 'silent', workers: 1, ...extra }), { tokenHashes: [hashToken(TOKEN)] });
  servers.push(s);
  return s;
}

beforeAll(async () => {
  shallow = await bake();
  deepStyle = join(shallow.version, 'styles', DEEP_STYLE);
}, LONG);

afterAll(async () => {
  for (const s of servers) await s.close();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

describe('render mode', () => {
  let server: RunningServer;
  const get = (path: string): Promise<RawResponse> => request(`${server.url}${path}`, { headers: AUTH });

  beforeAll(async () => {
    const cache = await tempDir('render-cache');
    dirs.push(cache);
    server = await serveShallow({ renderCache: cache });
  });

  it('a tile rendered on demand is the tile a build baked at that zoom, byte for byte, in every scale and format', { timeout: LONG }, async () => {
    const deepTiles = [...tilesInBBox(BBOX, DEEP, DEEP)];
    expect(deepTiles.length).toBeGreaterThanOrEqual(6);
    const style = deepStyle;
    for (const key of ARCHIVES) {
      for (const t of deepTiles) {
        const r = await get(tilePath(key, t.z, t.x, t.y));
        expect(r.status, `${key} ${t.z}/${t.x}/${t.y}`).toBe(200);
        expect(r.headers['content-type']).toBe(CONTENT_TYPES[key.split('.')[1]]);
        expect(r.headers['x-tilebake-source-zoom']).toBeUndefined();
        const baked = Buffer.from(await readTile(join(style, `${key}.pmtiles`), t.z, t.x, t.y));
        expect(r.body.equals(baked), `${key} ${t.z}/${t.x}/${t.y} differs from the tile baked at z${DEEP}`).toBe(true);
      }
    }
    // Lossless WebP (this build's render.webp) is the PNG's pixels exactly.
    for (const t of deepTiles) {
      for (const scale of ['1x', '2x']) {
        const [png, webp] = await Promise.all(['png', 'webp'].map((f) => readTile(join(style, `${scale}.${f}.pmtiles`), t.z, t.x, t.y)));
        const [a, b] = await Promise.all([png, webp].map((bytes) => sharp(bytes).ensureAlpha().raw().toBuffer()));
        expect(b.equals(a), `${scale} ${t.z}/${t.x}/${t.y}: WebP pixels differ from the PNG's`).toBe(true);
      }
    }
    // Again: from the caches, the same bytes and ETag.
    const t = deepTiles[0];
    const a = await get(tilePath('1x.png', t.z, t.x, t.y));
    const b = await get(tilePath('1x.png', t.z, t.x, t.y));
    expect(b.body.equals(a.body)).toBe(true);
    expect(b.headers.etag).toBe(a.headers.etag);
    const metrics = (await get('/metrics')).body.toString();
    // One render per metatile and scale (all formats of a scale from one render), the rest cache hits.
    const metas = new Set(deepTiles.map((d) => metatileKey(metatileContaining(BBOX, d.z, d.x, d.y, RENDER.metatile)!)));
    expect(metrics).toMatch(new RegExp(`tilebake_render_tiles_total\\{outcome="rendered"\\} ${metas.size * 2}\\b`));
    expect(metrics).toMatch(/tilebake_render_tiles_total\{outcome="memory"\} [1-9]/);
  });

  it('the raster TileJSON (/styles/{style}/rendered.json) reports the baked and the served maxzoom and the mode', async () => {
    const tj = (await get(`/styles/${STYLE}/rendered.json`)).json() as Record<string, unknown>;
    expect([tj.maxzoom, tj.maxzoom_served, tj.overzoom]).toEqual([BAKED, SERVED, 'render']);
    expect(tj.description).toContain('rendered on demand');
  });

  it('/styles/{style}.json is the style, rendered.json the TileJSON, and both work under /v/{build}/, as do rendered tiles', async () => {
    const style = await get(`/styles/${STYLE}/style.json`);
    for (const path of [`/styles/${STYLE}.json`, `/v/${shallow.id}/styles/${STYLE}.json`]) {
      const r = await get(path);
      expect(r.status, path).toBe(200);
      expect(r.body.equals(style.body), path).toBe(true);
      expect(r.headers['content-type'], path).toBe(style.headers['content-type']);
    }
    const tj = await get(`/v/${shallow.id}/styles/${STYLE}/rendered.json`);
    expect(tj.status).toBe(200);
    expect(tj.headers['cache-control']).toMatch(/immutable/);
    expect(tj.json()).toMatchObject({ tilejson: '3.0.0', maxzoom: BAKED });
    const t = [...tilesInBBox(BBOX, DEEP, DEEP)][0];
    const tile = await get(`/v/${shallow.id}${tilePath('2x.png', t.z, t.x, t.y)}`);
    expect(tile.status).toBe(200);
    expect(tile.body.equals(Buffer.from(await readTile(join(deepStyle, '2x.png.pmtiles'), t.z, t.x, t.y)))).toBe(true);
  });

  it('a bad --render-* option stops the server at start, naming the flag', async () => {
    await expect(serveShallow({ renderQueue: -1 })).rejects.toThrow('--render-queue: expected an integer >= 0, got -1');
    await expect(serveShallow({ renderTimeoutMs: 0 })).rejects.toThrow('--render-timeout-ms');
  });

  it('outside the bounds: 204; above maxzoom_served: 404, as in upscale mode', async () => {
    expect((await get(`/styles/${STYLE}/${DEEP}/0/0.png`)).status).toBe(204);
    const r = await get(`/styles/${STYLE}/${SERVED + 1}/0/0.png`);
    expect(r.status).toBe(404);
    expect(r.json()).toMatchObject({ status: 404 });
  });
});

describe('the metatile grid', () => {
  it('metatileContaining finds the metatile of the build\'s grid that holds a tile', () => {
    for (const metatile of [1, 2, 4]) {
      for (const m of enumerateMetatiles(BBOX, 14, 19, metatile)) {
        for (const t of m.tiles) expect(metatileContaining(BBOX, t.z, t.x, t.y, metatile)).toEqual(m);
      }
    }
    expect(metatileContaining(BBOX, DEEP, 0, 0, 2)).toBeUndefined();
  });
});

describe('the disk cache', () => {
  it('holds its cap, evicting the least recently used tiles first', async () => {
    const dir = await tempDir('render-cache-unit');
    dirs.push(dir);
    const cache = new RenderCache(dir, 10_000);
    const file = (n: number) => ({ rel: `v/s/1x.png/16/${n}/0`, data: Buffer.alloc(1000, n) });
    for (let n = 0; n < 8; n++) await cache.putAll([file(n)]);
    expect((await bytesUnder(dir)).bytes).toBe(8000);
    // 0 is used again: 1 and 2 are then the least recently used.
    expect((await cache.get(file(0).rel))?.equals(file(0).data)).toBe(true);
    await cache.putAll([file(8), file(9), file(10), file(11)]);
    // Over the cap: evicted down to 90 % of it before writing (3 of the oldest go for the 4 new files).
    const held = await bytesUnder(dir);
    expect(held.bytes).toBeLessThanOrEqual(10_000);
    expect(held.files).toBe(9);
    expect(await cache.get(file(1).rel)).toBeUndefined();
    expect(await cache.get(file(2).rel)).toBeUndefined();
    expect((await cache.get(file(0).rel))?.equals(file(0).data)).toBe(true);
    // A second process sharing the folder sees every tile, and a render larger than the cap is not kept.
    const other = new RenderCache(dir, 10_000, 2);
    expect((await other.get(file(11).rel))?.equals(file(11).data)).toBe(true);
    await other.putAll([{ rel: 'v/s/1x.png/16/99/0', data: Buffer.alloc(20_000) }]);
    expect((await bytesUnder(dir)).bytes).toBeLessThanOrEqual(10_000);
    // Temp files of a writer killed long ago are removed by the next scan; the cap counts whole tiles only.
    const stale = join(dir, 'v', '.0.tmp-1-abc');
    await writeFile(stale, Buffer.alloc(10));
    const old = new Date(Date.now() - 3_600_000);
    await utimes(stale, old, old);
    await new RenderCache(dir, 10_000).get('v/none');
    expect(await stat(stale).then(() => true, () => false)).toBe(false);
  });
});

describe('under load', () => {
  it('200 concurrent requests for uncached tiles: 200, or 503 with Retry-After beyond the queue, or 504 at the deadline; never a hang, the cap holds', { timeout: LONG }, async () => {
    const cache = await tempDir('render-cache-load');
    dirs.push(cache);
    const CAP_MB = 0.25;
    const QUEUE = 3;
    const DEADLINE_MS = 10_000;
    const server = await serveShallow({ renderCache: cache, renderCacheMb: CAP_MB, renderQueue: QUEUE, renderTimeoutMs: DEADLINE_MS });
    const all = [...tilesInBBox(BBOX, BAKED + 2, SERVED)];
    const tiles = all.slice(0, 200);
    expect(tiles.length).toBe(200);
    // Start the browser first (a tile far from the 200, asked until it is rendered): a cold start on a
    // loaded machine can outlast the deadline, and then no request of the burst could be a 200.
    const warm = all[all.length - 1];
    await expect.poll(async () => (await request(`${server.url}${tilePath('1x.png', warm.z, warm.x, warm.y)}`, { headers: AUTH })).status, { timeout: 120_000, interval: 500 }).toBe(200);
    let maxQueue = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const m = /^tilebake_render_queue (\d+)/m.exec((await request(`${server.url}/metrics`, { headers: AUTH })).body.toString());
        maxQueue = Math.max(maxQueue, Number(m?.[1] ?? 0));
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    const started = performance.now();
    const answers = await Promise.all(
      tiles.map(async (t) => {
        const t0 = performance.now();
        const r = await request(`${server.url}${tilePath('1x.png', t.z, t.x, t.y)}`, { headers: AUTH });
        return { r, ms: performance.now() - t0, t };
      }),
    );
    sampling = false;
    await sampler;
    const by = (status: number) => answers.filter((a) => a.r.status === status);
    expect(by(200).length + by(503).length + by(504).length).toBe(200);
    expect(by(200).length).toBeGreaterThan(0);
    expect(by(503).length).toBeGreaterThan(0);
    for (const a of [...by(503), ...by(504)]) {
      expect(a.r.headers['retry-after']).toMatch(/^\d+$/);
      expect(a.r.headers['content-type']).toMatch(/^application\/json/);
      expect(a.r.json()).toMatchObject({ status: a.r.status, error: expect.any(String) });
    }
    // The deadline bounds every answer (plus the time to send it on a loaded machine).
    for (const a of answers) expect(a.ms).toBeLessThan(DEADLINE_MS + 5000);
    expect(performance.now() - started).toBeLessThan(DEADLINE_MS + 5000);
    expect(maxQueue).toBeLessThanOrEqual(RENDER.workers + QUEUE);
    // Renders that outlived their requests finish and are cached; the cache stays within its cap.
    await expect.poll(async () => /^tilebake_render_queue (\d+)/m.exec((await request(`${server.url}/metrics`, { headers: AUTH })).body.toString())?.[1], { timeout: 60_000, interval: 200 }).toBe('0');
    expect((await bytesUnder(cache)).bytes).toBeLessThanOrEqual(CAP_MB * 1024 * 1024);
    // A refused tile is rendered when asked again.
    const again = await request(`${server.url}${tilePath('1x.png', by(503)[0].t.z, by(503)[0].t.x, by(503)[0].t.y)}`, { headers: AUTH });
    expect(again.status).toBe(200);
  });
});

describe('serve --workers 2', () => {
  let serve: ServeProcess | undefined;
  afterAll(async () => {
    if (!serve) return;
    serve.proc.kill('SIGTERM');
    await serve.exited;
  });

  it('shares one disk cache; a killed browser is replaced and the next tiles are still the baked bytes', { timeout: LONG }, async () => {
    const cache = await tempDir('render-cache-cluster');
    dirs.push(cache);
    // The first render in each worker starts its browser: with the suite's other files on the 2 cores that
    // has taken over the default 30 s deadline, which this test is not about (the concurrency test is).
    const deadlineMs = 4 * RENDER_DEFAULTS.timeoutMs;
    serve = await startServe(['--out', shallow.root, '--port', '0', '--host', '127.0.0.1', '--workers', '2', '--render-cache', cache, '--render-timeout-ms', String(deadlineMs), '--log-level', 'info'], { TILEBAKE_TOKENS: TOKEN });
    const style = deepStyle;
    const check = async (t: { z: number; x: number; y: number }, key = '1x.png') => {
      const r = await request(`${serve!.url}${tilePath(key, t.z, t.x, t.y)}`, { headers: AUTH });
      expect(r.status, r.body.toString()).toBe(200);
      expect(r.body.equals(Buffer.from(await readTile(join(style, `${key}.pmtiles`), t.z, t.x, t.y)))).toBe(true);
    };
    const tiles = [...tilesInBBox(BBOX, DEEP, DEEP)];
    // Both workers get requests (connections are spread between them); every tile is the baked one.
    await Promise.all(tiles.slice(0, 4).map((t) => check(t)));
    const browsers = chromiumBrowsersUnder(serve.proc.pid!);
    expect(browsers.length).toBeGreaterThan(0);
    for (const pid of browsers) process.kill(pid, 'SIGKILL');
    await Promise.all(tiles.slice(4).map((t) => check(t)));
    // Every tile of the metatiles asked for is on disk once, written whole by whichever worker rendered it.
    const names = (await readdir(cache, { recursive: true })).filter((n) => !n.split('/').pop()!.startsWith('.'));
    expect(names.some((n) => n.endsWith(`/1x.png/${tiles[0].z}/${tiles[0].x}/${tiles[0].y}`))).toBe(true);

    // Browsers killed while renders are in flight: every request still gets an answer in time, a tile
    // (the render retried on a fresh browser) or a JSON 5xx, and the server keeps rendering.
    const deeper = [...tilesInBBox(BBOX, DEEP + 1, DEEP + 1)].slice(0, 8);
    const t0 = performance.now();
    const inFlight = Promise.all(deeper.map((t) => request(`${serve!.url}${tilePath('1x.png', t.z, t.x, t.y)}`, { headers: AUTH })));
    await new Promise((r) => setTimeout(r, 300));
    for (const pid of chromiumBrowsersUnder(serve.proc.pid!)) process.kill(pid, 'SIGKILL');
    for (const r of await inFlight) {
      if (r.status === 200) expect(r.headers['content-type']).toBe('image/png');
      else expect([r.status, r.json().status]).toEqual([expect.any(Number), r.status]);
      expect(r.status === 200 || r.status >= 500).toBe(true);
    }
    expect(performance.now() - t0).toBeLessThan(deadlineMs + 5000);
    // A render after that (@2x: nothing of it cached) is again the baked tile.
    await check(tiles[0], '2x.png');
  });
});
