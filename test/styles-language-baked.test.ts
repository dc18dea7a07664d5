// A language variant baked and served: osm-bright and "osm-bright-it" (the same style file with
// "language": "it") over the Monaco sample at z14, one metatile each, built by the CLI. The variant's
// baked tiles show the Italian names where the tiles have them and equal live MapLibre GL JS drawing
// style.json?language=it (≥ 99.9 % of pixels, the view sized and placed as the build's page renders a
// metatile); static maps ?language=it are composed from the variant.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { currentVersionDir } from '../lib/build-version.ts';
import { readManifestOrEmpty, type Manifest } from '../lib/manifest.ts';
import { enumerateMetatiles } from '../lib/metatiles.ts';
import { hashToken } from '../static-server/auth.ts';
import { startServer, type RunningServer } from '../static-server/serve.ts';
import { request, serveOptions } from './fixtures/server/helpers.ts';
import { equalShare, liveTile, MIN_EQUAL_SHARE, pixels } from './fixtures/styles/baked-live.ts';
import { openClient, type Client } from './fixtures/styles/client.ts';
import { ROOT } from './fixtures/styles/output.ts';
import { cliOk } from './fixtures/cli.ts';

const TOKEN = randomBytes(18).toString('base64url');
const SAMPLE = join(ROOT, 'data/sample');
const Z = 14;
const METATILE = 4;
const MARGIN = 64;
const VARIANT = 'osm-bright-it';
/** Share of a tile's pixels baked and live must have equal. */
const MIN_EQUAL = MIN_EQUAL_SHARE;
/** Pixels an Italian label changes at least in the tile compared (its names differ from the Latin ones there). */
const MIN_LABEL_PIXELS = 200;
const IDLE_TIMEOUT_MS = 90_000;

let dir: string;
let server: RunningServer;
let client: Client;
let manifest: Manifest;
let config: { styles: Record<string, Record<string, unknown>> } & Record<string, unknown>;

/** `tilebake build` of `c` (written to config.json) with the CLI; resolves with its log. */
async function build(c: typeof config): Promise<string> {
  await writeFile(join(dir, 'config.json'), JSON.stringify(c));
  const r = await cliOk(['build', '--config', join(dir, 'config.json')], { quiet: false, env: { CI: '1', TILEBAKE_QUIET: '' } });
  return `${r.stdout}${r.stderr}`;
}

const get = (path: string) => request(`${server.url}${path}`, { headers: { authorization: `Bearer ${TOKEN}` } });

/** A baked 1x tile's pixels. */
async function baked(style: string, x: number, y: number): Promise<Buffer> {
  const r = await get(`/styles/${style}/${Z}/${x}/${y}.png`);
  expect(r.status).toBe(200);
  return pixels(r.body);
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tilebake-language-'));
  const style = { style: join(SAMPLE, 'styles/osm-bright/style.json'), tileset: 'openmaptiles', minzoom: Z, maxzoom: Z, scales: [1], formats: ['png'] };
  config = {
    out: join(dir, 'out'),
    tilesets: { openmaptiles: join(SAMPLE, 'monaco_omt.mbtiles') },
    styles: { 'osm-bright': style, [VARIANT]: { ...style, language: 'it' } },
    fonts: join(SAMPLE, 'fonts'),
    render: { metatile: METATILE, margin: MARGIN },
  };
  await build(config);
  manifest = await readManifestOrEmpty((await currentVersionDir(join(dir, 'out')))!.dir);
  server = await startServer(serveOptions(join(dir, 'out')), { tokenHashes: [hashToken(TOKEN)] });
  client = await openClient();
}, 600_000);

