/**
 * A PMTiles v3 archive laid out before its tile bytes are read: each tile names its content by where
 * the bytes are in a source (an offset) and their length. The layout (clustered, contents deduplicated
 * by source offset, run-length encoded) and everything before the tile data (prelude.ts) are known
 * first, so the archive can be streamed, or written without a temp copy of its tile data: the bytes of
 * each content are read when their turn comes. For a source written by PMTilesWriter (one offset per
 * distinct content) the archive is byte for byte the one PMTilesWriter writes from the same tiles.
 */
import { tileIdToZxy } from 'pmtiles';
import type { ContentHash } from './content-hash.ts';
import { archivePrelude, checkOptions, type ArchivePrelude, type WriterOptions } from './prelude.ts';
import { TileIndex } from './tile-index.ts';

/** One content of the tile data section, in output order: where its bytes are in the source. */
export interface PlannedContent {
  sourceOffset: number;
  length: number;
}

/** A laid-out archive: its prelude and the contents of its tile data section in order. */
export interface PlannedLayout extends ArchivePrelude {
  /** The tile data section's contents in output order (their lengths add up to the header's tileDataLength). */
  contents(): Iterable<PlannedContent>;
}

const INITIAL_CAPACITY = 1024;

/** The dedup key of a source range (the offset's two 32-bit halves and the length). */
function keyOf(sourceOffset: number, length: number): ContentHash {
  return [sourceOffset % 2 ** 32, Math.floor(sourceOffset / 2 ** 32), length];
}

/** Tiles added in any order (each tile id once); `layout()` lays the archive out. */
export class PlannedArchive {
  private readonly index = new TileIndex();
  private sourceOffsets = new Float64Array(INITIAL_CAPACITY);
  private laidOut = false;

  /** Tiles `tileId … tileId + runLength - 1`, each holding the `length` bytes at `sourceOffset` of the source. */
  add(tileId: number, runLength: number, sourceOffset: number, length: number): void {
    if (this.laidOut) throw new Error('PlannedArchive: add after layout()');
    if (length <= 0) throw new RangeError(`PlannedArchive: tile ${tileIdToZxy(tileId).join('/')} is empty (PMTiles entries need at least one byte)`);
    const h = keyOf(sourceOffset, length);
    let c = this.index.findContent(h, length);
    if (c < 0) {
      c = this.index.addContent(h, length);
      if (c >= this.sourceOffsets.length) {
        const next = new Float64Array(this.sourceOffsets.length * 2);
        next.set(this.sourceOffsets);
        this.sourceOffsets = next;
      }
      this.sourceOffsets[c] = sourceOffset;
    }
    for (let i = 0; i < runLength; i++) {
      const [z, x, y] = tileIdToZxy(tileId + i);
      this.index.addTile(tileId + i, z, x, y, c);
    }
  }

  /** Lay the archive out (once): its prelude, and its contents in output order. */
  layout(opts: WriterOptions): PlannedLayout {
    checkOptions(opts);
    if (this.laidOut) throw new Error('PlannedArchive: layout() called twice');
    this.laidOut = true;
    const layout = this.index.layout();
    const prelude = archivePrelude(layout, opts);
    const index = this.index;
    const offsets = this.sourceOffsets;
    return {
      ...prelude,
      *contents() {
        for (const c of layout.outputOrder) yield { sourceOffset: offsets[c], length: index.contentRange(c)[1] };
      },
    };
  }
}
