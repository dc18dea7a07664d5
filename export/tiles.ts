/**
 * Tiles of a build's PMTiles archives as export files, the stored bytes unchanged (gzip vector tiles
 * stay gzip; a tileset's MLT tiles beside its MVT ones as `{y}.mlt`, a raster tileset's @2x tiles as `{y}@2x.{format}`). Tile data is read in large sequential chunks; an archive's deduplicated entries (the
 * sea, empty land) are recognised by their offset and handed on by content hash alone.
 */
import { tileIdToZxy } from 'pmtiles';
import type { StyleEntry, TilesetEntry } from '../lib/manifest.ts';
import { Compression, openArchive, type ArchiveReader } from '../lib/pmtiles/index.ts';
import type { Store } from '../lib/storage.ts';
import { tileBody } from '../static-server/tile-response.ts';
import type { ExportPart } from './plan.ts';

/** One archive to export and the URL path of its tiles. */
export interface TileArchive {
  archive: string;
  /** `data/{tileset}` or `styles/{style}`. */
  prefix: string;
  /** `.pbf`, `.png`, `@2x.jpg` ... */
  suffix: string;
  part: ExportPart;
}

/** One exported tile: its path and content hash; `bytes` on the first occurrence of those bytes in the archive. */
export interface TileFile {
  path: string;
  hash: string;
  bytes?: Uint8Array;
}

/** Bytes of tile data read at once. */
const CHUNK_BYTES = 4 * 1024 * 1024;

/** The archives of a build's tilesets and styles with their URL layout. */
export function tileArchives(tilesets: Record<string, TilesetEntry>, styles: Record<string, StyleEntry>, parts: ReadonlySet<ExportPart>): TileArchive[] {
  const out: TileArchive[] = [];
  if (parts.has('tilesets')) {
    for (const [id, t] of Object.entries(tilesets)) {
      out.push({ archive: t.archive, prefix: `data/${id}`, suffix: `.${t.format}`, part: 'tilesets' });
      if (t.mlt) out.push({ archive: t.mlt.archive, prefix: `data/${id}`, suffix: '.mlt', part: 'tilesets' });
      if (t.kind === 'raster' && t.hidpi) out.push({ archive: t.hidpi.archive, prefix: `data/${id}`, suffix: `@2x.${t.format}`, part: 'tilesets' });
    }
  }
  if (parts.has('styles')) {
    for (const [id, s] of Object.entries(styles)) {
      for (const a of Object.values(s.archives)) {
        out.push({ archive: a.archive, prefix: `styles/${id}`, suffix: `${a.scale === 2 ? '@2x' : ''}.${a.format}`, part: 'styles' });
      }
    }
  }
  return out;
}

/** The content hash the export's listing records (the server's ETag rule, without quotes). */
export function contentHash(bytes: Uint8Array): string {
  return tileBody(bytes).etag.slice(1, -1);
}

/** Reads tile data through a moving window of CHUNK_BYTES (archives store tiles in tile-id order). */
class ChunkReader {
  private start = 0;
  private data: Uint8Array = new Uint8Array(0);
  constructor(private readonly reader: ArchiveReader) {}

  async read(offset: number, length: number): Promise<Uint8Array> {
    if (offset >= this.start && offset + length <= this.start + this.data.length) {
      return this.data.subarray(offset - this.start, offset - this.start + length);
    }
    const total = this.reader.header.tileDataLength ?? 0;
    const size = Math.max(length, Math.min(CHUNK_BYTES, total - offset));
    this.data = await this.reader.readRange(offset, size);
    this.start = offset;
    return this.data.subarray(0, length);
  }
}

/** Counts of one archive's walk. */
export interface TileCounts {
  /** Addressed tiles with no bytes (not written: a static host answers 404). */
  empty: number;
}

/** Every non-empty tile of an archive. */
export async function* archiveTiles(store: Store, a: TileArchive, counts: TileCounts): AsyncGenerator<TileFile> {
  const reader = await openArchive(await store.openRange(a.archive));
  try {
    const chunks = new ChunkReader(reader);
    const hashByOffset = new Map<number, string>();
    for await (const e of reader.entries()) {
      if (e.length === 0) {
        counts.empty += e.runLength;
        continue;
      }
      let hash = hashByOffset.get(e.offset);
      let bytes: Uint8Array | undefined;
      if (hash === undefined) {
        bytes = await chunks.read(e.offset, e.length);
        hash = contentHash(bytes);
        hashByOffset.set(e.offset, hash);
      }
      for (let i = 0; i < e.runLength; i++) {
        const [z, x, y] = i === 0 ? [e.z, e.x, e.y] : tileIdToZxy(e.tileId + i);
        yield { path: `${a.prefix}/${z}/${x}/${y}${a.suffix}`, hash, bytes };
        bytes = undefined;
      }
    }
  } finally {
    await reader.close();
  }
}

/** Ids of the tilesets whose archives store gzip-compressed tiles. */
export async function gzipTilesetIds(store: Store, tilesets: Record<string, TilesetEntry>): Promise<Set<string>> {
  const ids = new Set<string>();
  for (const [id, t] of Object.entries(tilesets)) {
    const reader = await openArchive(await store.openRange(t.archive));
    if (reader.header.tileCompression === Compression.Gzip) ids.add(id);
    await reader.close();
  }
  return ids;
}
