/**
 * PMTiles v3 directory serialisation (spec §4) and the root/leaf split for the writer.
 * Entries live in parallel typed-array columns so a planet's worth stays compact in memory.
 */
import { gzipSync } from 'node:zlib';
import { MAX_ROOT_SIZE } from './header.ts';

/** Directory entries as parallel columns, sorted by tile id (`runLength` 0 marks a leaf pointer). */
export interface EntryColumns {
  count: number;
  tileIds: ArrayLike<number>;
  runLengths: ArrayLike<number>;
  lengths: ArrayLike<number>;
  offsets: ArrayLike<number>;
}

/** The root directory plus the leaf directories it points to, all gzip'd and ready to write. */
export interface Directories {
  root: Uint8Array;
  /** Leaf directories in order; the root's leaf pointers give offsets relative to the first one. */
  leaves: Uint8Array[];
  leafBytes: number;
}

/** Smallest automatic leaf size (entries), as in go-pmtiles/planetiler. */
const MIN_AUTO_LEAF_ENTRIES = 4096;
/** Automatic leaf size aims for at most this many leaves. */
const TARGET_LEAF_COUNT = 3500;
/** Leaf size growth per attempt when the root still does not fit. */
const LEAF_GROWTH = 1.2;
/** Gzip level for directories and metadata: deterministic bytes, good ratio. */
const GZIP_LEVEL = 9;

/** Growable byte buffer with unsigned LEB128 varints for values up to 2^53. */
class VarintWriter {
  private buf = new Uint8Array(1024);
  private len = 0;

  private ensure(extra: number): void {
    if (this.len + extra <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.len + extra) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.buf.subarray(0, this.len));
    this.buf = next;
  }

  varint(value: number): void {
    if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`varint: ${value} is not a non-negative safe integer`);
    this.ensure(8);
    let v = value;
    while (v >= 0x80) {
      this.buf[this.len++] = (v % 0x80) | 0x80;
      v = Math.floor(v / 0x80);
    }
    this.buf[this.len++] = v;
  }

  bytes(): Uint8Array {
    return this.buf.subarray(0, this.len);
  }
}

/** Serialise entries `[start, end)` of `cols` as an uncompressed v3 directory. */
export function serializeDirectory(cols: EntryColumns, start = 0, end = cols.count): Uint8Array {
  const w = new VarintWriter();
  w.varint(end - start);
  let lastId = 0;
  for (let i = start; i < end; i++) {
    w.varint(cols.tileIds[i] - lastId);
    lastId = cols.tileIds[i];
  }
  for (let i = start; i < end; i++) w.varint(cols.runLengths[i]);
  for (let i = start; i < end; i++) w.varint(cols.lengths[i]);
  for (let i = start; i < end; i++) {
    // 0 means "right after the previous entry's data"; otherwise offset + 1.
    const contiguous = i > start && cols.offsets[i] === cols.offsets[i - 1] + cols.lengths[i - 1];
    w.varint(contiguous ? 0 : cols.offsets[i] + 1);
  }
  return w.bytes();
}

/** Gzip a directory or the metadata with the archive's internal compression. */
export function gzipInternal(bytes: Uint8Array): Uint8Array {
  return gzipSync(bytes, { level: GZIP_LEVEL });
}

/** Split into fixed-size leaves and build the root of leaf pointers. */
function buildWithLeaves(cols: EntryColumns, leafSize: number): Directories {
  const leafCount = Math.ceil(cols.count / leafSize);
  const root: EntryColumns = {
    count: leafCount,
    tileIds: new Float64Array(leafCount),
    runLengths: new Uint32Array(leafCount),
    lengths: new Uint32Array(leafCount),
    offsets: new Float64Array(leafCount),
  };
  const leaves: Uint8Array[] = [];
  let leafBytes = 0;
  for (let l = 0; l < leafCount; l++) {
    const start = l * leafSize;
    const leaf = gzipInternal(serializeDirectory(cols, start, Math.min(start + leafSize, cols.count)));
    (root.tileIds as Float64Array)[l] = cols.tileIds[start];
    (root.lengths as Uint32Array)[l] = leaf.length;
    (root.offsets as Float64Array)[l] = leafBytes;
    leaves.push(leaf);
    leafBytes += leaf.length;
  }
  return { root: gzipInternal(serializeDirectory(root)), leaves, leafBytes };
}

/**
 * Root directory alone when it fits in the first 16 KiB, else root + leaves, growing the leaf size
 * until the root fits. `leafEntries` forces leaves of (at least) that many entries, e.g. for tests.
 */
export function buildDirectories(cols: EntryColumns, leafEntries?: number): Directories {
  if (leafEntries === undefined) {
    const root = gzipInternal(serializeDirectory(cols));
    if (root.length <= MAX_ROOT_SIZE) return { root, leaves: [], leafBytes: 0 };
  } else if (!Number.isInteger(leafEntries) || leafEntries < 1) {
    throw new RangeError(`leafEntries must be a positive integer, got ${leafEntries}`);
  }
  let leafSize = leafEntries ?? Math.max(MIN_AUTO_LEAF_ENTRIES, Math.ceil(cols.count / TARGET_LEAF_COUNT));
  for (;;) {
    const dirs = buildWithLeaves(cols, leafSize);
    if (dirs.root.length <= MAX_ROOT_SIZE) return dirs;
    leafSize = Math.max(leafSize + 1, Math.ceil(leafSize * LEAF_GROWTH));
  }
}
