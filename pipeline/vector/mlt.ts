/**
 * The MLT archive of a tileset (`"encodings": ["mvt", "mlt"]`): every tile of the tileset's MVT archive
 * encoded as MapLibre Tiles (lib/mlt.ts) into a second PMTiles archive (tile type MLT, gzip-compressed
 * when the MVT archive is, so both are served alike), in a
 * Piscina pool. A tile whose MVT bytes equal the previous version's is not encoded again: its MLT
 * bytes are copied from the previous MLT archive when that was made by the same encoder, so an
 * incremental build or `tilebake update` encodes only the tiles that changed. Equal contents in one
 * archive (sea, land) are encoded once. An encoder failure fails the build naming the tile; the
 * archive is written as a temp file and renamed, so nothing half-made is left.
 */
import { stat } from 'node:fs/promises';
import { basename } from 'node:path';
import type { Piscina } from 'piscina';
import { UserError } from '../../lib/errors.ts';
import { MLT_ENCODER } from '../../lib/mlt.ts';
import { moduleUrl } from '../../lib/package-root.ts';
import { Compression, openArchiveFile, PMTilesWriter, TileType, type ArchiveReader } from '../../lib/pmtiles/index.ts';
import { createProgress, logLine } from '../../lib/progress.ts';
import { createPool, defaultWorkers } from '../../workers/pool.ts';
import encodeMltTiles, { type MltTask, type MltTaskResult } from '../../workers/mlt-encode.ts';

/** Metadata key of an MLT archive naming the encoder its tiles were made with (lib/mlt.ts MLT_ENCODER). */
export const MLT_METADATA_KEY = 'tilebake:mlt';
/** Tiles per pool task (a task's messages cost less than a tile's encoding). */
const BATCH_TILES = 16;
/** Batches in flight per thread (keeps every thread busy while the writer catches up). */
const BATCHES_PER_THREAD = 4;
/** MVT contents up to this size are remembered by offset, so a repeated one (sea, land) is encoded once. */
const MEMO_MAX_MVT_BYTES = 4096;
/** Archive entries waiting for the writer at most (their MLT bytes are held until written). */
const MAX_QUEUED = 4096;
const MS_PER_S = 1000;

/** The previous version's archives of the tileset, for copying the MLT bytes of unchanged tiles. */
export interface MltPrevious {
  mvt: string;
  mlt: string;
}

export interface MltOptions {
  /** Names the tileset in messages and the progress bar. */
  label: string;
  previous?: MltPrevious;
  /** Pool size (default: one per CPU). */
  threads?: number;
}

/** What `encodeMltArchive` wrote. */
export interface MltResult {
  tiles: number;
  bytes: number;
  /** Distinct MVT contents encoded this run, and tiles whose MLT bytes came from the previous archive. */
  encoded: number;
  reused: number;
  /** Wall time of the whole step, and CPU time in the encoder itself (MVT decoding + MLT encoding, summed over threads). */
  seconds: number;
  encodeCpuSeconds: number;
}

/** True when the MLT archive at `path` exists and was made by this encoder (its metadata names it). */
export async function madeByThisEncoder(path: string): Promise<boolean> {
  if (!(await stat(path).catch(() => undefined))) return false;
  const r = await openArchiveFile(path);
  try {
    return (await r.metadata())[MLT_METADATA_KEY] === MLT_ENCODER;
  } finally {
    await r.close();
  }
}

/** The previous archives when both exist and the MLT one was made by this encoder; else undefined. */
async function openPrevious(prev: MltPrevious | undefined, gzipped: boolean): Promise<{ mvt: ArchiveReader; mlt: ArchiveReader } | undefined> {
  if (!prev || !(await stat(prev.mvt).catch(() => undefined)) || !(await stat(prev.mlt).catch(() => undefined))) return undefined;
  const mvt = await openArchiveFile(prev.mvt);
  const mlt = await openArchiveFile(prev.mlt);
  const same = (await mlt.metadata())[MLT_METADATA_KEY] === MLT_ENCODER && (mvt.header.tileCompression === Compression.Gzip) === gzipped;
  if (same) return { mvt, mlt };
  await mvt.close();
  await mlt.close();
  return undefined;
}

const equalBytes = (a: Uint8Array, b: Uint8Array) => a.length === b.length && Buffer.compare(a, b) === 0;

/** Tiles gathered for one pool task, and their promises. */
interface Batch {
  task: MltTask;
  resolve: ((b: Uint8Array) => void)[];
  reject: ((e: unknown) => void)[];
  sent: boolean;
}

/** The MLT bytes of an MVT content: copied, or to be encoded in `batch`. */
interface Known {
  bytes: Promise<Uint8Array>;
  batch?: Batch;
}

/** One archive entry on its way to the writer. */
interface Pending extends Known {
  tileId: number;
  runLength: number;
}

