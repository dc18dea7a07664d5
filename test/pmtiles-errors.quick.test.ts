import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Compression, openArchive, openArchiveFile, PMTilesWriter, TileType } from '../lib/pmtiles/index.ts';
import { FileRangeSource } from '../lib/storage.ts';
import { readMbtiles } from './pmtiles-helpers.ts';

const MONACO = 'data/sample/monaco_omt.mbtiles';
const tiles = readMbtiles(MONACO);
const opts = { tileType: TileType.Mvt, tileCompression: Compression.Gzip };

let dir: string;
let good: Buffer;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tilebake-pmtiles-err-'));
  const w = await PMTilesWriter.create(join(dir, 'good.pmtiles'), { ...opts, metadata: { name: 'monaco' } });
  for (const t of tiles) await w.addTile(t.z, t.x, t.y, t.data);
  await w.finish();
  good = await readFile(join(dir, 'good.pmtiles'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** The message of the UserError `p` rejects with. */
async function userErrorOf(p: Promise<unknown>): Promise<string> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(Error);
  expect((e as Error).name).toBe('UserError');
  return (e as Error).message;
}

describe('reader: bad archives give a clear UserError naming the file', () => {
  it('a non-PMTiles file (the MBTiles itself): bad magic', async () => {
    const msg = await userErrorOf(openArchiveFile(MONACO));
    expect(msg).toContain(MONACO);
    expect(msg).toMatch(/not a PMTiles archive \(bad magic/);
  });

  it('an empty file', async () => {
    const p = join(dir, 'empty-file.pmtiles');
    await writeFile(p, '');
    expect(await userErrorOf(openArchiveFile(p))).toMatch(/empty-file\.pmtiles: not a PMTiles archive/);
  });

  it('a truncated header', async () => {
    const p = join(dir, 'short-header.pmtiles');
    await writeFile(p, good.subarray(0, 60));
    const msg = await userErrorOf(openArchiveFile(p));
    expect(msg).toContain(p);
    expect(msg).toMatch(/truncated PMTiles header \(60 bytes/);
  });

  it('a truncated root directory', async () => {
    const p = join(dir, 'short-root.pmtiles');
    await writeFile(p, good.subarray(0, 140));
    expect(await userErrorOf(openArchiveFile(p))).toMatch(/short-root\.pmtiles: truncated PMTiles root directory/);
  });

  it('truncated tile data (file cut in the middle)', async () => {
    const p = join(dir, 'short-data.pmtiles');
    await writeFile(p, good.subarray(0, good.length - 1000));
    const msg = await userErrorOf(openArchiveFile(p));
    expect(msg).toContain(p);
    expect(msg).toMatch(new RegExp(`truncated PMTiles archive .*need ${good.length} bytes`));
  });

  it('an unsupported spec version', async () => {
    const p = join(dir, 'v2.pmtiles');
    const bad = Buffer.from(good);
    bad[7] = 2;
    await writeFile(p, bad);
    expect(await userErrorOf(openArchiveFile(p))).toMatch(/v2\.pmtiles: unsupported PMTiles spec version 2/);
  });

  it('a corrupt (non-gzip) root directory', async () => {
    const p = join(dir, 'bad-root.pmtiles');
    const bad = Buffer.from(good);
    bad.fill(0x55, 127, 127 + 8);
    await writeFile(p, bad);
    expect(await userErrorOf(openArchiveFile(p))).toMatch(/bad-root\.pmtiles: corrupt PMTiles root directory/);
  });

  it('a corrupt leaf directory: the tile lookup fails with a UserError', async () => {
    const p = join(dir, 'bad-leaf.pmtiles');
    const w = await PMTilesWriter.create(p, { ...opts, leafEntries: 4 });
    for (const t of tiles) await w.addTile(t.z, t.x, t.y, t.data);
    await w.finish();
    const bytes = await readFile(p);
    const r0 = await openArchiveFile(p);
    const { leafDirectoryOffset, leafDirectoryLength } = r0.header;
    await r0.close();
    expect(leafDirectoryLength).toBeGreaterThan(0);
    bytes.fill(0x55, leafDirectoryOffset, leafDirectoryOffset + leafDirectoryLength!);
    await writeFile(p, bytes);
    const r = await openArchiveFile(p);
    const t = tiles[0];
    expect(await userErrorOf(r.getTile(t.z, t.x, t.y))).toMatch(/bad-leaf\.pmtiles: corrupt PMTiles leaf directory/);
    await r.close();
  });

  it('a missing file', async () => {
    expect(await userErrorOf(openArchiveFile(join(dir, 'nope.pmtiles')))).toMatch(/nope\.pmtiles: cannot open \(ENOENT\)/);
  });

  it('openArchive leaves the caller-owned source open; the good archive reads', async () => {
    const src = await FileRangeSource.open(join(dir, 'good.pmtiles'));
    const r = await openArchive(src);
    expect(await r.metadata()).toMatchObject({ name: 'monaco' });
    await r.close();
  });
});

describe('writer: atomic output', () => {
  it('the final path does not exist before finish(); only temp files beside it', async () => {
    const out = join(dir, 'atomic');
    await mkdir(out);
    const final = join(out, 'a.pmtiles');
    const w = await PMTilesWriter.create(final, opts);
    for (const t of tiles) await w.addTile(t.z, t.x, t.y, t.data);
    expect(existsSync(final)).toBe(false);
    const names = await readdir(out);
    expect(names.length).toBeGreaterThan(0);
    expect(names.every((n) => n.startsWith('.a.pmtiles.tmp-'))).toBe(true);
    await w.finish();
    expect(await readdir(out)).toEqual(['a.pmtiles']);
  });

  it('abort() removes the temp files and leaves an existing final file untouched', async () => {
    const out = join(dir, 'abort');
    await mkdir(out);
    const final = join(out, 'a.pmtiles');
    await writeFile(final, 'previous build');
    const w = await PMTilesWriter.create(final, opts);
    for (const t of tiles) await w.addTile(t.z, t.x, t.y, t.data);
    await w.abort();
    expect(await readdir(out)).toEqual(['a.pmtiles']);
    expect(await readFile(final, 'utf8')).toBe('previous build');
    await expect(w.addTile(0, 0, 0, tiles[0].data)).rejects.toThrow(/after abort/);
  });

  it('the same z/x/y twice: finish() throws naming the tile and leaves nothing behind', async () => {
    const out = join(dir, 'dup');
    await mkdir(out);
    const final = join(out, 'a.pmtiles');
    const w = await PMTilesWriter.create(final, opts);
    await w.addTile(1, 0, 0, tiles[0].data);
    await w.addTile(0, 0, 0, tiles[1].data);
    await w.addTile(1, 0, 0, tiles[2].data);
    const e = await w.finish().catch((err: Error) => err);
    expect(e).toBeInstanceOf(Error);
    expect((e as Error).name).toBe('DuplicateTileError');
    expect((e as Error).message).toMatch(/tile 1\/0\/0 was added twice/);
    expect(await readdir(out)).toEqual([]);
    await w.abort(); // harmless after a failed finish
  });

  it('rejects invalid tile addresses and empty tiles', async () => {
    const out = join(dir, 'invalid');
    const w = await PMTilesWriter.create(join(out, 'a.pmtiles'), opts);
    await expect(w.addTile(2, 4, 0, tiles[0].data)).rejects.toThrow(/invalid tile address 2\/4\/0/);
    await expect(w.addTile(1, 0, -1, tiles[0].data)).rejects.toThrow(/invalid tile address/);
    await expect(w.addTile(0, 0, 0, new Uint8Array(0))).rejects.toThrow(/tile 0\/0\/0 is empty/);
    await w.abort();
    expect(await readdir(out)).toEqual([]);
  });
});
