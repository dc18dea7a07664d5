import { mkdtemp, readFile, rm } from 'node:fs/promises';
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
import { PMTiles, FetchSource } from 'pmtiles';

process.env.TILEBAKE_QUIET = '1';
const SAMPLE_HGT = join(import.meta.dirname, '../data/sample/dem/N43E007.hgt');

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
      expect(entry).toMatchObject({ kind: 'terrain', format, encoding, minzoom: 10, maxzoom: 11, archive: 'data/terrain.pmtiles' });
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
