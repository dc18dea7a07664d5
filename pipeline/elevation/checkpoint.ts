/**
 * Where the index writer puts a file while writing it: a temp file beside the final path, or (for a
 * build) a partial file in the work folder plus a checkpoint of the chunks already in it, so a
 * killed build continues with the chunks it had not finished.
 */
import { mkdir, open, readFile, rename, rm, stat, type FileHandle } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { tempPathFor, writeFileAtomic } from '../../lib/atomic.ts';
import type { EncodedBlock } from '../../lib/elevation/codec.ts';
import { DIR_ENTRY_BYTES, writeDirEntry } from '../../lib/elevation/format.ts';
import { sha256 } from '../../lib/hash.ts';

/** A block ready to write: where its directory entry goes and its encoded payload. */
export interface ChunkBlock {
  dirOffset: number;
  block: EncodedBlock;
}

/** What the checkpoint file records (JSON). */
interface CheckpointState {
  /** The inputs' fingerprint: a checkpoint of other inputs is discarded. */
  fingerprint: string;
  /** sha256 of the file's header (layers, directory offsets). */
  header: string;
  /** End of the data written for the chunks in `done`. */
  at: number;
  done: string[];
}

/** Default time between checkpoints (each one fsyncs the partial file first). */
export const CHECKPOINT_INTERVAL_MS = 2000;

/** A partial index file and, when resumable, the record of the chunks it holds. */
export class IndexCheckpoint {
  private fh?: FileHandle;
  private at = 0;
  private dirEnd = 0;
  private headerHash = '';
  private readonly done = new Set<string>();
  private lastSave = 0;

  private constructor(
    private readonly partial: string,
    private readonly statePath?: string,
    private readonly fingerprint?: string,
    private readonly intervalMs = CHECKPOINT_INTERVAL_MS,
  ) {}

  /** A temp file beside `finalPath`; nothing survives a failure. */
  static async temporary(finalPath: string): Promise<IndexCheckpoint> {
    await mkdir(dirname(finalPath), { recursive: true });
    return new IndexCheckpoint(tempPathFor(finalPath));
  }

  /** A partial file in `workDir` that a rerun with the same `fingerprint` continues; progress recorded every `intervalMs`. */
  static async resumable(workDir: string, fingerprint: string, intervalMs = CHECKPOINT_INTERVAL_MS): Promise<IndexCheckpoint> {
    await mkdir(workDir, { recursive: true });
    return new IndexCheckpoint(join(workDir, 'elevation.tbei.partial'), join(workDir, 'index-checkpoint.json'), fingerprint, intervalMs);
  }

  /**
   * Open the partial file for a file starting with `header` whose directories end at `dirEnd`.
   * Returns the chunks an earlier run already wrote (empty when starting afresh).
   */
  async start(header: Uint8Array, dirEnd: number): Promise<{ done: ReadonlySet<string> }> {
    this.dirEnd = dirEnd;
    this.headerHash = sha256(header);
    const prior = await this.readState();
    const size = await stat(this.partial).then((s) => s.size, () => -1);
    if (prior && prior.fingerprint === this.fingerprint && prior.header === this.headerHash && size >= prior.at) {
      this.fh = await open(this.partial, 'r+');
      await this.fh.truncate(prior.at);
      this.at = prior.at;
      for (const k of prior.done) this.done.add(k);
      return { done: this.done };
    }
    await rm(this.partial, { force: true });
    this.fh = await open(this.partial, 'w+');
    await this.fh.write(header, 0, header.length, 0);
    this.at = dirEnd;
    return { done: this.done };
  }

  private async readState(): Promise<CheckpointState | undefined> {
    if (!this.statePath) return undefined;
    try {
      const s = JSON.parse(await readFile(this.statePath, 'utf8')) as CheckpointState;
      return typeof s.at === 'number' && Array.isArray(s.done) ? s : undefined;
    } catch {
      return undefined;
    }
  }

  /** Append a chunk's payloads, write its directory entries and record it done. */
  async writeChunk(key: string, blocks: ChunkBlock[]): Promise<void> {
    const fh = this.fh!;
    const sorted = [...blocks].sort((a, b) => a.dirOffset - b.dirOffset);
    // Entries of one block row are contiguous: one write per run.
    for (let i = 0; i < sorted.length; ) {
      let j = i + 1;
      while (j < sorted.length && sorted[j].dirOffset === sorted[j - 1].dirOffset + DIR_ENTRY_BYTES) j++;
      const view = new DataView(new ArrayBuffer((j - i) * DIR_ENTRY_BYTES));
      for (let k = i; k < j; k++) {
        const e = sorted[k].block;
        const offset = e.payload.length ? this.at : 0;
        if (e.payload.length) {
          await fh.write(e.payload, 0, e.payload.length, this.at);
          this.at += e.payload.length;
        }
        writeDirEntry(view, (k - i) * DIR_ENTRY_BYTES, { offset, length: e.payload.length, base: e.base, width: e.width, compression: e.compression });
      }
      await fh.write(new Uint8Array(view.buffer), 0, view.byteLength, sorted[i].dirOffset);
      i = j;
    }
    this.done.add(key);
    if (this.statePath && Date.now() - this.lastSave >= this.intervalMs) await this.save();
  }

  /** fsync the partial file, then record what it holds. */
  private async save(): Promise<void> {
    await this.fh!.sync();
    const state: CheckpointState = { fingerprint: this.fingerprint!, header: this.headerHash, at: this.at, done: [...this.done] };
    await writeFileAtomic(this.statePath!, JSON.stringify(state));
    this.lastSave = Date.now();
  }

  /** Complete the file and rename it onto `finalPath`; returns its size. */
  async finish(finalPath: string): Promise<number> {
    const fh = this.fh!;
    // Directories of chunks nobody touched were never written: make sure they exist (as zeros, empty).
    const size = Math.max(this.at, this.dirEnd);
    await fh.truncate(size);
    await fh.sync();
    await fh.close();
    this.fh = undefined;
    await mkdir(dirname(finalPath), { recursive: true });
    await rename(this.partial, finalPath);
    if (this.statePath) await rm(this.statePath, { force: true });
    return size;
  }

  /** Give up after an error: a resumable file keeps what it has for the next run; a temp file is removed. */
  async stop(): Promise<void> {
    if (this.fh && this.statePath) await this.save().catch(() => undefined);
    await this.fh?.close().catch(() => undefined);
    this.fh = undefined;
    if (!this.statePath) await rm(this.partial, { force: true });
  }
}
