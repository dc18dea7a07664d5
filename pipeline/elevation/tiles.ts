/**
 * Writing a tileset from the elevation index (terrain-RGB, contours): enumerate the tiles over the
 * index's data only, hand them to the pool in batches of neighbouring tiles, journal every finished
 * batch (a killed build resumes from the journal) and write the archive from the journal. An archive
 * whose recorded fingerprint matches is kept as it is.
 */
import { PMTilesWriter, summarizeArchiveFile, type WriterOptions } from '../../lib/pmtiles/index.ts';
import { tileRunsForBoxes, tilesInRuns, type BBox } from '../../lib/tile-math.ts';
import type { IndexMeta } from '../../lib/elevation/format.ts';
import type { IndexRef, TileOut } from '../../workers/elevation-tiles.ts';
import { createProgress, logLine } from '../../lib/progress.ts';
import { RenderJournal } from '../render/journal.ts';
import { inShard } from '../render/selection.ts';

/** Metadata key holding the fingerprint of an elevation-derived archive. */
export const ELEVATION_METADATA_KEY = 'tilebake:elevation';
/** Tiles per batch side: a batch is up to 4×4 neighbouring tiles of one zoom. */
const BATCH_SHIFT = 2;
/** Batches queued per pool thread. */
const QUEUE_PER_THREAD = 2;

/** One batch: neighbouring tiles of one zoom, flat z, x, y triples. */
export interface TileBatch {
  key: string;
  tiles: number[];
}

/** Batches of the tiles at `minzoom..maxzoom` that intersect `boxes`, zoom by zoom, row-major. */
export function tileBatches(boxes: readonly BBox[], minzoom: number, maxzoom: number): { batches: TileBatch[]; tiles: number } {
  const batches: TileBatch[] = [];
  let tiles = 0;
  for (let z = minzoom; z <= maxzoom; z++) {
    const runs = tileRunsForBoxes(boxes, z);
    tiles += tilesInRuns(runs);
    const byKey = new Map<string, TileBatch>();
    for (const r of runs) {
      for (let x = r.minX; x <= r.maxX; x++) {
        const key = `${z}/${x >> BATCH_SHIFT}/${r.y >> BATCH_SHIFT}`;
        let b = byKey.get(key);
        if (!b) byKey.set(key, (b = { key, tiles: [] }));
        b.tiles.push(z, x, r.y);
      }
    }
    const order = (k: string) => k.split('/').map(Number);
    const sorted = [...byKey.values()].sort((a, b) => {
      const [, ax, ay] = order(a.key), [, bx, by] = order(b.key);
      return ay - by || ax - bx;
    });
    // One by one: a zoom of millions of tiles (an orthophoto at z20) has more batches than a call has arguments.
    for (const b of sorted) batches.push(b);
  }
  return { batches, tiles };
}

/** What the stage gives every tileset written from the index (terrain, contours, hillshade, relief). */
export interface IndexTileset<Task, Out = TileOut> {
  index: IndexRef;
  meta: IndexMeta;
  /** Where the index has data (`ElevationIndex.dataBoxes`): tiles elsewhere are never made. */
  boxes: BBox[];
  archive: string;
  /** The journal of finished batches. */
  journal: string;
  attribution?: string;
  /** Pool threads. */
  threads: number;
  /** Runs one batch on the pool. */
  run: (task: Task) => Promise<Out[]>;
}

/** A tileset to write from the index. */
export interface TileJob {
  /** Progress label, e.g. `terrain terrain`. */
  label: string;
  archive: string;
  /** The journal of finished batches (kept while the job runs). */
  journal: string;
  /** What decides the tiles: equal ⇒ the archive is kept. */
  fingerprint: string;
  boxes: readonly BBox[];
  minzoom: number;
  maxzoom: number;
  writer: WriterOptions;
  /** Pool threads (how many batches to keep queued). */
  threads: number;
  run: (tiles: number[]) => Promise<TileOut[]>;
  /** The archive metadata key that records `fingerprint` (default `tilebake:elevation`). */
  fingerprintKey?: string;
  /** Only the batches of this shard (`inShard` of their ordinal): the archive is a partial for `tilebake merge`. */
  shard?: { index: number; count: number };
}

/** What a job wrote (or kept). */
export interface TileJobResult {
  tiles: number;
  bytes: number;
  /** True when the archive was already up to date. */
  kept: boolean;
  /** Batches an earlier, killed run had already encoded (taken from its journal). */
  resumedBatches: number;
  /** Tiles this run computed (those over the data; some have nothing to draw and are not written). */
  computed: number;
}

/** The archive's size and tile count when it was written from `fingerprint` (recorded under `key`), else undefined. */
async function upToDate(path: string, key: string, fingerprint: string): Promise<{ tiles: number; bytes: number } | undefined> {
  const summary = await summarizeArchiveFile(path);
  return summary?.metadata[key] === fingerprint ? summary : undefined;
}

/** Write (or keep, or resume) one tileset of batches of tiles (from the index, or imagery: pipeline/imagery/). */
export async function runTileJob(job: TileJob): Promise<TileJobResult> {
  const key = job.fingerprintKey ?? ELEVATION_METADATA_KEY;
  const kept = await upToDate(job.archive, key, job.fingerprint);
  if (kept) {
    logLine(`${job.label}: ${job.archive} is up to date (same inputs and settings), kept`);
    return { ...kept, kept: true, resumedBatches: 0, computed: 0 };
  }
  const all = tileBatches(job.boxes, job.minzoom, job.maxzoom);
  const batches = job.shard ? all.batches.filter((_, i) => inShard(i, job.shard)) : all.batches;
  const tiles = job.shard ? batches.reduce((n, b) => n + b.tiles.length / 3, 0) : all.tiles;
  const journal = await RenderJournal.open(job.journal, job.fingerprint);
  try {
    const todo = batches.filter((b) => !journal.done.has(b.key));
    const progress = createProgress(job.label, tiles);
    if (todo.length < batches.length) {
      logLine(`${job.label}: resuming, ${batches.length - todo.length} of ${batches.length} batches already encoded by an earlier run`);
      progress.tick(tiles - todo.reduce((n, b) => n + b.tiles.length / 3, 0));
    }
    try {
      let next = 0, failed = false;
      const lane = async () => {
        while (next < todo.length && !failed) {
          const b = todo[next++];
          try {
            await journal.append({ key: b.key, tiles: await job.run(b.tiles) });
          } catch (e) {
            failed = true;
            throw e;
          }
          progress.tick(b.tiles.length / 3);
        }
      };
      const lanes = await Promise.allSettled(Array.from({ length: Math.min(job.threads * QUEUE_PER_THREAD, todo.length) }, lane));
      const error = lanes.find((l) => l.status === 'rejected');
      if (error) throw error.reason;
    } finally {
      progress.done();
    }
    const w = await PMTilesWriter.create(job.archive, { ...job.writer, metadata: { ...job.writer.metadata, [key]: job.fingerprint } });
    let res;
    try {
      for await (const rec of journal.records()) for (const t of rec.tiles) await w.addTile(t.z, t.x, t.y, t.data);
      res = await w.finish();
    } catch (e) {
      await w.abort();
      throw e;
    }
    await journal.remove();
    return { tiles: res.addressedTiles, bytes: res.bytes, kept: false, resumedBatches: batches.length - todo.length, computed: todo.reduce((n, b) => n + b.tiles.length / 3, 0) };
  } finally {
    await journal.close();
  }
}
