import Database from 'better-sqlite3';
import { UserError } from '../../lib/errors.ts';
import type { TileFormat } from '../../lib/manifest.ts';
import { flipRow } from '../../lib/tile-math.ts';
import {
  asInputError,
  checkTileCoord,
  compressionOf,
  defaultCenter,
  matchCompression,
  parseBounds,
  parseFormat,
  parseNumberList,
  parseZoom,
  sniffFormat,
  tileRangeBounds,
  type SourceMetadata,
  type SourceTile,
  type TileSource,
} from './common.ts';

/** Per-zoom statistics of the stored tiles (XYZ rows). */
export interface ZoomStats {
  z: number;
  count: number;
  minX: number;
  maxX: number;
  minY: number;
  maxY: number;
}

/** Metadata keys handled explicitly; the rest (minus MBTiles bookkeeping) goes to `extra`. */
const KNOWN_KEYS = new Set(['name', 'attribution', 'description', 'version', 'bounds', 'center', 'minzoom', 'maxzoom', 'format', 'json']);
const DROPPED_KEYS = new Set(['scheme', 'filesize', 'tilejson', 'pixel_scale', 'maskLevel', 'id', 'compression', 'generator_options']);

/**
 * Normalise MBTiles-style metadata (`name`/`value` strings; also used by tile folders'
 * metadata.json). Bounds and zooms fall back to what the tiles themselves cover.
 */
export function normaliseMetadata(fields: Record<string, unknown>, stats: ZoomStats[], where: string): SourceMetadata {
  const str = (k: string) => (fields[k] === undefined || fields[k] === null ? undefined : String(fields[k]));
  const present = stats.filter((s) => s.count > 0);
  const tileMin = present.length ? Math.min(...present.map((s) => s.z)) : 0;
  const tileMax = present.length ? Math.max(...present.map((s) => s.z)) : 0;
  // Declared zooms are checked, but the zooms actually stored win (clients overzoom from maxzoom).
  const declaredMin = fields.minzoom !== undefined ? parseZoom(fields.minzoom, where, 'minzoom') : tileMin;
  const declaredMax = fields.maxzoom !== undefined ? parseZoom(fields.maxzoom, where, 'maxzoom') : tileMax;
  if (declaredMin > declaredMax) {
    throw new UserError(`${where}: metadata "minzoom"/"maxzoom": expected minzoom <= maxzoom (got ${declaredMin} > ${declaredMax})`);
  }
  const minzoom = present.length ? tileMin : declaredMin;
  const maxzoom = present.length ? tileMax : declaredMax;
  let bounds: [number, number, number, number];
  if (fields.bounds !== undefined) bounds = parseBounds(fields.bounds, where);
  else {
    const top = present.find((s) => s.z === tileMax);
    bounds = top ? tileRangeBounds(top.z, top.minX, top.maxX, top.minY, top.maxY) : [-180, -85.0511287798066, 180, 85.0511287798066];
  }
  let center: [number, number, number];
  if (fields.center !== undefined) {
    const [lon, lat, z] = parseNumberList(fields.center, 3, where, 'center');
    center = [lon, lat, z];
  } else center = defaultCenter(bounds, minzoom, maxzoom);

  let vectorLayers: unknown[] | undefined;
  const extra: Record<string, unknown> = {};
  const json = fields.json;
  if (json !== undefined && json !== null) {
    let parsed: unknown;
    try {
      parsed = typeof json === 'string' ? JSON.parse(json) : json;
    } catch (e) {
      throw new UserError(`${where}: metadata "json": not valid JSON (${(e as Error).message})`);
    }
    if (typeof parsed !== 'object' || parsed === null) throw new UserError(`${where}: metadata "json": expected a JSON object`);
    const o = parsed as Record<string, unknown>;
    if (o.vector_layers !== undefined) {
      if (!Array.isArray(o.vector_layers)) throw new UserError(`${where}: metadata "json".vector_layers: expected an array`);
      vectorLayers = o.vector_layers;
    }
    for (const [k, v] of Object.entries(o)) if (k !== 'vector_layers') extra[k] = v;
  }
  if (Array.isArray(fields.vector_layers)) vectorLayers = fields.vector_layers;
  for (const [k, v] of Object.entries(fields)) {
    if (!KNOWN_KEYS.has(k) && !DROPPED_KEYS.has(k) && k !== 'vector_layers') extra[k] = v;
  }
  return {
    name: str('name'),
    attribution: str('attribution'),
    description: str('description'),
    version: str('version'),
    bounds,
    center,
    minzoom,
    maxzoom,
    vector_layers: vectorLayers,
    extra,
  };
}

