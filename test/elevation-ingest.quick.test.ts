import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import gdal from 'gdal-async';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bilinear } from '../lib/elevation/bilinear.ts';
import { ElevationIndex } from '../lib/elevation/reader.ts';
import { readManifestOrEmpty } from '../lib/manifest.ts';
import { FileRangeSource } from '../lib/storage.ts';
import { buildElevation, ELEVATION_INDEX_PATH } from '../pipeline/elevation/stage.ts';
import { readGdal } from '../pipeline/elevation/gdal.ts';
import { probeDem, readDem } from '../pipeline/elevation/sources.ts';

process.env.TILEBAKE_QUIET = '1';
const FIX = join(import.meta.dirname, 'fixtures/dem');
const HGT = join(FIX, 'N43E006.hgt');
const SIDE = 1201;

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tilebake-ingest-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('SRTM .hgt, .hgt.gz and .zip through GDAL (SRTMHGT, /vsigzip/, /vsizip/)', () => {
  it('posts on whole degrees from GDAL\'s half-post-out geotransform, voids as NaN, the same grid from each format', async () => {
    const raw = Buffer.from(await readFile(HGT));
    const original = readHgtValue(raw, 600, 700);
    // Punch voids into a copy of the real tile.
    const voids = [[0, 0], [600, 700], [1200, 1200]];
    for (const [r, c] of voids) raw.writeInt16BE(-32768, (r * SIDE + c) * 2);
    const src = join(dir, 'src');
    await mkdir(src);
    await writeFile(join(src, 'N43E006.hgt'), raw);
    await writeFile(join(src, 'N43E006.hgt.gz'), gzipSync(raw));
    // Zips written by GDAL (SRTMHGT's CreateCopy into /vsizip/): a tile at the top and one in a folder.
    const copy = gdal.open(join(src, 'N43E006.hgt'));
    for (const inside of ['N43E006.hgt.zip/N43E006.hgt', 'srtm.zip/srtm/N43E006.hgt']) {
      gdal.drivers.get('SRTMHGT').createCopy(`/vsizip/${join(src, inside)}`, copy).close();
    }
    // GDAL's own view: the geotransform is half a post out (area convention) for point data.
    expect(copy.getMetadata().AREA_OR_POINT).toBe('Point');
    expect(copy.geoTransform![0]).toBeCloseTo(6 - 0.5 / 1200, 12);
    expect(copy.geoTransform![3]).toBeCloseTo(44 + 0.5 / 1200, 12);
    copy.close();
    const before = (await readdir(src)).sort();
    let first: Float32Array | undefined;
    for (const f of ['N43E006.hgt', 'N43E006.hgt.gz', 'N43E006.hgt.zip', 'srtm.zip']) {
      const path = join(src, f);
      const g = await readDem({ path });
      expect(g, f).toMatchObject({ file: path, originLat: 44, originLon: 6, rows: SIDE, cols: SIDE, footprint: [6, 43, 7, 44], integer: true });
      expect(g.stepLat).toBe(1 / 1200);
      expect(g.stepLon).toBe(1 / 1200);
      expect(await probeDem({ path })).toEqual({ file: path, originLat: 44, originLon: 6, stepLat: 1 / 1200, stepLon: 1 / 1200, rows: SIDE, cols: SIDE, footprint: [6, 43, 7, 44] });
      for (const [r, c] of voids) expect(g.data[r * SIDE + c]).toBeNaN();
      // Row 0 is the north edge, column 0 the west edge: the file's posts in order.
      expect(g.data[1]).toBe(readHgtValue(raw, 0, 1));
      expect(g.data[600 * SIDE + 701]).toBe(readHgtValue(raw, 600, 701));
      expect(g.data[1200 * SIDE + 1199]).toBe(readHgtValue(raw, 1200, 1199));
      first ??= g.data;
      expect(sameValues(g.data, first), f).toBe(true);
    }
    expect(original).not.toBe(-32768);
    // GDAL wrote nothing beside the inputs (no .aux.xml, no .gz.properties).
    expect((await readdir(src)).sort()).toEqual(before);
    // A tile south of the equator and west of Greenwich: its corner from the name.
    await writeFile(join(src, 'S12W077.hgt'), raw);
    expect((await probeDem({ path: join(src, 'S12W077.hgt') })).footprint).toEqual([-77, -12, -76, -11]);
  });

  it('a wrong size, a name without a tile, a damaged .gz or .zip, a zip without .hgt and a missing file: errors naming the file', async () => {
    const raw = await readFile(HGT);
    const bad = join(dir, 'bad');
    await mkdir(bad);
    const at = (name: string) => join(bad, name);
    await writeFile(at('N43E006.hgt'), raw.subarray(0, 1000));
    await writeFile(at('dem.hgt'), raw);
    await writeFile(at('N44E006.hgt.gz'), gzipSync(raw.subarray(0, 5000)));
    const flipped = gzipSync(raw);
    for (let i = 100_000; i < 100_400; i++) flipped[i] ^= 0x5a;
    await writeFile(at('N45E006.hgt.gz'), flipped);
    const src = gdal.open(HGT);
    gdal.drivers.get('SRTMHGT').createCopy(`/vsizip/${at('N46E006.hgt.zip')}/N46E006.hgt`, src).close();
    gdal.drivers.get('AAIGrid').createCopy(`/vsizip/${at('asc.zip')}/N46E006.asc`, src).close();
    src.close();
    const zip = await readFile(at('N46E006.hgt.zip'));
    await writeFile(at('cut.zip'), zip.subarray(0, 4000));
    const rejects = (name: string) => expect(readDem({ path: at(name) })).rejects;
    await rejects('N43E006.hgt').toThrow(/^\S+N43E006\.hgt: 1000 bytes: not an SRTM tile \(GDAL reads 1201 × 1201/);
    await rejects('dem.hgt').toThrow(/dem\.hgt: cannot tell the tile from the file name/);
    await rejects('N44E006.hgt.gz').toThrow(/N44E006\.hgt\.gz: 5000 bytes once decompressed \(or the \.gz is damaged\): not an SRTM tile/);
    await rejects('N45E006.hgt.gz').toThrow(/N45E006\.hgt\.gz: \d+ bytes once decompressed \(or the \.gz is damaged\): not an SRTM tile/);
    // Flipped bytes inside a zip's deflated entry: the sizes are right, the CRC is not.
    const damaged = Buffer.from(zip);
    for (let i = 50_000; i < 50_400; i++) damaged[i] ^= 0x5a;
    await writeFile(at('damaged.zip'), damaged);
    await expect(probeDem({ path: at('damaged.zip') })).resolves.toMatchObject({ rows: SIDE });
    await rejects('damaged.zip').toThrow(/damaged\.zip: cannot read its heights \(.*decompression failed/);
    await rejects('cut.zip').toThrow(/cut\.zip: not a zip archive GDAL can open/);
    await expect(probeDem({ path: at('cut.zip') })).rejects.toThrow(/cut\.zip: not a zip archive GDAL can open/);
    await expect(readDem({ path: join(dir, 'N00E000.hgt') })).rejects.toThrow(/N00E000\.hgt: cannot read \(ENOENT\)/);
    await rejects('asc.zip').toThrow(/asc\.zip: the zip holds no \.hgt file/);
  });
});

/** Element-wise Object.is (NaN equals NaN); far faster than deep equality on a million floats. */
function sameValues(a: ArrayLike<number | null>, b: ArrayLike<number | null>): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (!Object.is(a[i], b[i])) return false;
  return true;
}

function readHgtValue(raw: Buffer, r: number, c: number): number {
  return raw.readInt16BE((r * SIDE + c) * 2);
}

describe('GeoTIFF through GDAL', () => {
  it('N43E006.tiff and N43E006.hgt give identical heights everywhere', async () => {
    const a = join(dir, 'a'), b = join(dir, 'b');
    await buildElevation(a, [{ path: HGT }], { precision: 0.1, terrain: false });
    await buildElevation(b, [{ path: join(FIX, 'N43E006.tiff') }], { precision: 0.1, terrain: false });
    const ia = await ElevationIndex.open(await FileRangeSource.open(join(a, ELEVATION_INDEX_PATH)), 64 << 20);
    const ib = await ElevationIndex.open(await FileRangeSource.open(join(b, ELEVATION_INDEX_PATH)), 64 << 20);
    expect(ib.meta.layers[0]).toMatchObject({ originLat: 44, originLon: 6, stepLat: 1 / 1200, rows: SIDE, cols: SIDE });
    // Every post, plus random points between posts.
    const pts = [];
    for (let r = 0; r < SIDE; r += 1) for (let c = 0; c < SIDE; c += 7) pts.push({ lat: 44 - r / 1200, lon: 6 + c / 1200 });
    for (let k = 0; k < 20000; k++) pts.push({ lat: 43 + Math.random(), lon: 6 + Math.random() });
    const [ha, hb] = [await ia.heights(pts), await ib.heights(pts)];
    expect(hb.heights.length).toBe(pts.length);
    expect(sameValues(hb.heights, ha.heights)).toBe(true);
    // And the posts are the raw integers of the .hgt.
    const raw = Buffer.from(await readFile(HGT));
    expect(ha.heights[0]).toBe(readHgtValue(raw, 0, 0));
    expect(ha.heights[1]).toBe(readHgtValue(raw, 0, 7));
    await ia.close();
    await ib.close();
  });

  it('the EPSG:3035 tiles give the heights GDAL\'s own tools give at known lat/lon', async () => {
    const out = join(dir, 'eu');
    await buildElevation(out, [{ path: join(FIX, 'eudem-epsg3035/*.TIF') }], { precision: 0.1, terrain: false });
    const m = await readManifestOrEmpty(out);
    expect(m.elevation?.sources).toHaveLength(2);
    const idx = await ElevationIndex.open(await FileRangeSource.open(join(out, ELEVATION_INDEX_PATH)), 16 << 20);
    // Both tiles were warped to the same 809″ lat/lon grid (25 km ≈ 809″ of latitude) and merged.
    expect(idx.meta.layers).toHaveLength(1);
    expect(idx.meta.layers[0].stepLat * 3600).toBeCloseTo(809, 9);
    const expected = JSON.parse(await readFile(join(FIX, 'eudem-epsg3035/expected.json'), 'utf8')) as {
      points: { lat: number; lon: number; px: number; py: number; posts: [number, number, number, number] }[];
    };
    const { heights } = await idx.heights(expected.points);
    expected.points.forEach((p, i) => {
      const want = bilinear(...p.posts, p.px - Math.floor(p.px), p.py - Math.floor(p.py));
      expect(Math.abs((heights[i] as number) - want)).toBeLessThanOrEqual(0.05 + 0.01);
    });
    await idx.close();
  });

  it('a CRS-less raster, a projected raster without nodata and a missing file are clear errors; nothing is written', async () => {
    const noCrs = join(dir, 'nocrs.tif');
    const ds = gdal.open(noCrs, 'w', 'GTiff', 4, 4, 1, gdal.GDT_Int16);
    ds.geoTransform = [6, 0.1, 0, 44, 0, -0.1];
    ds.close();
    await expect(readGdal(noCrs)).rejects.toThrow(/nocrs\.tif: unknown CRS/);
    const noNodata = join(dir, 'laea.tif');
    const ds2 = gdal.open(noNodata, 'w', 'GTiff', 4, 4, 1, gdal.GDT_Float32);
    ds2.srs = gdal.SpatialReference.fromEPSG(3035);
    ds2.geoTransform = [4000000, 1000, 0, 2500000, 0, -1000];
    ds2.bands.get(1).fill(100);
    ds2.close();
    await expect(readGdal(noNodata)).rejects.toThrow(/laea\.tif: no nodata value.*"nodata"/);
    // With a nodata override it warps.
    const g = await readGdal(noNodata, { nodata: -9999 });
    expect(g.data.some((v) => v === 100)).toBe(true);
    const out = join(dir, 'bad');
    await expect(buildElevation(out, [{ path: HGT }, { path: join(dir, 'missing.tif') }], { precision: 0.1, terrain: false })).rejects.toThrow(/missing\.tif: cannot read/);
    await expect(buildElevation(out, [{ path: join(dir, 'none-*.hgt') }], { precision: 0.1, terrain: false })).rejects.toThrow(/none-\*\.hgt: no DEM file matches/);
    await expect(readFile(join(out, 'manifest.json'))).rejects.toThrow(/ENOENT/);
    await expect(readFile(join(out, ELEVATION_INDEX_PATH))).rejects.toThrow(/ENOENT/);
  });
});
