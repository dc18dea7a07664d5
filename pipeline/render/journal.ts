import { crc32 } from 'node:zlib';
import { mkdir, open, rm, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';

/** One tile of a journal record. */
export interface JournalTile {
  z: number;
  x: number;
  y: number;
  data: Uint8Array;
}

/** A finished metatile: its key and its encoded tiles. */
export interface JournalRecord {
  key: string;
  tiles: JournalTile[];
}

/** Record frame: u32 payload length + u32 CRC-32 of the payload. */
const FRAME_BYTES = 8;
/** Record kinds (first payload byte). */
enum Kind {
  Header = 0,
  Metatile = 1,
}
/** Journal format version, part of the header record. */
const FORMAT = 'tilebake-render-journal/1';
/** Per-tile fixed fields: z u8, x u32, y u32, length u32. */
const TILE_FIELDS = 13;

function encodeHeader(fingerprint: string): Buffer {
  const text = Buffer.from(`${FORMAT}\n${fingerprint}`, 'utf8');
  return Buffer.concat([Buffer.from([Kind.Header]), text]);
}

function encodeRecord(r: JournalRecord): Buffer {
  const key = Buffer.from(r.key, 'utf8');
  let size = 1 + 2 + key.length + 4;
  for (const t of r.tiles) size += TILE_FIELDS + t.data.length;
  const b = Buffer.allocUnsafe(size);
  let o = b.writeUInt8(Kind.Metatile, 0);
  o = b.writeUInt16LE(key.length, o);
  o += key.copy(b, o);
  o = b.writeUInt32LE(r.tiles.length, o);
  for (const t of r.tiles) {
    o = b.writeUInt8(t.z, o);
    o = b.writeUInt32LE(t.x, o);
    o = b.writeUInt32LE(t.y, o);
    o = b.writeUInt32LE(t.data.length, o);
    b.set(t.data, o);
    o += t.data.length;
  }
  return b;
}

function decodeRecord(b: Buffer): JournalRecord {
  let o = 1;
  const keyLen = b.readUInt16LE(o);
  o += 2;
  const key = b.toString('utf8', o, o + keyLen);
  o += keyLen;
  const n = b.readUInt32LE(o);
  o += 4;
  const tiles: JournalTile[] = [];
  for (let i = 0; i < n; i++) {
    const z = b.readUInt8(o);
    const x = b.readUInt32LE(o + 1);
    const y = b.readUInt32LE(o + 5);
    const len = b.readUInt32LE(o + 9);
    o += TILE_FIELDS;
    tiles.push({ z, x, y, data: b.subarray(o, o + len) });
    o += len;
  }
  return { key, tiles };
}

function frame(payload: Buffer): Buffer {
  const f = Buffer.allocUnsafe(FRAME_BYTES);
  f.writeUInt32LE(payload.length, 0);
  f.writeUInt32LE(crc32(payload), 4);
  return Buffer.concat([f, payload]);
}

/** Read the valid frames of `fh` from `start`; stops at the first torn or corrupt one. */
async function* frames(fh: FileHandle, size: number): AsyncGenerator<{ payload: Buffer; end: number }> {
  const head = Buffer.allocUnsafe(FRAME_BYTES);
  let pos = 0;
  while (pos + FRAME_BYTES <= size) {
    await fh.read(head, 0, FRAME_BYTES, pos);
    const len = head.readUInt32LE(0);
    if (len === 0 || pos + FRAME_BYTES + len > size) return;
    const payload = Buffer.allocUnsafe(len);
    const { bytesRead } = await fh.read(payload, 0, len, pos + FRAME_BYTES);
    if (bytesRead !== len || crc32(payload) !== head.readUInt32LE(4)) return;
    pos += FRAME_BYTES + len;
    yield { payload, end: pos };
  }
}

/**
 * Append-only journal of finished metatiles for one style × scale × format (in `<out>/.work/`).
 * Every record carries its length and CRC-32 and is fsync'd, so after a SIGKILL the torn tail is
 * dropped and everything before it is kept. A journal whose header fingerprint differs (other style,
 * settings or data) is started afresh.
 */
export class RenderJournal {
  /** Keys of the metatiles already in the journal. */
  readonly done = new Set<string>();
  private queue: Promise<unknown> = Promise.resolve();

  private constructor(
    readonly path: string,
    private fh: FileHandle | undefined,
    private size: number,
  ) {}

  /** Open (or create) the journal at `path` for `fingerprint`, discarding a torn tail or a stale journal. */
  static async open(path: string, fingerprint: string): Promise<RenderJournal> {
    await mkdir(dirname(path), { recursive: true });
    const fh = await open(path, 'r+').catch((e: NodeJS.ErrnoException) => {
      if (e.code === 'ENOENT') return open(path, 'w+');
      throw e;
    });
    const { size } = await fh.stat();
    const j = new RenderJournal(path, fh, 0);
    const header = encodeHeader(fingerprint);
    let first = true;
    let good = 0;
    for await (const f of frames(fh, size)) {
      if (first) {
        first = false;
        if (!f.payload.equals(header)) break;
      } else {
        j.done.add(decodeRecord(f.payload).key);
      }
      good = f.end;
    }
    if (good === 0) {
      j.done.clear();
      await fh.truncate(0);
      await fh.write(frame(header), 0, undefined, 0);
      await fh.sync();
      j.size = (await fh.stat()).size;
    } else {
      if (good < size) await fh.truncate(good);
      j.size = good;
    }
    return j;
  }

  /** Append one finished metatile and fsync it. */
  append(record: JournalRecord): Promise<void> {
    return this.appendAll([record]);
  }

  /** Append finished metatiles in one write and one fsync (the metatiles that share a rendered view). */
  appendAll(records: JournalRecord[]): Promise<void> {
    const run = async () => {
      if (!this.fh) throw new Error(`${this.path}: journal is closed`);
      const bytes = Buffer.concat(records.map((r) => frame(encodeRecord(r))));
      await this.fh.write(bytes, 0, bytes.length, this.size);
      await this.fh.sync();
      this.size += bytes.length;
      for (const r of records) this.done.add(r.key);
    };
    const next = this.queue.then(run);
    this.queue = next.catch(() => undefined);
    return next;
  }

  /** Every record, first occurrence of each key only, in journal order. */
  async *records(): AsyncGenerator<JournalRecord> {
    await this.queue;
    if (!this.fh) throw new Error(`${this.path}: journal is closed`);
    const seen = new Set<string>();
    let first = true;
    for await (const f of frames(this.fh, this.size)) {
      if (first) {
        first = false;
        continue;
      }
      const r = decodeRecord(f.payload);
      if (seen.has(r.key)) continue;
      seen.add(r.key);
      yield r;
    }
  }

  /** Close the file. */
  async close(): Promise<void> {
    await this.queue;
    const fh = this.fh;
    this.fh = undefined;
    await fh?.close();
  }

  /** Close and delete the journal (its archive is written). */
  async remove(): Promise<void> {
    await this.close();
    await rm(this.path, { force: true });
  }
}
