import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Compression, openArchiveFile, PMTilesWriter, tileIdToZxy, TileType, zxyToTileId, type ArchiveEntry } from '../lib/pmtiles/index.ts';
import { readMbtiles, referenceReader, referenceTile, rng, shuffled } from './pmtiles-helpers.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tilebake-pmtiles-st-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const opts = { tileType: TileType.Png, tileCompression: Compression.None };

async function listEntries(path: string): Promise<ArchiveEntry[]> {
  const r = await openArchiveFile(path);
  const out: ArchiveEntry[] = [];
  for await (const e of r.entries()) out.push(e);
  await r.close();
  return out;
}

describe('leaf directories', () => {
  const tiles = readMbtiles('data/sample/monaco_omt.mbtiles');

  for (const leafEntries of [2, 3, 4]) {
    it(`leafEntries ${leafEntries}: leaves exist and every tile still reads back`, async () => {
      const path = join(dir, `leaf-${leafEntries}.pmtiles`);
      const w = await PMTilesWriter.create(path, { ...opts, tileType: TileType.Mvt, tileCompression: Compression.Gzip, leafEntries });
      for (const t of tiles) await w.addTile(t.z, t.x, t.y, t.data);
      await w.finish();
      const ref = await referenceReader(path);
      const h = await ref.pm.getHeader();
      expect(h.leafDirectoryLength).toBeGreaterThan(0);
      expect(h.numTileEntries).toBe(23);
      for (const t of tiles) {
        expect(Buffer.from((await referenceTile(ref.pm, t.z, t.x, t.y))!).equals(t.data)).toBe(true);
      }
      // A tile the archive lacks is absent in both readers, also when its id falls inside a leaf's range.
      expect(await ref.pm.getZxy(14, 0, 0)).toBeUndefined();
      await ref.close();
      const ours = await openArchiveFile(path);
      for (const t of tiles) expect(Buffer.from((await ours.getTile(t.z, t.x, t.y))!).equals(t.data)).toBe(true);
      expect(await ours.getTile(14, 0, 0)).toBeUndefined();
      await ours.close();
      expect((await listEntries(path)).length).toBe(23);
    });
  }

  it('50k tiles: the automatic leaf size keeps the root under 16 KiB and every tile reads back', async () => {
    const rand = rng(42);
    const tiles: { id: number; data: Uint8Array }[] = [];
    let id = zxyToTileId(12, 0, 0);
    for (let i = 0; i < 50_000; i++) {
      id += 1 + Math.floor(rand() * 8); // gaps: no run-lengths, and an incompressible directory
      const data = new Uint8Array(4 + Math.floor(rand() * 300));
      new DataView(data.buffer).setUint32(0, i); // unique contents
      for (let k = 4; k < data.length; k++) data[k] = (i + k) & 0xff;
      tiles.push({ id, data });
    }
    const path = join(dir, 'many.pmtiles');
    const w = await PMTilesWriter.create(path, opts);
    for (const t of shuffled(tiles, 1)) await w.addTileId(t.id, t.data);
    const res = await w.finish();
    expect(res).toMatchObject({ addressedTiles: 50_000, tileEntries: 50_000, tileContents: 50_000 });

    const ref = await referenceReader(path);
    const h = await ref.pm.getHeader();
    expect(h.leafDirectoryLength).toBeGreaterThan(0);
    expect(h.rootDirectoryOffset + h.rootDirectoryLength).toBeLessThanOrEqual(16384);
    const ours = await openArchiveFile(path);
    // Every tile: each entry (walked through the leaves) must point at that tile's bytes in the data section.
    const data = await ours.readRange(0, h.tileDataLength!);
    let n = 0;
    for await (const e of ours.entries()) {
      const t = tiles[n++];
      expect(e.tileId).toBe(t.id);
      expect(Buffer.from(data.subarray(e.offset, e.offset + e.length)).equals(t.data)).toBe(true);
    }
    // Point lookups through both readers on a sample of 2,000 tiles spread over all leaves.
    for (const t of shuffled(tiles, 9).slice(0, 2000)) {
      const [z, x, y] = tileIdToZxy(t.id);
      expect(Buffer.from((await ours.getTile(z, x, y))!).equals(t.data)).toBe(true);
      expect(Buffer.from((await referenceTile(ref.pm, z, x, y))!).equals(t.data)).toBe(true);
    }
    await ref.close();
    expect(n).toBe(50_000);
    await ours.close();
  });
});

