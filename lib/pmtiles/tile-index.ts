/**
 * The writer's in-memory index: tile runs, unique contents and the dedup hash table, in compact
 * typed-array columns (≈16 bytes per run + ≈12 bytes per content + ≈23 bytes of hash table per content).
 * Tile bytes never live here, only where each content sits in the writer's temp data file.
 */
import { tileIdToZxy } from 'pmtiles';
import { MAX_ZOOM, tileBounds, type BBox } from '../tile-math.ts';
import { ContentHashTable, type ContentHash } from './content-hash.ts';
import type { EntryColumns } from './directory.ts';

/** Initial capacity of the growable columns. */
const INITIAL_CAPACITY = 1024;
/** Largest run length an entry can hold (uint32). */
const MAX_RUN_LENGTH = 0xffffffff;

/** Where the tile contents go, in output (clustered) order, and the final directory entries. */
export interface IndexLayout {
  entries: EntryColumns;
  /** Content indexes in the order their bytes appear in the tile data section. */
  outputOrder: Uint32Array;
  /** True when the temp data file already has the output order (tiles arrived in tile-id order). */
  dataInOrder: boolean;
  addressedTiles: number;
  tileContents: number;
  dataLength: number;
  minZoom: number;
  maxZoom: number;
  /** Extent of the tiles at the deepest zoom, `[w, s, e, n]`; undefined for an empty index. */
  extent?: BBox;
}

/** Thrown by `layout()` when one tile address was added twice. */
export class DuplicateTileError extends Error {
  constructor(readonly tileId: number) {
    const [z, x, y] = tileIdToZxy(tileId);
    super(`PMTiles writer: tile ${z}/${x}/${y} was added twice`);
    this.name = 'DuplicateTileError';
  }
}

function grow<T extends Float64Array | Uint32Array>(arr: T, needed: number): T {
  if (needed <= arr.length) return arr;
  const next = new (arr.constructor as { new (n: number): T })(Math.max(needed, arr.length * 2));
  next.set(arr);
  return next;
}

/** Tile runs + unique contents of one archive being written. */
export class TileIndex {
  private runIds = new Float64Array(INITIAL_CAPACITY);
  private runContents = new Uint32Array(INITIAL_CAPACITY);
  private runLengths = new Uint32Array(INITIAL_CAPACITY);
  private runCount = 0;
  private contentOffsets = new Float64Array(INITIAL_CAPACITY);
  private contentLengths = new Uint32Array(INITIAL_CAPACITY);
  private contentCount = 0;
  private dataLength = 0;
  private readonly dedup = new ContentHashTable();
  private inOrder = true;
  private lastId = -1;
  private addressed = 0;
  private readonly minX = new Int32Array(MAX_ZOOM + 1).fill(2 ** 31 - 1);
  private readonly minY = new Int32Array(MAX_ZOOM + 1).fill(2 ** 31 - 1);
  private readonly maxX = new Int32Array(MAX_ZOOM + 1).fill(-1);
  private readonly maxY = new Int32Array(MAX_ZOOM + 1).fill(-1);

  /** The content already stored under hash `h` with this length, or -1. */
  findContent(h: ContentHash, length: number): number {
    const c = this.dedup.get(h);
    return c >= 0 && this.contentLengths[c] === length ? c : -1;
  }

  /** Register new content of `length` bytes appended at the end of the temp data file; returns its index. */
  addContent(h: ContentHash, length: number): number {
    const c = this.contentCount++;
    this.contentOffsets = grow(this.contentOffsets, c + 1);
    this.contentLengths = grow(this.contentLengths, c + 1);
    this.contentOffsets[c] = this.dataLength;
    this.contentLengths[c] = length;
    this.dataLength += length;
    this.dedup.set(h, c);
    return c;
  }

