/**
 * A pack as an MBTiles 1.3 file (SQLite through better-sqlite3), in the schemas of Martin's `mbtiles`
 * tool so that it can check and apply them: a full pack is "normalized" (`map` + `images`, a `tiles`
 * view; identical tiles stored once under the MD5 of their bytes), a delta is "flat" (`tiles`, with
 * `tile_data` NULL for a removed tile) and carries `agg_tiles_hash_before_apply` and
 * `agg_tiles_hash_after_apply`. Rows use the TMS scheme (`tile_row` counted from the south).
 * Files are written to a temp path and renamed into place.
 */
import { createHash } from 'node:crypto';
import { copyFile, rename, rm } from 'node:fs/promises';
import Database from 'better-sqlite3';
import { tileIdToZxy } from 'pmtiles';
import { tempPathFor } from '../atomic.ts';
import { UserError } from '../errors.ts';
import type { ArchiveReader } from '../pmtiles/index.ts';
import { flipRow } from '../tile-math.ts';
import { readInOrder } from './read.ts';
import type { PackDelta, PackPiece, PackTiles } from './select.ts';

/** Martin's metadata keys (mbtiles/src/validation.rs). */
export const AGG_TILES_HASH = 'agg_tiles_hash';
export const AGG_TILES_HASH_BEFORE_APPLY = 'agg_tiles_hash_before_apply';
export const AGG_TILES_HASH_AFTER_APPLY = 'agg_tiles_hash_after_apply';
const AGG_KEYS = new Set([AGG_TILES_HASH, AGG_TILES_HASH_BEFORE_APPLY, AGG_TILES_HASH_AFTER_APPLY]);
/** Metadata key of the build a pack is of. */
export const BUILD_KEY = 'tilebake_build';

/** Rows inserted per transaction. */
const BATCH_ROWS = 4096;

/** MBTiles metadata: name → value (`null` in a delta: the name is removed). */
export type MbtilesMetadata = Record<string, string>;

/** TileJSON fields that have no MBTiles metadata row (MBTiles is TMS, and has no tile URLs). */
const NOT_IN_MBTILES = new Set(['tilejson', 'scheme', 'tiles', 'bounds', 'center', 'vector_layers', 'tilebake']);

/**
 * The MBTiles 1.3 metadata of a pack's (TileJSON-like) metadata: name, format, bounds and center as
 * comma-separated numbers, zooms, attribution and description, `type`, `json` with the vector layers,
 * the other plain fields as they are, and `tilebake_build` / `tilebake_source` / `tilebake_area`.
 */
export function mbtilesMetadataOf(meta: Record<string, unknown>): MbtilesMetadata {
  const out: MbtilesMetadata = { type: 'baselayer' };
  for (const [k, v] of Object.entries(meta)) {
    if (NOT_IN_MBTILES.has(k)) continue;
    if (typeof v === 'string' || typeof v === 'number') out[k] = String(v);
  }
  if (Array.isArray(meta.bounds)) out.bounds = meta.bounds.join(',');
  if (Array.isArray(meta.center)) out.center = meta.center.join(',');
  if (Array.isArray(meta.vector_layers)) out.json = JSON.stringify({ vector_layers: meta.vector_layers });
  const of = (meta.tilebake ?? {}) as Record<string, unknown>;
  for (const [k, v] of Object.entries(of)) if (typeof v === 'string') out[`tilebake_${k}`] = v;
  return out;
}

const SCHEMA_METADATA = 'CREATE TABLE metadata (name TEXT NOT NULL PRIMARY KEY, value TEXT)';
const SCHEMA_NORMALIZED = [
  'CREATE TABLE map (zoom_level INTEGER NOT NULL, tile_column INTEGER NOT NULL, tile_row INTEGER NOT NULL, tile_id TEXT, PRIMARY KEY (zoom_level, tile_column, tile_row))',
  'CREATE TABLE images (tile_id TEXT NOT NULL PRIMARY KEY, tile_data BLOB)',
  'CREATE VIEW tiles AS SELECT map.zoom_level, map.tile_column, map.tile_row, images.tile_data FROM map INNER JOIN images ON map.tile_id = images.tile_id',
];
const SCHEMA_FLAT = 'CREATE TABLE tiles (zoom_level INTEGER NOT NULL, tile_column INTEGER NOT NULL, tile_row INTEGER NOT NULL, tile_data BLOB, PRIMARY KEY (zoom_level, tile_column, tile_row))';