afterAll(async () => {
  await client?.close();
  await server?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('a style baked in a language', () => {
  it('is an ordinary style entry that records its language and style file', () => {
    const base = manifest.styles['osm-bright'];
    const it = manifest.styles[VARIANT];
    expect(it).toMatchObject({ language: 'it', styleFile: base.styleFile, maxzoom: Z });
    expect(base.language).toBeUndefined();
    // The sample's tiles carry OpenMapTiles' languages (their TileJSON lists name:xx).
    expect(base.languages).toEqual(expect.arrayContaining(['de', 'en', 'it', 'ja', 'zh']));
    expect(Object.keys(it.archives)).toEqual(['1x.png']);
  });

  it('bakes the Italian names, and its tiles equal live MapLibre GL JS with style.json?language=it', async () => {
    const metas = [...enumerateMetatiles(manifest.styles[VARIANT].bounds, Z, Z, METATILE)];
    expect(metas).toHaveLength(1);
    const [meta] = metas;
    // The tile whose labels change most.
    let best = { tile: meta.tiles[0], differing: -1 };
    for (const tile of meta.tiles) {
      const [a, b] = [await baked('osm-bright', tile.x, tile.y), await baked(VARIANT, tile.x, tile.y)];
      const differing = Math.round((1 - equalShare(a, b)) * (a.length / 4));
      if (differing > best.differing) best = { tile, differing };
    }
    expect(best.differing).toBeGreaterThanOrEqual(MIN_LABEL_PIXELS);

    const live = async (query: string) =>
      (await liveTile(client, { style: `${server.url}/styles/osm-bright/style.json${query}`, server: server.url, token: TOKEN, meta, tile: best.tile, margin: MARGIN, timeoutMs: IDLE_TIMEOUT_MS })).pixels;
    const [liveIt, livePlain] = [await live('?language=it'), await live('')];
    const bakedIt = await baked(VARIANT, best.tile.x, best.tile.y);
    const bakedPlain = await baked('osm-bright', best.tile.x, best.tile.y);
    const shares = { it: equalShare(liveIt, bakedIt), plain: equalShare(livePlain, bakedPlain), crossed: equalShare(liveIt, bakedPlain) };
    expect(shares.it, JSON.stringify(shares)).toBeGreaterThanOrEqual(MIN_EQUAL);
    expect(shares.plain, JSON.stringify(shares)).toBeGreaterThanOrEqual(MIN_EQUAL);
    // The comparison sees labels: live Italian against the style's own baked tile falls short.
    expect(shares.crossed, JSON.stringify(shares)).toBeLessThan(MIN_EQUAL);
    expect(client.consoleErrors).toEqual([]);
  }, 2 * IDLE_TIMEOUT_MS + 60_000);

  it('static maps ?language=it are composed from the variant; rendered.json names its tiles', async () => {
    const view = `${manifest.styles[VARIANT].center.slice(0, 2).join(',')},${Z}/300x200.png`;
    const [own, variant, asked] = [await get(`/styles/osm-bright/static/${view}`), await get(`/styles/${VARIANT}/static/${view}`), await get(`/styles/osm-bright/static/${view}?language=it`)];
    expect([own.status, variant.status, asked.status]).toEqual([200, 200, 200]);
    expect(asked.body.equals(variant.body)).toBe(true);
    expect(asked.body.equals(own.body)).toBe(false);
    expect((await get(`/styles/osm-bright/rendered.json?language=it`)).json().tiles).toEqual([`${server.url}/styles/${VARIANT}/{z}/{x}/{y}.png`]);
    expect((await get(`/styles/osm-bright/static/${view}?language=de`)).json()).toMatchObject({ status: 400, baked: { it: VARIANT } });
    // An ordinary style: a WMTS layer of its own.
    expect((await get('/styles/wmts.xml')).body.toString()).toContain(`<ows:Identifier>${VARIANT}</ows:Identifier>`);
  });

  it('a rebuild with another language re-renders the variant only', async () => {
    const log = await build({ ...config, styles: { ...config.styles, [VARIANT]: { ...config.styles[VARIANT], language: 'fr' } } });
    expect(log).toMatch(/render osm-bright @1x: re-rendered 0 of 1 metatiles \(unchanged/);
    expect(log).toMatch(new RegExp(`render ${VARIANT} @1x: re-rendered 1 of 1 metatiles`));
  }, 600_000);
});
