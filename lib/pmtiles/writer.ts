/**
 * Streaming PMTiles v3 writer. Tiles may arrive in any order: their bytes are appended to a temp data
 * file as they come (deduplicated by hash), only directory entries stay in memory, and `finish()`
 * writes header, root, metadata, leaves and the tile data in tile-id (clustered) order into a temp
 * archive beside the final path, then renames it into place.
 */
import { readSync } from 'node:fs';
import { mkdir, open, rename, rm, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import { zxyToTileId, tileIdToZxy } from 'pmtiles';
import { tempPathFor } from '../atomic.ts';
import { UserError } from '../errors.ts';
import { isValidTile } from '../tile-math.ts';
import { contentHash } from './content-hash.ts';
import { archivePrelude, checkOptions, type WriterOptions, type WriterResult } from './prelude.ts';
import { TileIndex, type IndexLayout } from './tile-index.ts';

export type { WriterOptions, WriterResult } from './prelude.ts';

/** Size of the append buffer for tile data and of the copy buffer in `finish()`. */
const IO_BUFFER_BYTES = 1 << 20;
/** Written append buffers kept for reuse (the rest are left to the GC). */
const MAX_SPARE_BUFFERS = 2;
/** Scattered reads issued together while gathering tile data in finish(). */
const MAX_READS_PER_BATCH = 256;
/** Largest tile a directory entry can address (uint32 length). */
const MAX_TILE_BYTES = 0xffffffff;

type State = 'open' | 'finishing' | 'done' | 'aborted';

async function writeAll(fh: FileHandle, buf: Uint8Array, position: number): Promise<void> {
  let done = 0;
  while (done < buf.length) {
    const { bytesWritten } = await fh.write(buf, done, buf.length - done, position + done);
    done += bytesWritten;
  }
}

async function readExactly(fh: FileHandle, buf: Uint8Array, length: number, position: number): Promise<void> {
  let done = 0;
  while (done < length) {
    const { bytesRead } = await fh.read(buf, done, length - done, position + done);
    if (bytesRead === 0) throw new Error(`PMTiles writer: temp data file ended at ${position + done}, expected ${position + length}`);
    done += bytesRead;
  }
}

function readExactlySync(fd: number, into: Uint8Array, position: number): void {
  for (let done = 0; done < into.length; ) {
    const n = readSync(fd, into, done, into.length - done, position + done);
    if (n === 0) throw new Error(`PMTiles writer: temp data file ended at ${position + done}, expected ${position + into.length}`);
    done += n;
  }
}

/** Copy `length` bytes from `src@srcPos` to `dst@dstPos` through `buf` (bounded memory). */
async function copyRange(src: FileHandle, srcPos: number, dst: FileHandle, dstPos: number, length: number, buf: Uint8Array): Promise<void> {
  for (let done = 0; done < length; ) {
    const n = Math.min(buf.length, length - done);
    await readExactly(src, buf, n, srcPos + done);
    await writeAll(dst, buf.subarray(0, n), dstPos + done);
    done += n;
  }
}

/** Streaming PMTiles v3 writer; see the module comment. Await each `addTile` (it applies back-pressure). */
export class PMTilesWriter {
  private readonly index = new TileIndex();
  private buf: Buffer = Buffer.allocUnsafe(IO_BUFFER_BYTES);
  private readonly spare: Buffer[] = [];
  private used = 0;
  private flushedBytes = 0;
  private io: Promise<void> = Promise.resolve();
  private state: State = 'open';

  private constructor(
    private readonly finalPath: string,
    private readonly opts: WriterOptions,
    private readonly archiveTmp: string,
    private readonly dataTmp: string,
    private readonly data: FileHandle,
  ) {}

  /** Start an archive that `finish()` will rename onto `finalPath`; nothing appears there before. */
  static async create(finalPath: string, opts: WriterOptions): Promise<PMTilesWriter> {
    checkOptions(opts);
    const archiveTmp = tempPathFor(finalPath);
    const dataTmp = `${archiveTmp}.tiles`;
    try {
      await mkdir(dirname(finalPath), { recursive: true });
      return new PMTilesWriter(finalPath, opts, archiveTmp, dataTmp, await open(dataTmp, 'w+'));
    } catch (e) {
      throw new UserError(`${finalPath}: cannot create the archive (${(e as NodeJS.ErrnoException).code ?? String(e)})`, { cause: e });
    }
  }

  /** Add tile z/x/y (XYZ scheme, any order). `data` is stored as given (already compressed per tileCompression). */
  async addTile(z: number, x: number, y: number, data: Uint8Array): Promise<void> {
    if (!isValidTile(z, x, y)) throw new RangeError(`PMTiles writer: invalid tile address ${z}/${x}/${y}`);
    await this.add(zxyToTileId(z, x, y), z, x, y, data);
  }

  /** Add a tile by its Hilbert tile id. */
  async addTileId(tileId: number, data: Uint8Array): Promise<void> {
    if (!Number.isSafeInteger(tileId) || tileId < 0) throw new RangeError(`PMTiles writer: invalid tile id ${tileId}`);
    const [z, x, y] = tileIdToZxy(tileId);
    await this.add(tileId, z, x, y, data);
  }

  private async add(tileId: number, z: number, x: number, y: number, data: Uint8Array): Promise<void> {
    if (this.state !== 'open') throw new Error(`PMTiles writer for ${this.finalPath}: addTile after ${this.state === 'aborted' ? 'abort' : 'finish'}()`);
    if (data.length === 0) throw new RangeError(`PMTiles writer: tile ${z}/${x}/${y} is empty (PMTiles entries need at least one byte)`);
    if (data.length > MAX_TILE_BYTES) throw new RangeError(`PMTiles writer: tile ${z}/${x}/${y} is larger than 4 GiB`);
    // All bookkeeping happens synchronously, so concurrent calls cannot interleave badly.
    const h = contentHash(data);
    let c = this.index.findContent(h, data.length);
    let flushed = false;
    if (c < 0) {
      c = this.index.addContent(h, data.length);
      flushed = this.append(data);
    }
    this.index.addTile(tileId, z, x, y, c);
    if (flushed) await this.io;
  }

  /** Append to the buffer; returns true when a write to the temp data file was queued. */
  private append(data: Uint8Array): boolean {
    if (this.used + data.length <= this.buf.length) {
      this.buf.set(data, this.used);
      this.used += data.length;
      return false;
    }
    this.flush();
    if (data.length <= this.buf.length) {
      this.buf.set(data, 0);
      this.used = data.length;
    } else {
      this.queueWrite(Buffer.from(data));
    }
    return true;
  }

  /** Queue the buffered bytes for writing and continue in a spare (or fresh) buffer. */
  private flush(): void {
    if (this.used === 0) return;
    const full = this.buf;
    this.buf = this.spare.pop() ?? Buffer.allocUnsafe(IO_BUFFER_BYTES);
    this.queueWrite(full.subarray(0, this.used), full);
    this.used = 0;
  }

  /** Write `chunk` after the queued writes; `recycle` goes back to the spares once written. */
  private queueWrite(chunk: Uint8Array, recycle?: Buffer): void {
    const position = this.flushedBytes;
    this.flushedBytes += chunk.length;
    this.io = this.io.then(async () => {
      await writeAll(this.data, chunk, position);
      if (recycle && this.spare.length < MAX_SPARE_BUFFERS) this.spare.push(recycle);
    });
    this.io.catch(() => {}); // surfaced by the next await of this.io
  }

  /** Assemble the archive (clustered, deduplicated, run-length encoded) and rename it onto the final path. */
  async finish(): Promise<WriterResult> {
    if (this.state !== 'open') throw new Error(`PMTiles writer for ${this.finalPath}: finish() after ${this.state === 'aborted' ? 'abort' : 'finish'}()`);
    this.state = 'finishing';
    try {
      this.flush();
      await this.io;
      const layout = this.index.layout();
      const result = await this.assemble(layout);
      await this.data.close();
      await rm(this.dataTmp, { force: true });
      await rename(this.archiveTmp, this.finalPath);
      this.state = 'done';
      return result;
    } catch (e) {
      await this.cleanup();
      this.state = 'aborted';
      throw e;
    }
  }

  /** Drop everything written so far; the final path is left untouched. */
  async abort(): Promise<void> {
    if (this.state === 'done' || this.state === 'aborted') return;
    this.state = 'aborted';
    await this.io.catch(() => {});
    await this.cleanup();
  }

  private async cleanup(): Promise<void> {
    await this.data.close().catch(() => {});
    await rm(this.dataTmp, { force: true });
    await rm(this.archiveTmp, { force: true });
  }

  private async assemble(layout: IndexLayout): Promise<WriterResult> {
    const { header, parts, result } = archivePrelude(layout, this.opts);
    const out = await open(this.archiveTmp, 'w');
    try {
      let pos = 0;
      for (const part of parts) {
        await writeAll(out, part, pos);
        pos += part.length;
      }
      await this.copyTileData(layout, out, header.tileDataOffset);
      await out.sync();
    } finally {
      await out.close();
    }
    return result;
  }

  /**
   * Copy the tile contents from the temp data file in output order: contiguous ranges are coalesced,
   * scattered small ones are gathered into one buffer with parallel positional reads, then written at once.
   */
  private async copyTileData(layout: IndexLayout, out: FileHandle, dataOffset: number): Promise<void> {
    const buf = Buffer.allocUnsafe(IO_BUFFER_BYTES);
    if (layout.dataInOrder) {
      await copyRange(this.data, 0, out, dataOffset, layout.dataLength, buf);
      return;
    }
    let outPos = dataOffset;
    const batch: [number, number][] = []; // [source offset, length] of ranges gathered into buf
    let batchBytes = 0;
    const flushBatch = async (): Promise<void> => {
      // Synchronous positional reads: small scattered reads cost far less than a thread-pool round trip
      // each, and the event loop still turns once per batch (at the write below).
      let at = 0;
      for (const [offset, length] of batch) {
        readExactlySync(this.data.fd, buf.subarray(at, at + length), offset);
        at += length;
      }
      await writeAll(out, buf.subarray(0, batchBytes), outPos);
      outPos += batchBytes;
      batch.length = 0;
      batchBytes = 0;
    };
    const addRange = async (offset: number, length: number): Promise<void> => {
      if (length > buf.length) {
        if (batch.length > 0) await flushBatch();
        await copyRange(this.data, offset, out, outPos, length, buf);
        outPos += length;
        return;
      }
      if (batchBytes + length > buf.length || batch.length >= MAX_READS_PER_BATCH) await flushBatch();
      batch.push([offset, length]);
      batchBytes += length;
    };
    let runStart = 0;
    let runLength = 0;
    for (const c of layout.outputOrder) {
      const [offset, length] = this.index.contentRange(c);
      if (runLength > 0 && offset === runStart + runLength) {
        runLength += length;
        continue;
      }
      if (runLength > 0) await addRange(runStart, runLength);
      runStart = offset;
      runLength = length;
    }
    if (runLength > 0) await addRange(runStart, runLength);
    if (batch.length > 0) await flushBatch();
  }
}
