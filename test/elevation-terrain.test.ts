import { copyFile, mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { VectorTile } from '@mapbox/vector-tile';
import { PbfReader } from 'pbf';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ElevationIndex } from '../lib/elevation/reader.ts';
import { gunzipIfGzipped } from '../lib/gzip.ts';
import { ENCODING_STEP, decodeHeightRgb, encodeHeightRgb } from '../lib/elevation/terrain-rgb.ts';
import { readManifestOrEmpty } from '../lib/manifest.ts';
import { FileRangeSource } from '../lib/storage.ts';
import { ELEVATION_INDEX_PATH, buildElevation } from '../pipeline/elevation/stage.ts';
import { pixelCentres } from '../pipeline/elevation/terrain.ts';
import { lonLatToTile, pixelCentreAxes, tileBounds, tileRunsForBoxes, tilesInRuns, type BBox } from '../lib/tile-math.ts';
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

/**
 * Check that the archive holds exactly the tiles of zooms minzoom..maxzoom with a pixel centre inside
 * one of `cells` (tiles intersecting a cell by less than half a pixel have no data); returns how many,
 * and how many tiles intersect the cells at all.
 */
async function expectTilesOverCells(archive: PMTiles, cells: BBox[], minzoom: number, maxzoom: number): Promise<{ expected: number; intersecting: number }> {
  let expected = 0, intersecting = 0;
  for (let z = minzoom; z <= maxzoom; z++) {
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
  return { expected, intersecting };
}

describe('terrain tiles of two distant DEMs', () => {
  it('are made only over the two 1° cells, at every zoom, up to the zoom the DEM resolution gives', async () => {
    // A real SRTM3 tile copied under a cell name in Pennsylvania: the data is Provence's, the place is not.
    const dems = join(dir, 'two');
    await rm(dems, { recursive: true, force: true });
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
    const { expected, intersecting } = await expectTilesOverCells(archive, cells, 0, 11);
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

describe('terrain and contour tiles of DEMs with gaps between them', () => {
  it('cover the DEMs\' cells only: nothing is computed over the empty cells inside their bounding box', async () => {
    // Three real SRTM3 tiles on a diagonal (two copied under other cell names): six of the nine cells of their bounding box are empty.
    const dems = join(dir, 'diagonal');
    await mkdir(dems, { recursive: true });
    await copyFile(FIXTURE_HGT, join(dems, 'N43E006.hgt'));
    await copyFile(SAMPLE_HGT, join(dems, 'N44E007.hgt'));
    await copyFile(FIXTURE_HGT, join(dems, 'N45E008.hgt'));
    const cells: BBox[] = [[6, 43, 7, 44], [7, 44, 8, 45], [8, 45, 9, 46]];
    const out = join(dir, 'diagonal-out');
    const stats = await buildElevation(out, [{ path: join(dems, '*.hgt') }], {
      precision: 0.1,
      terrain: { id: 'terrain', encoding: 'terrarium', format: 'png', minzoom: 0, maxzoom: 10 },
      contours: { id: 'contours', minzoom: 9, maxzoom: 10, intervals: { 9: [200, 1000] } },
    });
    const m = await readManifestOrEmpty(out);
    const terrain = await openArchive(join(out, m.tilesets.terrain.archive));
    const { expected } = await expectTilesOverCells(terrain, cells, 0, 10);
    expect((await terrain.getHeader()).numAddressedTiles).toBe(expected);
    // A z10 tile in the middle of an empty cell (N44E006) is not there.
    const gap = lonLatToTile(6.5, 44.5, 10);
    expect(await terrain.getZxy(10, gap.x, gap.y)).toBeUndefined();

    // What was computed at all: at most the tiles over the cells grown by one index block (a block on
    // a cell's edge reaches a little into its empty neighbour), fewer than over the bounding box.
    const idx = await ElevationIndex.open(await FileRangeSource.open(join(out, ELEVATION_INDEX_PATH)), 0);
    const margin = Math.max(...idx.meta.layers.map((L) => (L.blockSize + 1) * Math.max(L.stepLat, L.stepLon)));
    await idx.close();
    const grown = cells.map(([w, s, e, n]): BBox => [w - margin, s - margin, e + margin, n + margin]);
    const count = (boxes: BBox[], z0: number, z1: number) => {
      let n = 0;
      for (let z = z0; z <= z1; z++) n += tilesInRuns(tileRunsForBoxes(boxes, z));
      return n;
    };
    const bbox: BBox[] = [[6, 43, 9, 46]];
    expect(stats.terrain!.computed).toBeLessThanOrEqual(count(grown, 0, 10));
    expect(stats.terrain!.computed).toBeLessThan(count(bbox, 0, 10));
    expect(stats.contours!.computed).toBeLessThanOrEqual(count(grown, 9, 10));
    expect(stats.contours!.computed).toBeLessThan(count(bbox, 9, 10));

    // Contour tiles: only over the cells, with 200 m lines (the z9 intervals, used at z10 too).
    const contours = await openArchive(join(out, m.tilesets.contours.archive));
    const header = await contours.getHeader();
    expect(header.numAddressedTiles).toBeGreaterThan(10);
    let seen = 0;
    for (let z = 9; z <= 10; z++) {
      for (const r of tileRunsForBoxes(bbox, z)) {
        for (let x = r.minX; x <= r.maxX; x++) {
          const tile = await contours.getZxy(z, x, r.y);
          if (!tile) continue;
          seen++;
          const [w, s, e, n] = tileBounds(z, x, r.y);
          expect(cells.some((c) => w < c[2] && e > c[0] && s < c[3] && n > c[1]), `contour tile ${z}/${x}/${r.y}`).toBe(true);
          const bytes = new Uint8Array(tile.data);
          const layer = new VectorTile(new PbfReader(gunzipIfGzipped(bytes))).layers.contours;
          for (let i = 0; i < layer.length; i++) expect(layer.feature(i).properties.ele as number % 200).toBe(0);
        }
      }
    }
    expect(seen).toBe(header.numAddressedTiles);
  });
});
