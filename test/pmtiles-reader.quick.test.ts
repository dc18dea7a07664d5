import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Compression, openArchive, PMTilesWriter, TileType } from '../lib/pmtiles/index.ts';
import { FileRangeSource, type RangeSource } from '../lib/storage.ts';
import { readMbtiles, type SampleTile } from './pmtiles-helpers.ts';

/** A RangeSource that records every read, over a real file. */
class CountingSource implements RangeSource {
  reads: [number, number][] = [];
  constructor(private readonly inner: FileRangeSource) {}
  static async open(path: string): Promise<CountingSource> {
    return new CountingSource(await FileRangeSource.open(path));
  }
  getBytes(offset: number, length: number): Promise<Uint8Array> {
    this.reads.push([offset, length]);
    return this.inner.getBytes(offset, length);
  }
  key(): string {
    return this.inner.key();
  }
  close(): Promise<void> {
    return this.inner.close();
  }
  get bytesRead(): number {
    return this.reads.reduce((s, [, l]) => s + l, 0);
  }
}

const tiles: SampleTile[] = readMbtiles('data/liechtenstein/liechtenstein_omt.mbtiles');
let dir: string;
let path: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tilebake-pmtiles-rd-'));
  path = join(dir, 'li.pmtiles');
  const w = await PMTilesWriter.create(path, { tileType: TileType.Mvt, tileCompression: Compression.Gzip, leafEntries: 8 });
  for (const t of tiles) await w.addTile(t.z, t.x, t.y, t.data);
  await w.finish();
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('reader: positional reads and the directory cache', () => {
  it('reads only what it needs; a second pass over all tiles re-reads no directory', async () => {
    const src = await CountingSource.open(path);
    const r = await openArchive(src, { maxCachedDirectories: 1000 });
    const h = r.header;
    const fileSize = h.tileDataOffset + h.tileDataLength!;
    // Opening: the first 16 KiB (header + root) and a 1-byte check that the file is as long as the header says.
    expect(src.reads).toEqual([
      [0, 16384],
      [fileSize - 1, 1],
    ]);
    for (const t of tiles) await r.getTile(t.z, t.x, t.y);
    const leafReads = src.reads.filter(([o]) => o >= h.leafDirectoryOffset && o < h.tileDataOffset).length;
    expect(leafReads).toBeGreaterThan(1);
    src.reads = [];
    for (const t of tiles) await r.getTile(t.z, t.x, t.y);
    // Only tile reads now, one per tile, each inside the tile data section.
    expect(src.reads.length).toBe(tiles.length);
    expect(src.reads.every(([o]) => o >= h.tileDataOffset)).toBe(true);
    expect(src.bytesRead).toBe(tiles.reduce((s, t) => s + t.data.length, 0));
    await r.close();
  });

  it('the cache is bounded: with room for one directory, leaves are read again', async () => {
    const src = await CountingSource.open(path);
    const r = await openArchive(src, { maxCachedDirectories: 1 });
    const h = r.header;
    for (let pass = 0; pass < 2; pass++) for (const t of tiles) await r.getTile(t.z, t.x, t.y);
    const leafReads = src.reads.filter(([o]) => o >= h.leafDirectoryOffset && o < h.tileDataOffset).length;
    const leaves = Math.ceil(h.numTileEntries / 8);
    expect(leafReads).toBeGreaterThan(2 * leaves - 2);
    await r.close();
  });

  it('concurrent lookups share directory fetches and return the stored bytes', async () => {
    const src = await CountingSource.open(path);
    const r = await openArchive(src, { maxCachedDirectories: 1000 });
    const got = await Promise.all(tiles.map((t) => r.getTile(t.z, t.x, t.y)));
    got.forEach((g, i) => expect(Buffer.from(g!).equals(tiles[i].data)).toBe(true));
    const h = r.header;
    const leafReads = src.reads.filter(([o]) => o >= h.leafDirectoryOffset && o < h.tileDataOffset);
    // Every leaf at most once, although all lookups started together.
    expect(new Set(leafReads.map(([o]) => o)).size).toBe(leafReads.length);
    await r.close();
  });
});