/**
 * `agg_tiles_hash` as Martin's `mbtiles` tool defines it (calc_agg_tiles_hash): the MD5, as upper-case
 * hex, of the concatenation over all tiles ordered by zoom_level, tile_column, tile_row of the decimal
 * text of those three and then the tile's bytes (a NULL tile_data adds nothing; no tiles at all: the
 * MD5 of nothing). Rows must be added in that order.
 */
export class AggTilesHash {
  private readonly md5 = createHash('md5');
  add(z: number, column: number, row: number, data: Uint8Array | null): void {
    this.md5.update(`${z}${column}${row}`);
    if (data) this.md5.update(data);
  }
  hex(): string {
    return this.md5.digest('hex').toUpperCase();
  }
}

/** The agg_tiles_hash of an MBTiles file's `tiles` (table or view). */
export function aggTilesHashOfDb(db: Database.Database): string {
  const h = new AggTilesHash();
  const rows = db.prepare('SELECT zoom_level, tile_column, tile_row, tile_data FROM tiles ORDER BY zoom_level, tile_column, tile_row').raw();
  for (const [z, x, row, data] of rows.iterate() as Iterable<[number, number, number, Buffer | null]>) h.add(z, x, row, data);
  return h.hex();
}

/** The agg_tiles_hash an MBTiles pack of `tiles` (read from `source`) has, without writing it. */
export async function aggTilesHashOfTiles(source: ArchiveReader, tiles: PackTiles): Promise<string> {
  const n = tiles.tiles;
  const z = new Uint8Array(n);
  const x = new Float64Array(n);
  const row = new Float64Array(n);
  const piece = new Uint32Array(n);
  let k = 0;
  tiles.pieces.forEach((p, i) => {
    for (let t = 0; t < p.runLength; t++, k++) {
      const [tz, tx, ty] = tileIdToZxy(p.tileId + t);
      z[k] = tz;
      x[k] = tx;
      row[k] = flipRow(tz, ty);
      piece[k] = i;
    }
  });
  const order = Array.from({ length: n }, (_, i) => i).sort((a, b) => z[a] - z[b] || x[a] - x[b] || row[a] - row[b]);
  const h = new AggTilesHash();
  let i = 0;
  const ranges = (function* () {
    for (const t of order) yield { offset: tiles.pieces[piece[t]].offset, length: tiles.pieces[piece[t]].length };
  })();
  for await (const bytes of readInOrder(source, ranges)) {
    const t = order[i++];
    h.add(z[t], x[t], row[t], bytes);
  }
  return h.hex();
}

/** Open a new SQLite file at `path` for writing a pack (no journal: a failed write leaves only the temp file). */
function create(path: string): Database.Database {
  const db = new Database(path);
  db.pragma('journal_mode = OFF');
  db.pragma('synchronous = OFF');
  db.exec(SCHEMA_METADATA);
  return db;
}

function putMetadata(db: Database.Database, metadata: Record<string, string | null>): void {
  const put = db.prepare('INSERT OR REPLACE INTO metadata (name, value) VALUES (?, ?)');
  db.transaction(() => {
    for (const [name, value] of Object.entries(metadata)) put.run(name, value);
  })();
}

/** Each piece's tiles as [zoom_level, tile_column, tile_row] (TMS). */
function* rowsOf(p: PackPiece): Generator<[number, number, number]> {
  for (let t = 0; t < p.runLength; t++) {
    const [z, x, y] = tileIdToZxy(p.tileId + t);
    yield [z, x, flipRow(z, y)];
  }
}

/** Write `path` (temp + rename) with `fill(db)`, closing the database either way. */
async function produce<T>(path: string, fill: (db: Database.Database, tmp: string) => Promise<T>, start?: (tmp: string) => Promise<void>): Promise<T> {
  const tmp = tempPathFor(path);
  let db: Database.Database | undefined;
  try {
    if (start) await start(tmp);
    db = start ? new Database(tmp) : create(tmp);
    const out = await fill(db, tmp);
    db.close();
    db = undefined;
    await rename(tmp, path);
    return out;
  } catch (e) {
    db?.close();
    await rm(tmp, { force: true });
    throw e;
  }
}

/** The distinct contents of pieces in first-use order. */
function contentsOf(pieces: readonly PackPiece[]): { offset: number; length: number }[] {
  const seen = new Set<number>();
  const out: { offset: number; length: number }[] = [];
  for (const p of pieces) {
    if (seen.has(p.offset)) continue;
    seen.add(p.offset);
    out.push({ offset: p.offset, length: p.length });
  }
  return out;
}

