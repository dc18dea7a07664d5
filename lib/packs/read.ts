/**
 * Reading an archive's tile bytes for a pack: ranges of the tile data section in the order they are
 * needed, neighbours read together (a clustered archive stores a region's tiles side by side), a few
 * reads in flight (object storage answers each after a round trip), small repeated ranges (the sea,
 * empty land) kept for their next use.
 */
import type { ArchiveReader } from '../pmtiles/index.ts';

/** A range of the tile data section. */
export interface ByteRange {
  offset: number;
  length: number;
}

/** Largest gap between two ranges read together (its bytes are read and dropped). */
const MAX_GAP_BYTES = 64 * 1024;
/** Largest single read of several ranges. */
const MAX_BATCH_BYTES = 4 * 1024 * 1024;
/** Reads in flight. */
const IN_FLIGHT = 4;
/** Ranges up to this size are kept for reuse … */
const REPEAT_MAX_BYTES = 64 * 1024;
/** … up to this many bytes in all (the oldest go first). */
const REPEAT_BUDGET_BYTES = 16 * 1024 * 1024;

interface Batch {
  start: number;
  end: number;
  ranges: ByteRange[];
  /** Bytes of ranges already known (repeats), by index in `ranges`. */
  known: (Uint8Array | undefined)[];
}

/** Small ranges read recently, by offset (FIFO within a byte budget). */
class RepeatCache {
  private readonly map = new Map<number, Uint8Array>();
  private bytes = 0;
  get(r: ByteRange): Uint8Array | undefined {
    const b = this.map.get(r.offset);
    return b && b.length === r.length ? b : undefined;
  }
  put(r: ByteRange, b: Uint8Array): void {
    if (r.length > REPEAT_MAX_BYTES || this.map.has(r.offset)) return;
    // A copy: a view would keep the whole read buffer alive.
    this.map.set(r.offset, b.slice());
    this.bytes += b.length;
    for (const [k, v] of this.map) {
      if (this.bytes <= REPEAT_BUDGET_BYTES) break;
      this.map.delete(k);
      this.bytes -= v.length;
    }
  }
}

/**
 * The bytes of each range of `ranges` (offsets into `reader`'s tile data section), in order. Ranges
 * are pulled from the iterable as reading proceeds, so it may be lazy and long.
 */
export async function* readInOrder(reader: ArchiveReader, ranges: Iterable<ByteRange>): AsyncGenerator<Uint8Array> {
  const it = ranges[Symbol.iterator]();
  const repeats = new RepeatCache();
  let pending: ByteRange | undefined;
  let exhausted = false;
  const nextRange = (): ByteRange | undefined => {
    if (pending) {
      const r = pending;
      pending = undefined;
      return r;
    }
    if (exhausted) return undefined;
    const n = it.next();
    if (n.done) {
      exhausted = true;
      return undefined;
    }
    return n.value;
  };
  /** The next batch: ranges that follow each other closely in the file, or repeats. */
  const nextBatch = (): Batch | undefined => {
    const first = nextRange();
    if (!first) return undefined;
    const batch: Batch = { start: first.offset, end: first.offset + first.length, ranges: [first], known: [repeats.get(first)] };
    let reading = batch.known[0] === undefined;
    if (!reading) batch.end = batch.start;
    for (;;) {
      const r = nextRange();
      if (!r) break;
      const known = repeats.get(r);
      const end = r.offset + r.length;
      if (known) {
        batch.ranges.push(r);
        batch.known.push(known);
        continue;
      }
      if (!reading) {
        batch.start = r.offset;
        batch.end = end;
        reading = true;
      } else if (r.offset < batch.end || r.offset - batch.end > MAX_GAP_BYTES || end - batch.start > MAX_BATCH_BYTES) {
        if (r.offset >= batch.start && end <= batch.end) {
          // Inside what is read already (a content used again a little later).
          batch.ranges.push(r);
          batch.known.push(undefined);
          continue;
        }
        pending = r;
        break;
      } else {
        batch.end = end;
      }
      batch.ranges.push(r);
      batch.known.push(undefined);
    }
    return batch;
  };
  const read = (b: Batch): Promise<Uint8Array> => (b.end > b.start ? reader.readRange(b.start, b.end - b.start) : Promise.resolve(new Uint8Array(0)));
  const queue: { batch: Batch; bytes: Promise<Uint8Array> }[] = [];
  const fill = () => {
    while (queue.length < IN_FLIGHT) {
      const batch = nextBatch();
      if (!batch) return;
      const bytes = read(batch);
      bytes.catch(() => undefined); // surfaced when its turn comes
      queue.push({ batch, bytes });
    }
  };
  fill();
  while (queue.length > 0) {
    const { batch, bytes } = queue.shift()!;
    const data = await bytes;
    fill();
    for (let i = 0; i < batch.ranges.length; i++) {
      const r = batch.ranges[i];
      let out = batch.known[i];
      if (!out) {
        out = data.subarray(r.offset - batch.start, r.offset - batch.start + r.length);
        repeats.put(r, out);
      }
      yield out;
    }
  }
}
