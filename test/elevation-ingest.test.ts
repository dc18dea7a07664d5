import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deflateRawSync, gzipSync } from 'node:zlib';
import gdal from 'gdal-async';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bilinear } from '../lib/elevation/bilinear.ts';
import { ElevationIndex } from '../lib/elevation/reader.ts';
import { readManifestOrEmpty } from '../lib/manifest.ts';
import { FileRangeSource } from '../lib/storage.ts';
import { buildElevation, ELEVATION_INDEX_PATH } from '../pipeline/elevation.ts';
import { readGdal } from '../pipeline/elevation/gdal.ts';
import { parseHgt, readHgt } from '../pipeline/elevation/hgt.ts';

process.env.TILEBAKE_QUIET = '1';
const FIX = join(import.meta.dirname, 'fixtures/dem');
const HGT = join(FIX, 'N43E006.hgt');
const SIDE = 1201;

/** A minimal zip (one deflated entry) built here, so the test needs no zip tool. */
function zipOne(name: string, data: Uint8Array): Buffer {
  const comp = deflateRawSync(data);
  const nameB = Buffer.from(name);
  const loc = Buffer.alloc(30);
  loc.writeUInt32LE(0x04034b50, 0); loc.writeUInt16LE(20, 4); loc.writeUInt16LE(8, 8);
  loc.writeUInt32LE(comp.length, 18); loc.writeUInt32LE(data.length, 22); loc.writeUInt16LE(nameB.length, 26);
  const cen = Buffer.alloc(46);
  cen.writeUInt32LE(0x02014b50, 0); cen.writeUInt16LE(20, 4); cen.writeUInt16LE(20, 6); cen.writeUInt16LE(8, 10);
  cen.writeUInt32LE(comp.length, 20); cen.writeUInt32LE(data.length, 24); cen.writeUInt16LE(nameB.length, 28); cen.writeUInt32LE(0, 42);
  const cenOffset = 30 + nameB.length + comp.length;
  const eocd = Buffer.alloc(22);
  eocd.writeUInt32LE(0x06054b50, 0); eocd.writeUInt16LE(1, 8); eocd.writeUInt16LE(1, 10);
  eocd.writeUInt32LE(46 + nameB.length, 12); eocd.writeUInt32LE(cenOffset, 16);
  return Buffer.concat([loc, nameB, comp, cen, nameB, eocd]);
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tilebake-ingest-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('SRTM .hgt reader', () => {
  it('parses big-endian posts with voids, geolocated from the file name', async () => {
    const raw = Buffer.from(await readFile(HGT));
    const original = readHgtValue(raw, 600, 700);
    // Punch voids into a copy of the real tile.
    const voids = [[0, 0], [600, 700], [1200, 1200]];
    for (const [r, c] of voids) raw.writeInt16BE(-32768, (r * SIDE + c) * 2);
    const g = parseHgt(raw, 'N43E006.hgt', 'x');
    expect(g).toMatchObject({ originLat: 44, originLon: 6, rows: SIDE, cols: SIDE, footprint: [6, 43, 7, 44], integer: true });
    expect(g.stepLat).toBe(1 / 1200);
    for (const [r, c] of voids) expect(g.data[r * SIDE + c]).toBeNaN();
    expect(g.data[600 * SIDE + 701]).toBe(readHgtValue(raw, 600, 701));
    expect(original).not.toBe(-32768);
    // The same voided tile from .hgt, .hgt.gz and .zip.
    await writeFile(join(dir, 'N43E006.hgt'), raw);
    await writeFile(join(dir, 'N43E006.hgt.gz'), gzipSync(raw));
    await writeFile(join(dir, 'srtm.zip'), zipOne('N43E006.hgt', raw));
    for (const f of ['N43E006.hgt', 'N43E006.hgt.gz', 'srtm.zip']) {
      const h = await readHgt(join(dir, f));
      expect(sameValues(h.data, g.data)).toBe(true);
      expect(h.originLat).toBe(44);
    }
    expect(parseHgt(raw, 'S12W077.hgt', 'x').footprint).toEqual([-77, -12, -76, -11]);
  });

  it('rejects a wrong size, a name without a tile and a missing file, naming the file', async () => {
    expect(() => parseHgt(new Uint8Array(1000), 'N43E006.hgt', 'short.hgt')).toThrow(/short\.hgt.*not an SRTM tile/);
    expect(() => parseHgt(new Uint8Array(SIDE * SIDE * 2), 'dem.hgt', 'dem.hgt')).toThrow(/dem\.hgt.*file name/);
    await expect(readHgt(join(dir, 'N00E000.hgt'))).rejects.toThrow(/N00E000\.hgt: cannot read/);
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