/** MD5 of the bytes of each distinct content of `pieces` (read from `source`), by offset; `each` sees the bytes. */
async function md5s(source: ArchiveReader, pieces: readonly PackPiece[], each: (id: string, bytes: Uint8Array) => void): Promise<Map<number, string>> {
  const contents = contentsOf(pieces);
  const ids = new Map<number, string>();
  let i = 0;
  for await (const bytes of readInOrder(source, contents)) {
    const id = createHash('md5').update(bytes).digest('hex').toUpperCase();
    ids.set(contents[i++].offset, id);
    each(id, bytes);
  }
  return ids;
}

/** Write a full pack of `tiles` (bytes from `source`) with `metadata` (plus its agg_tiles_hash) to `path`. Returns the hash. */
export function writeMbtilesPack(path: string, source: ArchiveReader, tiles: PackTiles, metadata: MbtilesMetadata): Promise<string> {
  return produce(path, async (db) => {
    for (const s of SCHEMA_NORMALIZED) db.exec(s);
    const putImage = db.prepare('INSERT OR IGNORE INTO images (tile_id, tile_data) VALUES (?, ?)');
    const putMap = db.prepare('INSERT INTO map (zoom_level, tile_column, tile_row, tile_id) VALUES (?, ?, ?, ?)');
    let images: [string, Uint8Array][] = [];
    const flushImages = db.transaction(() => {
      for (const [id, bytes] of images) putImage.run(id, bytes);
    });
    const ids = await md5s(source, tiles.pieces, (id, bytes) => {
      images.push([id, bytes.slice()]);
      if (images.length >= BATCH_ROWS) {
        flushImages();
        images = [];
      }
    });
    flushImages();
    db.transaction(() => {
      for (const p of tiles.pieces) for (const [z, x, row] of rowsOf(p)) putMap.run(z, x, row, ids.get(p.offset)!);
    })();
    const hash = aggTilesHashOfDb(db);
    putMetadata(db, { ...metadata, [AGG_TILES_HASH]: hash });
    return hash;
  });
}

/**
 * Write a delta (Martin's patch convention) to `path`: the changed tiles of `delta` (bytes from
 * `source`, the newer archive), NULL for the removed ones, the metadata that changed (`null`: removed),
 * and the agg_tiles_hash of the older and the newer pack it leads from and to.
 */
export function writeMbtilesDelta(path: string, source: ArchiveReader, delta: PackDelta, metadata: Record<string, string | null>, before: string, after: string): Promise<void> {
  return produce(path, async (db) => {
    db.exec(SCHEMA_FLAT);
    const put = db.prepare('INSERT INTO tiles (zoom_level, tile_column, tile_row, tile_data) VALUES (?, ?, ?, ?)');
    const bytesOf = new Map<number, Uint8Array>();
    let i = 0;
    const contents = contentsOf(delta.pieces);
    for await (const bytes of readInOrder(source, contents)) bytesOf.set(contents[i++].offset, bytes.slice());
    db.transaction(() => {
      for (const p of delta.pieces) for (const [z, x, row] of rowsOf(p)) put.run(z, x, row, bytesOf.get(p.offset)!);
      for (const [start, end] of delta.removed) {
        for (let id = start; id < end; id++) {
          const [z, x, y] = tileIdToZxy(id);
          put.run(z, x, flipRow(z, y), null);
        }
      }
    })();
    putMetadata(db, { ...metadata, [AGG_TILES_HASH_BEFORE_APPLY]: before, [AGG_TILES_HASH_AFTER_APPLY]: after, [AGG_TILES_HASH]: aggTilesHashOfDb(db) });
  });
}

/** The metadata of an MBTiles file. */
export function readMbtilesMetadata(db: Database.Database): Record<string, string | null> {
  const out: Record<string, string | null> = {};
  for (const r of db.prepare('SELECT name, value FROM metadata').all() as { name: string; value: string | null }[]) out[r.name] = r.value;
  return out;
}

/** What changes from metadata `older` to `newer` (agg_tiles_hash keys aside): changed or new names, and removed ones as `null`. */
export function metadataDiff(older: MbtilesMetadata, newer: MbtilesMetadata): Record<string, string | null> {
  const out: Record<string, string | null> = {};
  for (const [k, v] of Object.entries(newer)) if (!AGG_KEYS.has(k) && older[k] !== v) out[k] = v;
  for (const k of Object.keys(older)) if (!AGG_KEYS.has(k) && !(k in newer)) out[k] = null;
  return out;
}

