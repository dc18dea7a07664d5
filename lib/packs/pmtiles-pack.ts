/**
 * A pack as a PMTiles v3 archive: laid out from the selected tiles before any tile byte is read
 * (lib/pmtiles/planned.ts), then streamed (HTTP) or written to a file (temp + rename), the source's
 * stored bytes copied unchanged. A delta archive holds the changed tiles, and names the removed ones
 * and the version it applies to in its metadata (`tilebake_delta`); `tilebake pack-apply` (apply.ts)
 * merges it into the older pack through PMTilesWriter, giving the newer pack byte for byte.
 */
import { createWriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import { tempPathFor } from '../atomic.ts';
import { PlannedArchive, type PlannedLayout } from '../pmtiles/planned.ts';
import type { ArchiveReader } from '../pmtiles/index.ts';
import type { WriterOptions } from '../pmtiles/prelude.ts';
import { readInOrder } from './read.ts';
import type { PackTiles } from './select.ts';

/** Metadata key of a delta archive: `{ since, removed }`. */
export const DELTA_KEY = 'tilebake_delta';

/** What a delta archive's metadata says besides the newer pack's metadata. */
export interface DeltaInfo {
  /** The build the older pack is of. */
  since: string;
  /** Tiles to remove from the older pack, `z/x/y`. */
  removed: string[];
}

/** Lay out the archive of `tiles` (from `source`'s tile data) with the options (metadata, bounds, center, types). */
export function planPmtiles(tiles: PackTiles, opts: WriterOptions): PlannedLayout {
  const plan = new PlannedArchive();
  for (const p of tiles.pieces) plan.add(p.tileId, p.runLength, p.offset, p.length);
  return plan.layout(opts);
}

/** The archive's bytes in order: the prelude, then each content's bytes read from `source`. */
export async function* pmtilesBytes(layout: PlannedLayout, source: ArchiveReader): AsyncGenerator<Uint8Array> {
  for (const part of layout.parts) yield part;
  const ranges = (function* () {
    for (const c of layout.contents()) yield { offset: c.sourceOffset, length: c.length };
  })();
  yield* readInOrder(source, ranges);
}

/** Chunks gathered into buffers of about `size` bytes (fewer, larger writes; tiles are small). */
export async function* coalesce(chunks: AsyncIterable<Uint8Array>, size = 1 << 20): AsyncGenerator<Uint8Array> {
  let buf = Buffer.allocUnsafe(size);
  let used = 0;
  for await (const c of chunks) {
    if (used + c.length > size && used > 0) {
      yield buf.subarray(0, used);
      buf = Buffer.allocUnsafe(size);
      used = 0;
    }
    if (c.length >= size) {
      yield c;
      continue;
    }
    buf.set(c, used);
    used += c.length;
  }
  if (used > 0) yield buf.subarray(0, used);
}

/** Write chunks to `path` through a temp file beside it, renamed into place when complete. */
export async function writeChunksAtomic(path: string, chunks: AsyncIterable<Uint8Array>): Promise<void> {
  const tmp = tempPathFor(path);
  try {
    await pipeline(Readable.from(coalesce(chunks), { objectMode: false }), createWriteStream(tmp));
    await rename(tmp, path);
  } catch (e) {
    await rm(tmp, { force: true });
    throw e;
  }
}
