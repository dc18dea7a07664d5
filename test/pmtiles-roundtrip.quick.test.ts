import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Compression, openArchiveFile, PMTilesWriter, TileType, zxyToTileId } from '../lib/pmtiles/index.ts';
import { readMbtiles, referenceReader, referenceTile, shuffled, type SampleTile } from './pmtiles-helpers.ts';

const MONACO = 'data/sample/monaco_omt.mbtiles';
const LIECHTENSTEIN = 'data/liechtenstein/liechtenstein_omt.mbtiles';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tilebake-pmtiles-rt-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function writeArchive(path: string, tiles: SampleTile[], extra: Partial<Parameters<typeof PMTilesWriter.create>[1]> = {}) {
  const w = await PMTilesWriter.create(path, { tileType: TileType.Mvt, tileCompression: Compression.Gzip, ...extra });
  for (const t of tiles) await w.addTile(t.z, t.x, t.y, t.data);
  return w.finish();
}

/** Every tile reads back bit-exact through the reference reader and through ours; entries() lists exactly them. */
async function expectRoundTrip(path: string, tiles: SampleTile[]): Promise<void> {
  const ref = await referenceReader(path);
  const ours = await openArchiveFile(path);
  try {
    for (const t of tiles) {
      expect(Buffer.from((await referenceTile(ref.pm, t.z, t.x, t.y))!).equals(t.data), `reference ${t.z}/${t.x}/${t.y}`).toBe(true);
      expect(Buffer.from((await ours.getTile(t.z, t.x, t.y))!).equals(t.data), `ours ${t.z}/${t.x}/${t.y}`).toBe(true);
    }
    const listed: number[] = [];
    for await (const e of ours.entries()) for (let i = 0; i < e.runLength; i++) listed.push(e.tileId + i);
    expect(listed).toEqual(tiles.map((t) => zxyToTileId(t.z, t.x, t.y)).sort((a, b) => a - b));
  } finally {
    await ref.close();
    await ours.close();
  }
}