  /** Address tile `tileId` (= z/x/y) to content `c`; consecutive ids with the same content share one run. */
  addTile(tileId: number, z: number, x: number, y: number, c: number): void {
    if (tileId <= this.lastId) this.inOrder = false;
    this.lastId = tileId;
    this.addressed++;
    if (x < this.minX[z]) this.minX[z] = x;
    if (x > this.maxX[z]) this.maxX[z] = x;
    if (y < this.minY[z]) this.minY[z] = y;
    if (y > this.maxY[z]) this.maxY[z] = y;
    const last = this.runCount - 1;
    if (
      last >= 0 &&
      this.runContents[last] === c &&
      this.runIds[last] + this.runLengths[last] === tileId &&
      this.runLengths[last] < MAX_RUN_LENGTH
    ) {
      this.runLengths[last]++;
      return;
    }
    const r = this.runCount++;
    this.runIds = grow(this.runIds, r + 1);
    this.runContents = grow(this.runContents, r + 1);
    this.runLengths = grow(this.runLengths, r + 1);
    this.runIds[r] = tileId;
    this.runContents[r] = c;
    this.runLengths[r] = 1;
  }

  /** Byte offset and length of content `c` in the temp data file. */
  contentRange(c: number): [number, number] {
    return [this.contentOffsets[c], this.contentLengths[c]];
  }

  /** Zoom range and the deepest zoom's tile extent. */
  private zoomsAndExtent(): { minZoom: number; maxZoom: number; extent?: BBox } {
    let minZoom = -1;
    let maxZoom = -1;
    for (let z = 0; z <= MAX_ZOOM; z++) {
      if (this.maxX[z] < 0) continue;
      if (minZoom < 0) minZoom = z;
      maxZoom = z;
    }
    if (maxZoom < 0) return { minZoom: 0, maxZoom: 0 };
    const [w, , , n] = tileBounds(maxZoom, this.minX[maxZoom], this.minY[maxZoom]);
    const [, s, e] = tileBounds(maxZoom, this.maxX[maxZoom], this.maxY[maxZoom]);
    return { minZoom, maxZoom, extent: [w, s, e, n] };
  }

  /**
   * Sort the runs by tile id, reject duplicates, merge adjacent runs, place contents in clustered
   * order (first use in tile-id order) and return the directory entries. Frees the dedup table.
   */
  layout(): IndexLayout {
    this.dedup.clear();
    const n = this.runCount;
    const order = new Uint32Array(n);
    for (let i = 0; i < n; i++) order[i] = i;
    if (!this.inOrder) {
      const ids = this.runIds;
      order.sort((a, b) => ids[a] - ids[b]);
    }
    const tileIds = new Float64Array(n);
    const runLengths = new Uint32Array(n);
    const lengths = new Uint32Array(n);
    const offsets = new Float64Array(n);
    const newOffset = new Float64Array(this.contentCount).fill(-1);
    const outputOrder = new Uint32Array(this.contentCount);
    let placed = 0;
    let cursor = 0;
    let count = 0;
    let prevContent = -1;
    for (let k = 0; k < n; k++) {
      const r = order[k];
      const id = this.runIds[r];
      const c = this.runContents[r];
      const run = this.runLengths[r];
      if (count > 0) {
        const prevEnd = tileIds[count - 1] + runLengths[count - 1];
        if (id < prevEnd) throw new DuplicateTileError(id);
        if (id === prevEnd && c === prevContent && runLengths[count - 1] + run <= MAX_RUN_LENGTH) {
          runLengths[count - 1] += run;
          continue;
        }
      }
      if (newOffset[c] < 0) {
        newOffset[c] = cursor;
        cursor += this.contentLengths[c];
        outputOrder[placed++] = c;
      }
      tileIds[count] = id;
      runLengths[count] = run;
      lengths[count] = this.contentLengths[c];
      offsets[count] = newOffset[c];
      prevContent = c;
      count++;
    }
    return {
      entries: { count, tileIds, runLengths, lengths, offsets },
      outputOrder,
      dataInOrder: this.inOrder,
      addressedTiles: this.addressed,
      tileContents: this.contentCount,
      dataLength: this.dataLength,
      ...this.zoomsAndExtent(),
    };
  }
}
