import Database from 'better-sqlite3';
import { mkdtemp, mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { PMTiles, Compression, TileType } from 'pmtiles';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openArchiveFile } from '../lib/pmtiles/index.ts';
import { NodeFileSource } from './fixtures/pmtiles-file-source.ts';
import { inspectArchive } from '../pipeline/inspect.ts';
import { packVectorTiles } from '../pipeline/vector/stage.ts';
import { detectInputKind } from '../pipeline/sources/index.ts';
import { copyFile } from 'node:fs/promises';

process.env.TILEBAKE_QUIET = '1';

const MONACO = resolve('data/sample/monaco_omt.mbtiles');
const FIRENZE = resolve('test/fixtures/vector/firenze.pmtiles');

interface Row {
  zoom_level: number;
  tile_column: number;
  tile_row: number;
  tile_data: Buffer;
}

/** Every tile of an MBTiles file, read independently of the code under test. */
function mbtilesRows(path: string): Row[] {
  const db = new Database(path, { readonly: true });
  try {
    return db.prepare('SELECT zoom_level, tile_column, tile_row, tile_data FROM tiles').all() as Row[];
  } finally {
    db.close();
  }
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tilebake-vector-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('MBTiles → PMTiles', () => {
  it('stores every Monaco tile bit-exact at the flipped (XYZ) row, with the metadata', async () => {
    const out = join(dir, 'monaco.pmtiles');
    const r = await packVectorTiles(MONACO, out);
    const rows = mbtilesRows(MONACO);
    expect(rows.length).toBe(23);
    expect(r.tiles).toBe(rows.length);
    expect(r.format).toBe('pbf');

    const a = await openArchiveFile(out);
    try {
      expect(a.header.tileType).toBe(TileType.Mvt);
      expect(a.header.tileCompression).toBe(Compression.Gzip);
      expect(a.header.minZoom).toBe(0);
      expect(a.header.maxZoom).toBe(14);
      expect(a.header.numAddressedTiles).toBe(rows.length);
      for (const row of rows) {
        const y = 2 ** row.zoom_level - 1 - row.tile_row;
        const got = await a.getTile(row.zoom_level, row.tile_column, y);
        expect(got, `tile ${row.zoom_level}/${row.tile_column}/${y}`).toBeDefined();
        expect(Buffer.from(got!).equals(row.tile_data), `tile ${row.zoom_level}/${row.tile_column}/${y}`).toBe(true);
        // The unflipped row must not be there unless it happens to be the same tile.
        if (y !== row.tile_row && !rows.some((o) => o.zoom_level === row.zoom_level && o.tile_column === row.tile_column && 2 ** o.zoom_level - 1 - o.tile_row === row.tile_row)) {
          expect(await a.getTile(row.zoom_level, row.tile_column, row.tile_row)).toBeUndefined();
        }
      }
      const meta = (await a.metadata()) as Record<string, unknown>;
      expect(meta.name).toBe('OpenMapTiles');
      expect(String(meta.attribution)).toContain('OpenStreetMap contributors');
      expect(meta.format).toBe('pbf');
      expect(meta.minzoom).toBe(0);
      expect(meta.maxzoom).toBe(14);
      expect(meta.bounds).toEqual([7.409205, 43.72335, 7.448637, 43.75169]);
      const layers = meta.vector_layers as { id: string }[];
      expect(layers.map((l) => l.id)).toEqual(expect.arrayContaining(['water', 'transportation', 'building', 'poi']));
      expect(a.header.minLon).toBeCloseTo(7.409205, 6);
      expect(a.header.maxLat).toBeCloseTo(43.75169, 6);
    } finally {
      await a.close();
    }

    // Independent check with the reference reader: decompressed content equals the gunzipped MBTiles tile.
    const ref = new PMTiles(new NodeFileSource(out));
    for (const row of rows) {
      const y = 2 ** row.zoom_level - 1 - row.tile_row;
      const t = await ref.getZxy(row.zoom_level, row.tile_column, y);
      expect(Buffer.from(t!.data).equals(gunzipSync(row.tile_data))).toBe(true);
    }
    const refMeta = (await ref.getMetadata()) as { vector_layers: unknown[] };
    expect(refMeta.vector_layers.length).toBeGreaterThan(5);
  });

  it('applies --name/--attribution overrides', async () => {
    const out = join(dir, 'named.pmtiles');
    await packVectorTiles(MONACO, out, { name: 'Monaco', attribution: '© test' });
    const a = await openArchiveFile(out);
    try {
      const meta = (await a.metadata()) as Record<string, unknown>;
      expect(meta.name).toBe('Monaco');
      expect(meta.attribution).toBe('© test');
    } finally {
      await a.close();
    }
  });

  it('inspect counts tiles per zoom like the MBTiles (z0–12: 1, z13: 4, z14: 6)', async () => {
    const out = join(dir, 'monaco-inspect.pmtiles');
    await packVectorTiles(MONACO, out);
    const report = await inspectArchive(out);
    const expected = new Map<number, number>();
    for (const row of mbtilesRows(MONACO)) expected.set(row.zoom_level, (expected.get(row.zoom_level) ?? 0) + 1);
    expect(report.zooms.map((z) => [z.zoom, z.tiles])).toEqual([...expected.entries()].sort((a, b) => a[0] - b[0]));
    expect(expected.get(13)).toBe(4);
    expect(expected.get(14)).toBe(6);
    expect(report.totalTiles).toBe(23);
    expect(report.header.tileType).toBe('Mvt');
  });
});

describe('PMTiles input (Firenze, third-party archive)', () => {
  it('round-trips every addressed tile as stored, with header and metadata', async () => {
    const out = join(dir, 'firenze-copy.pmtiles');
    const r = await packVectorTiles(FIRENZE, out);
    const src = await openArchiveFile(FIRENZE);
    const dst = await openArchiveFile(out);
    try {
      expect(r.tiles).toBe(src.header.numAddressedTiles);
      expect(dst.header.numAddressedTiles).toBe(src.header.numAddressedTiles);
      expect(dst.header.tileCompression).toBe(src.header.tileCompression);
      expect(dst.header.tileType).toBe(src.header.tileType);
      expect(dst.header.minZoom).toBe(src.header.minZoom);
      expect(dst.header.maxZoom).toBe(src.header.maxZoom);
      expect(dst.header.minLon).toBeCloseTo(src.header.minLon, 6);
      expect(dst.header.maxLat).toBeCloseTo(src.header.maxLat, 6);
      let checked = 0;
      for await (const e of src.entries()) {
        const stored = await src.readRange(e.offset, e.length);
        // Every tile of the run, addressed through the copy's own directories.
        const { tileIdToZxy } = await import('pmtiles');
        for (let i = 0; i < e.runLength; i++) {
          const [z, x, y] = tileIdToZxy(e.tileId + i);
          const got = await dst.getTile(z, x, y);
          expect(got && Buffer.from(got).equals(Buffer.from(stored)), `tile ${z}/${x}/${y}`).toBe(true);
          checked++;
        }
      }
      expect(checked).toBe(src.header.numAddressedTiles);
      const sm = (await src.metadata()) as Record<string, unknown>;
      const dm = (await dst.metadata()) as Record<string, unknown>;
      expect(dm.vector_layers).toEqual(sm.vector_layers);
      expect(dm.name).toEqual(sm.name);
      expect(dm.attribution).toEqual(sm.attribution);
    } finally {
      await src.close();
      await dst.close();
    }
  });
});

describe('z/x/y folder input', () => {
  /** Write the Monaco tiles as `<z>/<x>/<y>.<ext>` (XYZ rows), optionally gunzipping some. */
  async function writeFolder(root: string, ext: string, plain: (row: Row) => boolean): Promise<void> {
    for (const row of mbtilesRows(MONACO)) {
      const y = 2 ** row.zoom_level - 1 - row.tile_row;
      const d = join(root, String(row.zoom_level), String(row.tile_column));
      await mkdir(d, { recursive: true });
      await writeFile(join(d, `${y}.${ext}`), plain(row) ? gunzipSync(row.tile_data) : row.tile_data);
    }
  }

  it('packs a gzip .pbf folder bit-exact and derives bounds and zooms from the tiles', async () => {
    const root = join(dir, 'folder-gz');
    await writeFolder(root, 'pbf', () => false);
    await writeFile(join(root, '.DS_Store'), 'ignored');
    const out = join(dir, 'folder-gz.pmtiles');
    const r = await packVectorTiles(root, out);
    expect(r.tiles).toBe(23);
    expect(r.metadata.minzoom).toBe(0);
    expect(r.metadata.maxzoom).toBe(14);
    // Bounds from the z14 tile range: they must contain Monaco's declared bounds.
    const [w, s, e, n] = r.metadata.bounds;
    expect(w).toBeLessThanOrEqual(7.409205);
    expect(s).toBeLessThanOrEqual(43.72335);
    expect(e).toBeGreaterThanOrEqual(7.448637);
    expect(n).toBeGreaterThanOrEqual(43.75169);
    expect(e - w).toBeLessThan(0.1);
    const a = await openArchiveFile(out);
    try {
      expect(a.header.tileCompression).toBe(Compression.Gzip);
      for (const row of mbtilesRows(MONACO)) {
        const got = await a.getTile(row.zoom_level, row.tile_column, 2 ** row.zoom_level - 1 - row.tile_row);
        expect(got && Buffer.from(got).equals(row.tile_data)).toBe(true);
      }
    } finally {
      await a.close();
    }
  });

  it('reads .mvt tiles without gzip and metadata.json; mixed gzip tiles are made consistent', async () => {
    const root = join(dir, 'folder-plain');
    // Every odd zoom stored uncompressed, even zooms gzip: the archive takes the first tile's (z0: gzip).
    await writeFolder(root, 'mvt', (row) => row.zoom_level % 2 === 1);
    const db = new Database(MONACO, { readonly: true });
    const json = (db.prepare("SELECT value FROM metadata WHERE name = 'json'").get() as { value: string }).value;
    db.close();
    await writeFile(join(root, 'metadata.json'), JSON.stringify({ name: 'Folder Monaco', format: 'pbf', json }));
    const out = join(dir, 'folder-plain.pmtiles');
    const r = await packVectorTiles(root, out);
    expect(r.metadata.name).toBe('Folder Monaco');
    expect((r.metadata.vector_layers as unknown[]).length).toBeGreaterThan(5);
    const ref = new PMTiles(new NodeFileSource(out));
    const header = await ref.getHeader();
    expect(header.tileCompression).toBe(Compression.Gzip);
    for (const row of mbtilesRows(MONACO)) {
      const t = await ref.getZxy(row.zoom_level, row.tile_column, 2 ** row.zoom_level - 1 - row.tile_row);
      expect(Buffer.from(t!.data).equals(gunzipSync(row.tile_data))).toBe(true);
    }
  });

  it('leaves nothing but the archive in the output folder', async () => {
    const names = await readdir(dir);
    expect(names.filter((n) => n.startsWith('.'))).toEqual([]);
  });
});

describe('input detection', () => {
  it('goes by content, not by file name', async () => {
    const sqliteNamedOddly = join(dir, 'tiles.data');
    const pmtilesNamedMbtiles = join(dir, 'really-pmtiles.mbtiles');
    await copyFile(MONACO, sqliteNamedOddly);
    await copyFile(FIRENZE, pmtilesNamedMbtiles);
    expect(await detectInputKind(sqliteNamedOddly)).toBe('mbtiles');
    expect(await detectInputKind(pmtilesNamedMbtiles)).toBe('pmtiles');
    expect(await detectInputKind(dir)).toBe('folder');
    const r = await packVectorTiles(pmtilesNamedMbtiles, join(dir, 'detected.pmtiles'));
    expect(r.tiles).toBe(108);
  });
});