describe('PMTiles writer: Monaco sample round trip', () => {
  const tiles = readMbtiles(MONACO);
  const metadata = { name: 'OpenMapTiles', attribution: '© OpenMapTiles © OpenStreetMap contributors', vector_layers: [{ id: 'water', fields: {} }] };

  it('has the 23 sample tiles from z0 to z14', () => {
    expect(tiles.length).toBe(23);
    expect(Math.min(...tiles.map((t) => t.z))).toBe(0);
    expect(Math.max(...tiles.map((t) => t.z))).toBe(14);
  });

  it('writes every tile bit-exact, readable by the reference reader and ours', async () => {
    const path = join(dir, 'monaco.pmtiles');
    const res = await writeArchive(path, tiles, { metadata });
    expect(res).toMatchObject({ addressedTiles: 23, tileEntries: 23, tileContents: 23, minZoom: 0, maxZoom: 14 });
    expect(res.bytes).toBe((await readFile(path)).length);
    await expectRoundTrip(path, tiles);
  });

  it('writes the v3 header fields and the metadata JSON', async () => {
    const path = join(dir, 'monaco-header.pmtiles');
    const bounds: [number, number, number, number] = [7.409205, 43.72335, 7.448637, 43.75169];
    await writeArchive(path, tiles, { metadata, bounds, center: [7.42, 43.73, 12] });
    const raw = await readFile(path);
    expect(raw.subarray(0, 7).toString('latin1')).toBe('PMTiles');
    expect(raw[7]).toBe(3);
    const ref = await referenceReader(path);
    try {
      const h = await ref.pm.getHeader();
      expect(h).toMatchObject({
        specVersion: 3,
        rootDirectoryOffset: 127,
        clustered: true,
        internalCompression: Compression.Gzip,
        tileCompression: Compression.Gzip,
        tileType: TileType.Mvt,
        minZoom: 0,
        maxZoom: 14,
        numAddressedTiles: 23,
        numTileEntries: 23,
        numTileContents: 23,
        leafDirectoryLength: 0,
        centerZoom: 12,
      });
      expect(h.rootDirectoryOffset + h.rootDirectoryLength).toBeLessThanOrEqual(16384);
      expect([h.minLon, h.minLat, h.maxLon, h.maxLat]).toEqual(bounds.map((v) => Math.round(v * 1e7) / 1e7));
      expect([h.centerLon, h.centerLat]).toEqual([7.42, 43.73]);
      expect(h.tileDataOffset + h.tileDataLength!).toBe(raw.length);
      expect(h.tileDataLength).toBe(tiles.reduce((s, t) => s + t.data.length, 0));
      const meta = (await ref.plain.getMetadata()) as Record<string, unknown>;
      expect(meta).toMatchObject(metadata);
      // Filled in because the caller left them out.
      expect(meta).toMatchObject({ minzoom: 0, maxzoom: 14, center: [7.42, 43.73, 12] });
    } finally {
      await ref.close();
    }
    const ours = await openArchiveFile(path);
    expect(await ours.metadata()).toMatchObject(metadata);
    expect(ours.header.numTileContents).toBe(23);
    await ours.close();
  });

  it('computes bounds from the deepest zoom and centre at the min zoom when not given', async () => {
    const path = join(dir, 'monaco-default-bounds.pmtiles');
    await writeArchive(path, tiles);
    const ours = await openArchiveFile(path);
    const h = ours.header;
    await ours.close();
    // The z14 tiles of the sample cover Monaco (7.409–7.449 E, 43.723–43.752 N); their union is a bit larger.
    expect(h.minLon).toBeLessThanOrEqual(7.409205);
    expect(h.maxLon).toBeGreaterThanOrEqual(7.448637);
    expect(h.minLat).toBeLessThanOrEqual(43.72335);
    expect(h.maxLat).toBeGreaterThanOrEqual(43.75169);
    expect(h.maxLon - h.minLon).toBeLessThan(0.1);
    expect(h.maxLat - h.minLat).toBeLessThan(0.1);
    expect(h.centerZoom).toBe(0);
    expect(h.centerLon).toBeCloseTo((h.minLon + h.maxLon) / 2, 6);
  });

  it('writes identical bytes whatever order the tiles arrive in (clustered)', async () => {
    const inOrder = [...tiles].sort((a, b) => zxyToTileId(a.z, a.x, a.y) - zxyToTileId(b.z, b.x, b.y));
    await writeArchive(join(dir, 'ordered.pmtiles'), inOrder, { metadata });
    await writeArchive(join(dir, 'shuffled.pmtiles'), shuffled(tiles, 7), { metadata });
    const a = await readFile(join(dir, 'ordered.pmtiles'));
    const b = await readFile(join(dir, 'shuffled.pmtiles'));
    expect(a.equals(b)).toBe(true);
  });
});

describe('PMTiles writer: Liechtenstein sample (real duplicates)', () => {
  const tiles = readMbtiles(LIECHTENSTEIN);
  const distinct = new Set(tiles.map((t) => Buffer.from(t.data).toString('base64'))).size;

  it('deduplicates identical tiles and stores the data in tile-id order', async () => {
    expect(tiles.length).toBe(196);
    expect(distinct).toBeLessThan(tiles.length);
    const path = join(dir, 'liechtenstein.pmtiles');
    const res = await writeArchive(path, shuffled(tiles, 3));
    expect(res.addressedTiles).toBe(196);
    expect(res.tileContents).toBe(distinct);
    await expectRoundTrip(path, tiles);
    // Clustered: each entry's data either follows the previous new content or points back to earlier content.
    const ours = await openArchiveFile(path);
    let end = 0;
    let dataBytes = 0;
    for await (const e of ours.entries()) {
      if (e.offset === end) {
        end += e.length;
        dataBytes += e.length;
      } else {
        expect(e.offset + e.length).toBeLessThanOrEqual(end);
      }
    }
    expect(ours.header.tileDataLength).toBe(dataBytes);
    await ours.close();
  });

  it('round-trips through forced leaf directories too', async () => {
    const path = join(dir, 'liechtenstein-leaves.pmtiles');
    await writeArchive(path, tiles, { leafEntries: 16 });
    const ours = await openArchiveFile(path);
    expect(ours.header.leafDirectoryLength).toBeGreaterThan(0);
    await ours.close();
    await expectRoundTrip(path, tiles);
  });
});
