// A style over two tilesets: osm-bright on the Monaco sample's OpenMapTiles tiles plus the user's points
// from a GeoPackage (Monaco's OSM points through GDAL, its own tileset), one style file whose second
// source is `mbtiles://{city}`. Baked by the render stage at z14 (2 × 4 tiles, one per metatile), its tiles
// equal live MapLibre GL JS drawing the served style.json (≥ 99.9 % of pixels, as the basemap's baked
// tiles do). Then one point's attribute is edited in the GeoPackage (by GDAL): the rebuild re-renders
// exactly the metatiles whose view loads the vector tiles that changed, and the tile over the point
// shows the change.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { copyFile, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { currentVersionDir } from '../lib/build-version.ts';
import { readManifestOrEmpty, type Manifest } from '../lib/manifest.ts';
import { enumerateMetatiles, type Metatile } from '../lib/metatiles.ts';
import { LocalStore } from '../lib/storage.ts';
import { tileBounds } from '../lib/tile-math.ts';
import { build } from '../pipeline/build.ts';
import { changedTiles, tilesetArchiveRef } from '../pipeline/render/archive.ts';
import { metatilesToRerender } from '../pipeline/render/selection.ts';
import { hashToken } from '../static-server/auth.ts';
import { startServer, type RunningServer } from '../static-server/serve.ts';
import { gisSources, namedPoints, placeInTile, type NamedPoint } from './fixtures/gis.ts';
import { request, serveOptions } from './fixtures/server/helpers.ts';
import { equalShare, liveTile, MIN_EQUAL_SHARE, pixels } from './fixtures/styles/baked-live.ts';
import { openClient, type Client } from './fixtures/styles/client.ts';
import { OSM_BRIGHT, readTile, SAMPLE, tempDir, writeConfig } from './render-helpers.ts';

const TOKEN = randomBytes(18).toString('base64url');
const Z = 14;
const METATILE = 1;
const MARGIN = 64;
const STYLE = 'bright-city';
const IDLE_TIMEOUT_MS = 90_000;
const LONG = 600_000;

let dir: string;
let out: string;
let gpkg: string;
let server: RunningServer | undefined;
let client: Client | undefined;
let lines: string[] = [];
const log = vi.spyOn(process.stderr, 'write');
let config: Awaited<ReturnType<typeof writeConfig>>['config'];
/** The point edited, in the box's south-east tile. */
let point: NamedPoint;

/**
 * The box rendered: the point's z14 tile, the one west of it and the three rows north of both. The
 * vector tiles are 512 px (z13 under the z14 rasters): the rows over the point's z13 tile and the one
 * whose margin reaches it re-render, the rows further north do not.
 */
function boxOver(p: NamedPoint): [number, number, number, number] {
  const at = placeInTile(p.lon, p.lat, Z);
  const [w, , , n] = tileBounds(Z, at.x - 1, at.y - 3);
  const [, s, e] = tileBounds(Z, at.x, at.y);
  const eps = 1e-7;
  return [w + eps, s + eps, e - eps, n - eps];
}

/** osm-bright with the city's points drawn over it: a small circle each, a large red one on top where OSM names a `place`. */
async function writeStyle(file: string): Promise<void> {
  const style = JSON.parse(await readFile(OSM_BRIGHT, 'utf8')) as { sources: Record<string, unknown>; layers: unknown[]; sprite: string };
  style.sources.city = { type: 'vector', url: 'mbtiles://{city}' };
  style.sprite = join(SAMPLE, 'styles/osm-bright/sprite');
  style.layers.push(
    { id: 'city-points', type: 'circle', source: 'city', 'source-layer': 'pois', paint: { 'circle-radius': 3, 'circle-color': '#2b83ba' } },
    { id: 'city-places', type: 'circle', source: 'city', 'source-layer': 'pois', filter: ['has', 'place'], paint: { 'circle-radius': 8, 'circle-color': '#d7191c', 'circle-stroke-color': '#ffffff', 'circle-stroke-width': 1.5 } },
  );
  await writeFile(file, JSON.stringify(style));
}

const get = (path: string) => request(`${server!.url}${path}`, { headers: { authorization: `Bearer ${TOKEN}` } });

/** The current version's folder and manifest. */
async function version(): Promise<{ dir: string; manifest: Manifest }> {
  const v = (await currentVersionDir(out))!;
  return { dir: v.dir, manifest: await readManifestOrEmpty(v.dir) };
}

beforeAll(async () => {
  dir = await tempDir('gis-style');
  out = join(dir, 'out');
  gpkg = join(dir, 'city.gpkg');
  await copyFile((await gisSources()).gpkg, gpkg);
  // A named point without a `place`, well inside the box.
  point = (await namedPoints(gpkg, 'points')).find((p) => p.fields.place === null && p.lon > 7.418 && p.lon < 7.432 && p.lat > 43.733 && p.lat < 43.74)!;
  await writeStyle(join(dir, 'style.json'));
  log.mockImplementation((chunk: string | Uint8Array) => (lines.push(String(chunk)), true));
  ({ config } = await writeConfig(dir, 'config.json', {
    out,
    tilesets: {
      openmaptiles: { source: join(SAMPLE, 'monaco_omt.mbtiles'), attribution: '© OpenMapTiles © OpenStreetMap contributors' },
      city: { source: gpkg, minzoom: 12, maxzoom: Z, attribution: 'City of Monaco (OSM)', layers: { pois: { layer: 'points', fields: ['name', 'place'] } } },
    },
    styles: { [STYLE]: { style: join(dir, 'style.json'), tileset: 'openmaptiles', minzoom: Z, maxzoom: Z, bbox: boxOver(point), scales: [1], formats: ['png'] } },
    fonts: join(SAMPLE, 'fonts'),
    render: { metatile: METATILE, margin: MARGIN },
  }));
  await build(config, { out, workers: 1 });
}, LONG);