/** Encode the MVT archive `mvtPath` into the MLT archive `output` (see the module comment). */
export async function encodeMltArchive(mvtPath: string, output: string, opts: MltOptions): Promise<MltResult> {
  const started = performance.now();
  const source = await openArchiveFile(mvtPath);
  let writer: PMTilesWriter | undefined;
  let pool: Piscina | undefined;
  let previous: Awaited<ReturnType<typeof openPrevious>>;
  const threads = opts.threads ?? defaultWorkers();
  const result: MltResult = { tiles: 0, bytes: 0, encoded: 0, reused: 0, seconds: 0, encodeCpuSeconds: 0 };
  const h = source.header;
  const progress = createProgress(`${opts.label} mlt`, h.numAddressedTiles ?? 0);
  try {
    if (h.tileType !== TileType.Mvt) throw new UserError(`${mvtPath}: not an MVT archive (PMTiles tile type ${h.tileType}); MLT is encoded from MVT tiles`);
    const gzipped = h.tileCompression === Compression.Gzip;
    previous = await openPrevious(opts.previous, gzipped);
    writer = await PMTilesWriter.create(output, {
      tileType: TileType.Mlt,
      tileCompression: gzipped ? Compression.Gzip : Compression.None,
      metadata: { ...(await source.metadata()), format: 'mlt', [MLT_METADATA_KEY]: MLT_ENCODER },
      bounds: [h.minLon, h.minLat, h.maxLon, h.maxLat],
      center: [h.centerLon, h.centerLat, h.centerZoom],
    });
    const w = writer;

    // Tiles to encode gather in a batch; a full batch goes to the pool (started with the first one), a
    // last batch of a job smaller than one batch is encoded here (no pool for a handful of tiles).
    let batch: Batch | undefined;
    const inFlight = new Set<Promise<unknown>>();
    const send = (inline: boolean) => {
      if (!batch) return;
      const b = batch;
      batch = undefined;
      b.sent = true;
      const settle = (r: MltTaskResult) => {
        result.encodeCpuSeconds += r.encodeMs / MS_PER_S;
        r.tiles.forEach((t, i) => b.resolve[i](t));
      };
      const fail = (e: unknown) => b.reject.forEach((rej) => rej(e));
      if (inline) {
        try {
          settle(encodeMltTiles(b.task));
        } catch (e) {
          fail(e);
        }
        return;
      }
      pool ??= createPool(moduleUrl('workers/mlt-worker.mjs'), threads, { workerData: { task: moduleUrl('workers/mlt-encode.ts') } });
      const run = (pool.run(b.task) as Promise<MltTaskResult>).then(settle, fail);
      inFlight.add(run);
      void run.finally(() => inFlight.delete(run));
    };
    const encode = (where: string, data: Uint8Array): Known => {
      batch ??= { task: { tiles: [], gzipped }, resolve: [], reject: [], sent: false };
      const b = batch;
      const bytes = new Promise<Uint8Array>((resolve, reject) => {
        b.resolve.push(resolve);
        b.reject.push(reject);
      });
      b.task.tiles.push({ where, data });
      result.encoded++;
      if (b.task.tiles.length >= BATCH_TILES) send(false);
      return { bytes, batch: b };
    };

    const queue: Pending[] = [];
    /** Write the oldest entry (its batch sent first if it still waits for more tiles). */
    const writeHead = async () => {
      const p = queue.shift()!;
      if (p.batch && !p.batch.sent) send(false);
      const bytes = await p.bytes;
      for (let k = 0; k < p.runLength; k++) await w.addTileId(p.tileId + k, bytes);
      progress.tick(p.runLength);
    };
    const memo = new Map<number, Known>();
    for await (const e of source.entries()) {
      if (e.length === 0) continue;
      let known = memo.get(e.offset);
      if (!known) {
        const data = await source.readRange(e.offset, e.length);
        const prevMvt = previous && (await previous.mvt.getTile(e.z, e.x, e.y));
        const prevMlt = prevMvt && equalBytes(prevMvt, data) ? await previous!.mlt.getTile(e.z, e.x, e.y) : undefined;
        if (prevMlt) {
          known = { bytes: Promise.resolve(prevMlt) };
          result.reused += e.runLength;
        } else {
          known = encode(`${e.z}/${e.x}/${e.y}`, data);
        }
        // A failure surfaces when the queue reaches the entry, not as an unhandled rejection before.
        known.bytes.catch(() => undefined);
        if (e.length <= MEMO_MAX_MVT_BYTES) memo.set(e.offset, known);
      }
      queue.push({ tileId: e.tileId, runLength: e.runLength, ...known });
      while (queue.length > MAX_QUEUED || (queue.length > 0 && inFlight.size >= threads * BATCHES_PER_THREAD)) await writeHead();
    }
    send(pool === undefined);
    while (queue.length > 0) await writeHead();
    const r = await w.finish();
    progress.done();
    Object.assign(result, { tiles: r.addressedTiles, bytes: r.bytes, seconds: (performance.now() - started) / MS_PER_S });
    logLine(`${output}: ${r.addressedTiles} MLT tiles (${result.encoded} encoded, ${result.reused} copied from the previous build), ${r.bytes} bytes in ${result.seconds.toFixed(1)} s (encoder CPU ${result.encodeCpuSeconds.toFixed(1)} s)`);
    return result;
  } catch (e) {
    await writer?.abort();
    const m = /^tile (\d+\/\d+\/\d+): ([^]*)$/.exec((e as Error).message ?? '');
    if (m) throw new UserError(`${opts.label}: the MLT encoder failed on tile ${m[1]} of ${basename(mvtPath)} (${m[2]}); no MLT archive written`, { cause: e });
    throw e;
  } finally {
    progress.done();
    await pool?.destroy();
    await source.close();
    await previous?.mvt.close();
    await previous?.mlt.close();
  }
}