describe('run-lengths and deduplication', () => {
  const A = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 1, 2, 3]);
  const B = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 9, 9]);
  const z3First = zxyToTileId(3, 0, 0); // the 64 tiles of z3 have the ids z3First … z3First + 63

  it('consecutive tile ids with the same bytes become one entry with a run-length', async () => {
    const path = join(dir, 'runs.pmtiles');
    const w = await PMTilesWriter.create(path, opts);
    // Added in reverse order: runs are still merged at finish().
    for (let i = 63; i >= 0; i--) await w.addTileId(z3First + i, A);
    await w.addTile(0, 0, 0, B);
    const res = await w.finish();
    expect(res).toMatchObject({ addressedTiles: 65, tileEntries: 2, tileContents: 2 });
    const entries = await listEntries(path);
    expect(entries.map((e) => [e.tileId, e.runLength])).toEqual([
      [0, 1],
      [z3First, 64],
    ]);
    const ref = await referenceReader(path);
    const h = await ref.pm.getHeader();
    expect([h.numAddressedTiles, h.numTileEntries, h.numTileContents, h.tileDataLength]).toEqual([65, 2, 2, A.length + B.length]);
    for (let x = 0; x < 8; x++) {
      for (let y = 0; y < 8; y++) expect(Buffer.from((await referenceTile(ref.pm, 3, x, y))!).equals(A)).toBe(true);
    }
    expect(await ref.pm.getZxy(1, 0, 0)).toBeUndefined();
    await ref.close();
  });

  it('the same bytes at non-consecutive ids are stored once', async () => {
    const path = join(dir, 'dedup.pmtiles');
    const w = await PMTilesWriter.create(path, opts);
    await w.addTileId(z3First + 10, A);
    await w.addTileId(z3First + 5, B);
    await w.addTileId(z3First, A);
    await w.addTileId(z3First + 20, Uint8Array.from(A)); // equal bytes, another buffer
    const res = await w.finish();
    expect(res).toMatchObject({ addressedTiles: 4, tileEntries: 4, tileContents: 2 });
    const entries = await listEntries(path);
    expect(entries.map((e) => e.tileId - z3First)).toEqual([0, 5, 10, 20]);
    // Clustered: A is first in tile-id order, so it sits at offset 0 and the later copies point back to it.
    expect(entries.map((e) => e.offset)).toEqual([0, A.length, 0, 0]);
    const raw = await readFile(path);
    const ours = await openArchiveFile(path);
    expect(ours.header.tileDataLength).toBe(A.length + B.length);
    expect(raw.length).toBe(ours.header.tileDataOffset + A.length + B.length);
    expect(Buffer.from(await ours.readRange(0, A.length + B.length)).equals(Buffer.concat([A, B]))).toBe(true);
    for (const i of [0, 10, 20]) {
      const [z, x, y] = tileIdToZxy(z3First + i);
      expect(Buffer.from((await ours.getTile(z, x, y))!).equals(A)).toBe(true);
    }
    await ours.close();
  });
});

describe('large tiles and concurrent adds', () => {
  it('tiles bigger than the I/O buffer survive in-order and shuffled writes, with identical archives', async () => {
    const rand = rng(5);
    const tiles: { id: number; data: Uint8Array }[] = [];
    for (let i = 0; i < 40; i++) {
      const big = i % 10 === 3; // a few 1.5 MiB tiles between small ones
      const data = new Uint8Array(big ? 1_572_864 + i : 100 + i);
      for (let k = 0; k < data.length; k += 4096) data[k] = Math.floor(rand() * 256);
      data[0] = i;
      tiles.push({ id: 100 + i * 2, data });
    }
    const paths = [join(dir, 'big-ordered.pmtiles'), join(dir, 'big-shuffled.pmtiles')];
    for (const [k, order] of [tiles, shuffled(tiles, 11)].entries()) {
      const w = await PMTilesWriter.create(paths[k], opts);
      for (const t of order) await w.addTileId(t.id, t.data);
      await w.finish();
    }
    expect((await readFile(paths[0])).equals(await readFile(paths[1]))).toBe(true);
    const ours = await openArchiveFile(paths[1]);
    for (const t of tiles) {
      const [z, x, y] = tileIdToZxy(t.id);
      expect(Buffer.from((await ours.getTile(z, x, y))!).equals(t.data)).toBe(true);
    }
    await ours.close();
  });

  it('addTile calls issued concurrently give the same archive as awaited ones', async () => {
    const tiles = readMbtiles('data/liechtenstein/liechtenstein_omt.mbtiles');
    const a = join(dir, 'sequential.pmtiles');
    const b = join(dir, 'concurrent.pmtiles');
    const o = { tileType: TileType.Mvt, tileCompression: Compression.Gzip };
    const w1 = await PMTilesWriter.create(a, o);
    for (const t of tiles) await w1.addTile(t.z, t.x, t.y, t.data);
    await w1.finish();
    const w2 = await PMTilesWriter.create(b, o);
    await Promise.all(shuffled(tiles, 4).map((t) => w2.addTile(t.z, t.x, t.y, t.data)));
    await w2.finish();
    expect((await readFile(a)).equals(await readFile(b))).toBe(true);
  });
});

describe('empty archive', () => {
  it('zero tiles give a valid archive that both readers open', async () => {
    const path = join(dir, 'empty.pmtiles');
    const w = await PMTilesWriter.create(path, { ...opts, metadata: { name: 'nothing' } });
    const res = await w.finish();
    expect(res).toMatchObject({ addressedTiles: 0, tileEntries: 0, tileContents: 0 });
    const ref = await referenceReader(path);
    const h = await ref.pm.getHeader();
    expect([h.numAddressedTiles, h.tileDataLength, h.leafDirectoryLength]).toEqual([0, 0, 0]);
    expect(await ref.pm.getZxy(0, 0, 0)).toBeUndefined();
    expect(await ref.plain.getMetadata()).toMatchObject({ name: 'nothing' });
    await ref.close();
    const ours = await openArchiveFile(path);
    expect(await ours.getTile(0, 0, 0)).toBeUndefined();
    expect(await ours.metadata()).toMatchObject({ name: 'nothing' });
    await ours.close();
    expect(await listEntries(path)).toEqual([]);
  });
});