afterAll(async () => {
  log.mockRestore();
  await client?.close();
  await server?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe.sequential('a style drawing the user\'s layer over osm-bright', () => {
  it('is one style over both tilesets: prepared with one source each, credited to both', async () => {
    expect(point).toBeDefined();
    const { dir: v, manifest } = await version();
    const prepared = JSON.parse(await readFile(join(v, manifest.styles[STYLE].style), 'utf8')) as { sources: Record<string, { url: string }> };
    expect(Object.fromEntries(Object.entries(prepared.sources).map(([k, s]) => [k, s.url]))).toEqual({ openmaptiles: 'tilebake://data/openmaptiles.json', city: 'tilebake://data/city.json' });
    expect(manifest.styles[STYLE].attribution).toBe('© OpenMapTiles © OpenStreetMap contributors | City of Monaco (OSM)');
    expect(lines.join('')).toMatch(new RegExp(`render ${STYLE} @1x: re-rendered (\\d+) of \\1 metatiles \\(first build\\)`));
  });

  it('bakes tiles equal to live MapLibre GL JS drawing the served style.json', async () => {
    server = await startServer(serveOptions(out), { tokenHashes: [hashToken(TOKEN)] });
    client = await openClient();
    const { manifest } = await version();
    const metas = [...enumerateMetatiles(manifest.styles[STYLE].bounds, Z, Z, METATILE)];
    const at = placeInTile(point.lon, point.lat, Z);
    const meta = metas.find((m) => m.tiles.some((t) => t.x === at.x && t.y === at.y))!;
    const tile = meta.tiles.find((t) => t.x === at.x && t.y === at.y)!;
    const { pixels: live, run } = await liveTile(client, { style: `${server.url}/styles/${STYLE}/style.json`, server: server.url, token: TOKEN, meta, tile, margin: MARGIN, timeoutMs: IDLE_TIMEOUT_MS });
    expect(run.requested.some((u) => u.includes('/data/city/'))).toBe(true);
    const r = await get(`/styles/${STYLE}/${Z}/${at.x}/${at.y}.png`);
    expect(r.status).toBe(200);
    const share = equalShare(live, await pixels(r.body));
    expect(share).toBeGreaterThanOrEqual(MIN_EQUAL_SHARE);
    expect(client.consoleErrors).toEqual([]);
  }, 2 * IDLE_TIMEOUT_MS);

  it('an edit of one point in the GeoPackage re-renders only the metatiles over the tiles that changed', async () => {
    const before = await version();
    const at = placeInTile(point.lon, point.lat, Z);
    await promisify(execFile)('ogrinfo', [gpkg, '-sql', `UPDATE points SET place = 'village' WHERE osm_id = '${point.fields.osm_id}'`]);
    lines = [];
    await build(config, { out, workers: 1 });
    const after = await version();
    const text = lines.join('');
    expect(text).toContain('vector openmaptiles: source unchanged, archive reused from the previous build');
    const changed = await changedTiles(tilesetArchiveRef(new LocalStore(before.dir), before.manifest.tilesets.city), tilesetArchiveRef(new LocalStore(after.dir), after.manifest.tilesets.city));
    // The point's tile at z12–14 (and neighbours whose buffer holds it).
    for (let z = 12; z <= Z; z++) {
      const t = placeInTile(point.lon, point.lat, z);
      expect(changed).toContain(`${z}/${t.x}/${t.y}`);
    }
    expect(changed.size).toBeLessThanOrEqual(3 * 4);
    const metas: Metatile[] = [...enumerateMetatiles(after.manifest.styles[STYLE].bounds, Z, Z, METATILE)];
    expect(metas).toHaveLength(8);
    const expected = metatilesToRerender(metas, MARGIN, [{ grid: { minzoom: 12, maxzoom: Z, tileSize: 512 }, changed }]);
    expect(expected.length).toBeGreaterThan(0);
    expect(expected.length).toBeLessThan(metas.length);
    expect(text).toContain(`render ${STYLE} @1x: re-rendered ${expected.length} of ${metas.length} metatiles (data: ${changed.size} source tiles changed)`);
    // The baked tile over the point shows the change (a red circle on it now).
    const archive = (v: string) => join(v, after.manifest.styles[STYLE].archives['1x.png'].archive);
    const [a, b] = [await readTile(archive(before.dir), Z, at.x, at.y), await readTile(archive(after.dir), Z, at.x, at.y)];
    expect(equalShare(await pixels(Buffer.from(a)), await pixels(Buffer.from(b)))).toBeLessThan(1);
  }, LONG);
});
