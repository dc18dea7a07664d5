import { copyFile, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ElevationIndex } from '../lib/elevation/reader.ts';
import { ENCODING_STEP, decodeHeightRgb, encodeHeightRgb } from '../lib/elevation/terrain-rgb.ts';
import { readManifestOrEmpty } from '../lib/manifest.ts';
import { FileRangeSource } from '../lib/storage.ts';
import { ELEVATION_INDEX_PATH, buildElevation } from '../pipeline/elevation.ts';
import { pixelCentres } from '../pipeline/elevation/terrain.ts';
import { pixelCentreAxes, tileBounds, tileRunsForBoxes, tilesInRuns, type BBox } from '../lib/tile-math.ts';
import { PMTiles, FetchSource } from 'pmtiles';

process.env.TILEBAKE_QUIET = '1';
const SAMPLE_HGT = join(import.meta.dirname, '../data/sample/dem/N43E007.hgt');
const FIXTURE_HGT = join(import.meta.dirname, 'fixtures/dem/N43E006.hgt');

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tilebake-terrain-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A PMTiles reader over a local file (the pmtiles package's own reader). */
async function openArchive(path: string): Promise<PMTiles> {
  const bytes = await readFile(path);
  const source = {
    getKey: () => path,
    getBytes: async (offset: number, length: number) => ({ data: bytes.buffer.slice(bytes.byteOffset + offset, bytes.byteOffset + offset + length) }),
  };
  return new PMTiles(source as unknown as FetchSource);
}

describe('terrain RGB encodings', () => {
  it('round-trip within half the encoding step', () => {
    const px = new Uint8Array(3);
    for (const enc of ['terrarium', 'mapbox'] as const) {
      for (const h of [-431.23, 0, 0.004, 61.11, 4807.86, 8848.1]) {
        encodeHeightRgb(enc, h, px, 0);
        expect(Math.abs(decodeHeightRgb(enc, px[0], px[1], px[2]) - h)).toBeLessThanOrEqual(ENCODING_STEP[enc] / 2 + 1e-9);
      }
    }
    // Known reference pixels: terrarium (128,0,0) = 0 m; mapbox (1,134,160) = 0 m.
    expect(decodeHeightRgb('terrarium', 128, 0, 0)).toBe(0);
    expect(decodeHeightRgb('mapbox', 1, 134, 160)).toBeCloseTo(0, 9);
  });
});

describe('terrain tiles', () => {
  for (const [encoding, format] of [['terrarium', 'png'], ['mapbox', 'webp']] as const) {
    it(`${encoding} ${format} tiles decode back to the index's heights`, async () => {
      const out = join(dir, encoding);
      await buildElevation(out, [{ path: SAMPLE_HGT }], { precision: 0.1, terrain: { id: 'terrain', encoding, format, minzoom: 10, maxzoom: 11 } });
      const m = await readManifestOrEmpty(out);
      const entry = m.tilesets.terrain;
      expect(entry).toMatchObject({ kind: 'terrain', format, encoding, tileSize: 256, minzoom: 10, maxzoom: 11, archive: 'data/terrain.pmtiles' });
      expect(entry.tiles).toBeGreaterThan(10);
      const archive = await openArchive(join(out, entry.archive));
      const meta = (await archive.getMetadata()) as Record<string, unknown>;
      expect(meta.encoding).toBe(encoding);
      const idx = await ElevationIndex.open(await FileRangeSource.open(join(out, ELEVATION_INDEX_PATH)), 64 << 20);
      // Monaco at z11, and a tile over the Alps (Mercantour) at z10.
      for (const [z, x, y] of [[11, 1066, 746], [10, 531, 372]]) {
        const tile = await archive.getZxy(z, x, y);
        expect(tile, `tile ${z}/${x}/${y}`).toBeDefined();
        const { data, info } = await sharp(Buffer.from(tile!.data)).raw().toBuffer({ resolveWithObject: true });
        expect(info.width).toBe(256);
        expect(info.height).toBe(256);
        const { heights } = await idx.heights(pixelCentres(z, x, y));
        let checked = 0, maxH = -Infinity;
        for (let i = 0; i < heights.length; i += 17) {
          const got = decodeHeightRgb(encoding, data[i * info.channels], data[i * info.channels + 1], data[i * info.channels + 2]);
          const want = heights[i] ?? 0;
          expect(Math.abs(got - want)).toBeLessThanOrEqual(ENCODING_STEP[encoding] / 2 + 1e-6);
          checked++;
          maxH = Math.max(maxH, want);
        }
        expect(checked).toBeGreaterThan(3000);
        expect(maxH).toBeGreaterThan(100);
      }
      await idx.close();
    });
  }
});

describe('terrain tiles of two distant DEMs', () => {
  it('are made only over the two 1° cells, at every zoom, up to the zoom the DEM resolution gives', async () => {
    // A real SRTM3 tile copied under a cell name in Pennsylvania: the data is Provence's, the place is not.
    const dems = join(dir, 'two');
    await rm(dems, { recursive: true, force: true });
    const { mkdir } = await import('node:fs/promises');
    await mkdir(dems, { recursive: true });
    await copyFile(FIXTURE_HGT, join(dems, 'N43E006.hgt'));
    await copyFile(FIXTURE_HGT, join(dems, 'N40W077.hgt'));
    const out = join(dir, 'two-out');
    const stats = await buildElevation(out, [{ path: join(dems, '*.hgt') }], { precision: 0.1, terrain: { id: 'terrain', encoding: 'terrarium', format: 'png', minzoom: 0 } });
    const entry = (await readManifestOrEmpty(out)).tilesets.terrain;
    // SRTM3's 3″ posts: z11 pixels (2.5″) are the first finer ones.
    expect(entry.maxzoom).toBe(11);
    const cells: BBox[] = [[6, 43, 7, 44], [-77, 40, -76, 41]];
    const archive = await openArchive(join(out, entry.archive));
    const header = await archive.getHeader();
    expect(stats.terrain?.tiles).toBe(header.numAddressedTiles);
    // Exactly the tiles with a pixel centre inside a cell are there (those intersecting a cell by less than half a pixel have no data).
    let expected = 0, intersecting = 0;
    for (let z = 0; z <= 11; z++) {
      const runs = tileRunsForBoxes(cells, z);
      intersecting += tilesInRuns(runs);
      for (const r of runs) {
        for (let x = r.minX; x <= r.maxX; x++) {
          const { lats, lons } = pixelCentreAxes(z, x, r.y, 256);
          const hit = cells.some((c) => lats.some((lat) => lat >= c[1] && lat <= c[3]) && lons.some((lon) => lon >= c[0] && lon <= c[2]));
          if (hit) expected++;
          expect(!!(await archive.getZxy(z, x, r.y)), `${z}/${x}/${r.y}`).toBe(hit);
        }
      }
    }
    expect(header.numAddressedTiles).toBe(expected);
    expect(intersecting - expected).toBeLessThan(5);
    expect(expected).toBeLessThan(300);
    for (const z of [5, 9, 11]) {
      for (const r of tileRunsForBoxes(cells, z)) {
        for (const x of [r.minX, r.maxX]) {
          const [w, s, e, n] = tileBounds(z, x, r.y);
          expect(cells.some((c) => w < c[2] && e > c[0] && s < c[3] && n > c[1])).toBe(true);
          expect(await archive.getZxy(z, x, r.y), `${z}/${x}/${r.y}`).toBeDefined();
        }
      }
    }
    // A tile between the two cells (mid-Atlantic) is not in the archive.
    expect(await archive.getZxy(6, 20, 24)).toBeUndefined();
    expect(entry.center[0]).toBeGreaterThanOrEqual(entry.bounds[0]);
    expect(entry.center[0]).toBeLessThanOrEqual(entry.bounds[2]);
  });
});
