/**
 * The sample's hillshade (`"hillshade": {}` in data/sample/config.json, built with the sample's
 * elevation stage: the shared fixture) served like any raster tileset, and compared with GDAL's own
 * `gdaldem hillshade` of the same box; colour relief from the same index with a ramp file.
 */
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { flatShade } from '../lib/elevation/dem-processing.ts';
import { ElevationIndex } from '../lib/elevation/reader.ts';
import { loadGdal } from '../lib/gdal.ts';
import { readManifestOrEmpty } from '../lib/manifest.ts';
import { FileRangeSource } from '../lib/storage.ts';
import { lonLatToTile, pixelCentreAxes, tileBounds, tileMercatorGeoTransform } from '../lib/tile-math.ts';
import { ELEVATION_INDEX_PATH, buildElevation } from '../pipeline/elevation/stage.ts';
import { hashToken } from '../static-server/auth.ts';
import { startServer, type RunningServer } from '../static-server/serve.ts';
import { serveOptions } from './fixtures/server/helpers.ts';
import { buildSample } from './fixtures/server/sample.ts';
import { referenceReader, referenceTile } from './pmtiles-helpers.ts';
import { currentVersionDir } from '../lib/build-version.ts';

process.env.TILEBAKE_QUIET = '1';
const SAMPLE_HGT = join(import.meta.dirname, '../data/sample/dem/N43E007.hgt');
const TOKEN = 'hillshade-test-token';
const AUTH = { authorization: `Bearer ${TOKEN}` };
const SIZE = 256;
/** Mountains (Mercantour, Monaco's hills) at z10 and z11. */
const MOUNTAINS = [[10, 532, 372], [11, 1066, 746], [11, 1064, 745]] as const;
/** Open sea south of Monaco, inside the SRTM tile (its posts there are 0 m). */
const SEA = { z: 11, ...lonLatToTile(7.4, 43.35, 11) };
const DEFAULTS = { azimuth: 315, altitude: 45, zfactor: 1, method: 'standard', algorithm: 'Horn' } as const;

let root: string;
let version: string;
let server: RunningServer;
beforeAll(async () => {
  root = await buildSample(['vector', 'elevation']);
  version = (await currentVersionDir(root))!.dir;
  const logStream = new Writable({ write: (_c, _e, cb) => cb() });
  server = await startServer(serveOptions(root), { tokenHashes: [hashToken(TOKEN)], logStream });
});
afterAll(async () => {
  await server?.close();
  await rm(root, { recursive: true, force: true });
});

/** The served tile's pixels (RGBA as sharp decodes it: a grey-alpha PNG has R = G = B = grey), or null for 204. */
async function tilePixels(id: string, z: number, x: number, y: number): Promise<{ data: Buffer; channels: number } | null> {
  const r = await fetch(`${server.url}/data/${id}/${z}/${x}/${y}.png`, { headers: AUTH });
  if (r.status === 204) return null;
  expect(r.status, `${id} ${z}/${x}/${y}`).toBe(200);
  expect(r.headers.get('content-type')).toBe('image/png');
  const { data, info } = await sharp(Buffer.from(await r.arrayBuffer())).raw().toBuffer({ resolveWithObject: true });
  expect([info.width, info.height]).toEqual([SIZE, SIZE]);
  expect(info.channels).toBe(4);
  return { data, channels: info.channels };
}

/** Pearson correlation of two pixel lists. */
function correlation(a: number[], b: number[]): number {
  const n = a.length;
  const ma = a.reduce((s, v) => s + v, 0) / n, mb = b.reduce((s, v) => s + v, 0) / n;
  let ab = 0, aa = 0, bb = 0;
  for (let i = 0; i < n; i++) {
    ab += (a[i] - ma) * (b[i] - mb);
    aa += (a[i] - ma) ** 2;
    bb += (b[i] - mb) ** 2;
  }
  return ab / Math.sqrt(aa * bb);
}

/** GDAL warps `ds` onto tile z/x/y's grid (EPSG:3857, bilinear), grown by `buffer` px; returns the MEM dataset. */
async function warpToTile(ds: import('gdal-async').Dataset, z: number, x: number, y: number, buffer: number) {
  const gdal = await loadGdal();
  const gt = tileMercatorGeoTransform(z, x, y, SIZE, buffer);
  const n = SIZE + 2 * buffer;
  const te = [gt[0], gt[3] + n * gt[5], gt[0] + n * gt[1], gt[3]].map(String);
  return gdal.warp('tile', null, [ds], ['-of', 'MEM', '-t_srs', 'EPSG:3857', '-te', ...te, '-ts', String(n), String(n), '-r', 'bilinear']);
}