/** Open an MBTiles file read-only, with a clear error naming it. */
function openExisting(path: string, what: string): Database.Database {
  try {
    const db = new Database(path, { readonly: true, fileMustExist: true });
    db.prepare('SELECT 1 FROM metadata LIMIT 1').get();
    return db;
  } catch (e) {
    throw new UserError(`${path}: cannot read the ${what} as MBTiles (${(e as Error).message})`);
  }
}

/**
 * Apply MBTiles delta `deltaPath` to `oldPath`, writing `outPath` (temp + rename). The old file's tiles
 * must have the delta's agg_tiles_hash_before_apply, and the result must have its
 * agg_tiles_hash_after_apply (else nothing is written). Returns the result's agg_tiles_hash.
 */
export async function applyMbtilesDelta(oldPath: string, deltaPath: string, outPath: string): Promise<string> {
  const delta = openExisting(deltaPath, 'delta');
  try {
    const dm = readMbtilesMetadata(delta);
    const before = dm[AGG_TILES_HASH_BEFORE_APPLY];
    const after = dm[AGG_TILES_HASH_AFTER_APPLY];
    if (!before || !after) throw new UserError(`${deltaPath}: not a delta (no ${AGG_TILES_HASH_BEFORE_APPLY} / ${AGG_TILES_HASH_AFTER_APPLY} in its metadata)`);
    const old = openExisting(oldPath, 'older pack');
    let oldHash: string;
    try {
      oldHash = aggTilesHashOfDb(old);
    } finally {
      old.close();
    }
    if (oldHash !== before) {
      throw new UserError(`${oldPath}: its tiles' agg_tiles_hash is ${oldHash}, the delta ${deltaPath} applies to ${before} (a pack of another version or area)`);
    }
    return await produce(
      outPath,
      async (db) => {
        db.pragma('journal_mode = OFF');
        const normalized = (db.prepare("SELECT COUNT(*) AS n FROM sqlite_master WHERE type = 'table' AND name IN ('map', 'images')").get() as { n: number }).n === 2;
        const del = db.prepare(`DELETE FROM ${normalized ? 'map' : 'tiles'} WHERE zoom_level = ? AND tile_column = ? AND tile_row = ?`);
        const putMap = normalized ? db.prepare('INSERT OR REPLACE INTO map (zoom_level, tile_column, tile_row, tile_id) VALUES (?, ?, ?, ?)') : undefined;
        const putImage = normalized ? db.prepare('INSERT OR IGNORE INTO images (tile_id, tile_data) VALUES (?, ?)') : undefined;
        const putTile = normalized ? undefined : db.prepare('INSERT OR REPLACE INTO tiles (zoom_level, tile_column, tile_row, tile_data) VALUES (?, ?, ?, ?)');
        const rows = delta.prepare('SELECT zoom_level, tile_column, tile_row, tile_data FROM tiles').raw();
        db.transaction(() => {
          for (const [z, x, row, data] of rows.iterate() as Iterable<[number, number, number, Buffer | null]>) {
            if (data === null) del.run(z, x, row);
            else if (normalized) {
              const id = createHash('md5').update(data).digest('hex').toUpperCase();
              putImage!.run(id, data);
              putMap!.run(z, x, row, id);
            } else putTile!.run(z, x, row, data);
          }
          if (normalized) db.exec('DELETE FROM images WHERE tile_id NOT IN (SELECT tile_id FROM map WHERE tile_id IS NOT NULL)');
          const put = db.prepare('INSERT OR REPLACE INTO metadata (name, value) VALUES (?, ?)');
          const drop = db.prepare('DELETE FROM metadata WHERE name = ?');
          for (const [k, v] of Object.entries(dm)) {
            if (AGG_KEYS.has(k)) continue;
            if (v === null) drop.run(k);
            else put.run(k, v);
          }
        })();
        const hash = aggTilesHashOfDb(db);
        if (hash !== after) throw new UserError(`${deltaPath}: applied to ${oldPath}, the tiles' agg_tiles_hash is ${hash}, not the ${after} the delta promises (nothing written)`);
        db.prepare('INSERT OR REPLACE INTO metadata (name, value) VALUES (?, ?)').run(AGG_TILES_HASH, hash);
        db.exec('VACUUM');
        return hash;
      },
      (tmp) => copyFile(oldPath, tmp),
    );
  } finally {
    delta.close();
  }
}