/** Resolve the tile format from metadata `format`, or sniff the first tile when absent. */
export function resolveFormat(value: unknown, first: Uint8Array | undefined, where: string): TileFormat {
  if (value === undefined || value === null) return first ? sniffFormat(first) : 'pbf';
  const f = parseFormat(String(value));
  if (!f) throw new UserError(`${where}: metadata "format": expected one of pbf, png, jpg, webp (got ${JSON.stringify(value)})`);
  return f;
}

interface TileRow {
  zoom_level: number;
  tile_column: number;
  tile_row: number;
  tile_data: Buffer | null;
}

/** Open an MBTiles file (SQLite with `metadata` and `tiles`); tiles stream in TMS→XYZ order. */
export async function openMbtiles(path: string): Promise<TileSource> {
  let db: Database.Database;
  try {
    db = new Database(path, { readonly: true, fileMustExist: true });
  } catch (e) {
    throw asInputError(e, path, 'cannot open as SQLite');
  }
  try {
    const names = new Set(
      (db.prepare("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')").all() as { name: string }[]).map((r) => r.name),
    );
    for (const required of ['metadata', 'tiles']) {
      if (!names.has(required)) throw new UserError(`${path}: not an MBTiles file (SQLite without a "${required}" table or view)`);
    }
    const fields: Record<string, string> = {};
    for (const row of db.prepare('SELECT name, value FROM metadata').iterate() as Iterable<{ name: unknown; value: unknown }>) {
      if (typeof row.name === 'string' && row.value !== null && row.value !== undefined) fields[row.name] = String(row.value);
    }
    const stats = (
      db
        .prepare(
          'SELECT zoom_level AS z, COUNT(*) AS count, MIN(tile_column) AS minX, MAX(tile_column) AS maxX, MIN(tile_row) AS minRow, MAX(tile_row) AS maxRow FROM tiles GROUP BY zoom_level ORDER BY zoom_level',
        )
        .all() as { z: number; count: number; minX: number; maxX: number; minRow: number; maxRow: number }[]
    ).map((r): ZoomStats => ({ z: r.z, count: r.count, minX: r.minX, maxX: r.maxX, minY: flipRow(r.z, r.maxRow), maxY: flipRow(r.z, r.minRow) }));
    const count = stats.reduce((n, s) => n + s.count, 0);
    if (count === 0) throw new UserError(`${path}: the "tiles" table holds no tiles`);
    const firstRow = db.prepare('SELECT tile_data FROM tiles WHERE tile_data IS NOT NULL LIMIT 1').get() as { tile_data: Buffer } | undefined;
    const first = firstRow?.tile_data;
    const format = resolveFormat(fields.format, first, path);
    const compression = compressionOf(format, first);
    const metadata = normaliseMetadata(fields, stats, path);
    const conn = db;
    return {
      path,
      kind: 'mbtiles',
      format,
      compression,
      metadata,
      count,
      async *tiles(): AsyncIterable<SourceTile> {
        const stmt = conn.prepare('SELECT zoom_level, tile_column, tile_row, tile_data FROM tiles');
        try {
          for (const r of stmt.iterate() as Iterable<TileRow>) {
            const z = r.zoom_level;
            const x = r.tile_column;
            const y = flipRow(z, r.tile_row);
            checkTileCoord(z, x, y, `${path}: tiles row (zoom_level ${z}, tile_column ${x}, tile_row ${r.tile_row})`);
            if (r.tile_data === null) continue;
            yield { z, x, y, data: matchCompression(r.tile_data, compression, format) };
          }
        } catch (e) {
          throw asInputError(e, path, 'cannot read tiles');
        }
      },
      async close() {
        conn.close();
      },
    };
  } catch (e) {
    db.close();
    throw asInputError(e, path, 'not a readable MBTiles file');
  }
}