describe('the sample hillshade', () => {
  it('is a raster tileset of the elevation stage, z0 to the DEM resolution (z11), with TileJSON', async () => {
    const m = await readManifestOrEmpty(version);
    expect(m.tilesets.hillshade).toMatchObject({ kind: 'raster', format: 'png', tileSize: SIZE, minzoom: 0, maxzoom: 11, archive: 'data/hillshade.pmtiles' });
    expect(m.elevation?.tilesets).toContain('hillshade');
    const r = await fetch(`${server.url}/data/hillshade.json`, { headers: AUTH });
    expect(r.status).toBe(200);
    const tj = await r.json();
    expect(tj).toMatchObject({ tilejson: '3.0.0', format: 'png', tileSize: SIZE, minzoom: 0, maxzoom: 11, tiles: [`${server.url}/data/hillshade/{z}/{x}/{y}.png`] });
    expect(tj.attribution).toContain('SRTM');
    expect(tj.vector_layers).toBeUndefined();
    // Outside the DEM: no tile.
    expect((await fetch(`${server.url}/data/hillshade/11/1000/700.png`, { headers: AUTH })).status).toBe(204);
  });

  it('is a WMTS layer, in the capabilities of every layer and in its own', async () => {
    for (const path of ['/styles/wmts.xml', '/data/hillshade/wmts.xml']) {
      const r = await fetch(`${server.url}${path}`, { headers: AUTH });
      expect(r.status, path).toBe(200);
      const xml = await r.text();
      const layer = /<Layer>(?:(?!<\/Layer>)[\s\S])*<ows:Identifier>hillshade<\/ows:Identifier>[\s\S]*?<\/Layer>/.exec(xml)?.[0];
      expect(layer, path).toBeDefined();
      expect(layer).toContain('<Format>image/png</Format>');
      expect(layer).toContain(`template="${server.url}/data/hillshade/{TileMatrix}/{TileCol}/{TileRow}.png"`);
    }
  });

  it('correlates ≥ 0.95 with gdaldem hillshade of the DEM warped to the tile (and of the geographic DEM with -s 111120), grey for grey', async () => {
    const gdal = await loadGdal();
    const dem = gdal.open(SAMPLE_HGT);
    // gdaldem's own hillshade of the geographic DEM, degrees scaled by 111120 m.
    const geographic = gdal.dem('', dem, 'hillshade', ['-of', 'MEM', '-s', '111120']);
    geographic.bands.get(1).noDataValue = 0;
    for (const [z, x, y] of MOUNTAINS) {
      const ours = (await tilePixels('hillshade', z, x, y))!;
      // 1. The DEM warped to the tile's grid with a pixel of margin, shaded at the tile's latitude.
      const [, s, , n] = tileBounds(z, x, y);
      const warped = await warpToTile(dem, z, x, y, 1);
      const scale = Math.cos((((s + n) / 2) * Math.PI) / 180);
      const shaded = gdal.dem('', warped, 'hillshade', ['-of', 'MEM', '-s', String(scale)]);
      const ref = shaded.bands.get(1).pixels.read(1, 1, SIZE, SIZE) as Uint8Array;
      // 2. The geographic hillshade warped to the tile.
      const geo = (await warpToTile(geographic, z, x, y, 0)).bands.get(1).pixels.read(0, 0, SIZE, SIZE) as Uint8Array;
      const a: number[] = [], b: number[] = [], c: number[] = [], d: number[] = [];
      for (let i = 0; i < SIZE * SIZE; i++) {
        if (ours.data[i * 4 + 3] !== 255) continue;
        const grey = ours.data[i * 4];
        expect(ours.data[i * 4 + 1]).toBe(grey);
        if (ref[i] !== 0) {
          a.push(grey);
          b.push(ref[i]);
        }
        if (geo[i] !== 0) {
          c.push(grey);
          d.push(geo[i]);
        }
      }
      expect(a.length, `${z}/${x}/${y} pixels compared`).toBeGreaterThan(SIZE * SIZE * 0.3);
      expect(correlation(a, b), `${z}/${x}/${y} vs warped DEM`).toBeGreaterThanOrEqual(0.95);
      expect(correlation(c, d), `${z}/${x}/${y} vs geographic -s 111120`).toBeGreaterThanOrEqual(0.95);
      // Correlation alone misses a wrong slope scale (projected metres taken as ground metres still
      // correlate 0.997): the grey levels themselves agree, within 3 on average (0.2-2.0 measured; 7.5-12.5 with -s 1).
      const meanDiff = a.reduce((sum, v, i) => sum + Math.abs(v - b[i]), 0) / a.length;
      expect(meanDiff, `${z}/${x}/${y} mean |ours - gdaldem|`).toBeLessThanOrEqual(3);
    }
  });

  it('is flat grey over the flat sea', async () => {
    const sea = (await tilePixels('hillshade', SEA.z, SEA.x, SEA.y))!;
    const flat = await flatShade(DEFAULTS);
    const values = new Set<string>();
    for (let i = 0; i < SIZE * SIZE; i++) values.add([...sea.data.subarray(i * 4, i * 4 + 4)].join(','));
    expect([...values]).toEqual([`${flat},${flat},${flat},255`]);
  });
});

describe('colour relief', () => {
  let dir: string;
  beforeAll(async () => {
    // The fixture's index (same DEM and precision: kept, not rebuilt) in a folder of its own.
    dir = await mkdtemp(join(tmpdir(), 'tilebake-relief-'));
    await mkdir(join(dir, 'data'));
    await copyFile(join(version, ELEVATION_INDEX_PATH), join(dir, ELEVATION_INDEX_PATH));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('follows the ramp file: red is height / 10 m', async () => {
    const ramp = join(dir, 'ramp.txt');
    await writeFile(ramp, 'nv 0 0 0 0\n0 0 0 255\n2550 255 0 255\n');
    const s = await buildElevation(dir, [{ path: SAMPLE_HGT }], {
      precision: 0.1, terrain: false, relief: { id: 'relief', format: 'png', minzoom: 10, maxzoom: 10, ramp, match: 'interpolate' },
    });
    expect(s.indexKept).toBe(true);
    expect(s.relief?.tiles).toBeGreaterThan(2);
    // The same index, settings and ramp: the archive is kept; another ramp makes it again.
    const again = await buildElevation(dir, [{ path: SAMPLE_HGT }], { precision: 0.1, terrain: false, relief: { id: 'relief', format: 'png', minzoom: 10, maxzoom: 10, ramp, match: 'interpolate' } });
    expect(again.relief).toMatchObject({ kept: true, computed: 0 });
    const other = join(dir, 'other-ramp.txt');
    await writeFile(other, 'nv 0 0 0 0\n0 0 0 255\n2550 255 0 254\n');
    const changed = await buildElevation(dir, [{ path: SAMPLE_HGT }], { precision: 0.1, terrain: false, relief: { id: 'relief', format: 'png', minzoom: 10, maxzoom: 10, ramp: other, match: 'interpolate' } });
    expect(changed.relief?.kept).toBe(false);
    await buildElevation(dir, [{ path: SAMPLE_HGT }], { precision: 0.1, terrain: false, relief: { id: 'relief', format: 'png', minzoom: 10, maxzoom: 10, ramp, match: 'interpolate' } });
    const m = await readManifestOrEmpty(dir);
    expect(m.tilesets.relief).toMatchObject({ kind: 'raster', format: 'png', tileSize: SIZE, minzoom: 10, maxzoom: 10 });
    const [z, x, y] = MOUNTAINS[0];
    const reader = await referenceReader(join(dir, m.tilesets.relief.archive));
    const idx = await ElevationIndex.open(await FileRangeSource.open(join(dir, ELEVATION_INDEX_PATH)), 64 << 20);
    try {
      const png = await referenceTile(reader.pm, z, x, y);
      expect(png).toBeDefined();
      const { data, info } = await sharp(png!).raw().toBuffer({ resolveWithObject: true });
      expect(info.channels).toBe(4);
      const { lats, lons } = pixelCentreAxes(z, x, y, SIZE);
      const heights = new Float64Array(SIZE * SIZE);
      await idx.sampleGrid(lats, lons, heights);
      let checked = 0, top = 0;
      for (let i = 0; i < heights.length; i += 7) {
        const h = heights[i];
        if (h !== h) {
          expect(data[i * 4 + 3]).toBe(0);
          continue;
        }
        expect(Math.abs(data[i * 4] - Math.min(255, Math.max(0, h / 10))), `pixel ${i} at ${h} m`).toBeLessThanOrEqual(1);
        expect(data[i * 4 + 3]).toBe(255);
        checked++;
        top = Math.max(top, h);
      }
      expect(checked).toBeGreaterThan(3000);
      expect(top).toBeGreaterThan(1500);
    } finally {
      await idx.close();
      await reader.close();
    }
  });

  it('a bad ramp stops the build before any work, naming the file and line', async () => {
    const ramp = join(dir, 'bad-ramp.txt');
    await writeFile(ramp, '0 0 0 255\n1000 brown-ish\n');
    const before = await readFile(join(dir, 'manifest.json'), 'utf8');
    const run = buildElevation(dir, [{ path: SAMPLE_HGT }], { precision: 0.1, terrain: false, relief: { id: 'relief', format: 'png', ramp, match: 'interpolate' } });
    await expect(run).rejects.toThrow(`${ramp}:2: "brown-ish" is not a colour GDAL knows`);
    expect(await readFile(join(dir, 'manifest.json'), 'utf8')).toBe(before);
  });
});
