/**
 * `tilebake pack-apply`: an older pack plus a delta gives the newer pack. PMTiles: the older
 * archive's tiles, less the removed and changed ones, plus the delta's, written through PMTilesWriter
 * with the delta's metadata (the newer pack's): byte for byte the newer pack (the same tiles and
 * metadata give the same archive). MBTiles: Martin's patch convention (mbtiles.ts).
 */
import { open } from 'node:fs/promises';
import { zxyToTileId } from 'pmtiles';
import { UserError } from '../errors.ts';
import { openArchiveFile, PMTilesWriter, writerOptionsOf, type ArchiveReader } from '../pmtiles/index.ts';
import { applyMbtilesDelta } from './mbtiles.ts';
import { DELTA_KEY, type DeltaInfo } from './pmtiles-pack.ts';
import { readInOrder, type ByteRange } from './read.ts';

/** Metadata key of what a pack is of: `{ build, source, area }` (static-server/packs/sources.ts writes it). */
export const PACK_KEY = 'tilebake';

/** What a pack's metadata says it is of. */
export interface PackOf {
  build?: string;
  /** The archive's pack name (`omt`, `styles/osm-bright@2x.png`). */
  source?: string;
  /** An id of the area asked for. */
  area?: string;
}

/** `z/x/y` → tile id, checked; `where` names the delta in errors. */
function tileIdOf(zxy: string, where: string): number {
  const m = /^(\d+)\/(\d+)\/(\d+)$/.exec(zxy);
  const [z, x, y] = m ? [Number(m[1]), Number(m[2]), Number(m[3])] : [NaN, NaN, NaN];
  if (!m || z > 26 || x >= 2 ** z || y >= 2 ** z) throw new UserError(`${where}: ${DELTA_KEY}.removed: "${zxy}" is not a tile z/x/y`);
  return zxyToTileId(z, x, y);
}

/** True when the file starts with the PMTiles magic. */
async function isPmtiles(path: string): Promise<boolean> {
  let fh;
  try {
    fh = await open(path, 'r');
  } catch (e) {
    throw new UserError(`${path}: cannot open (${(e as NodeJS.ErrnoException).code ?? String(e)})`);
  }
  try {
    const b = Buffer.alloc(7);
    await fh.read(b, 0, 7, 0);
    return b.toString('latin1') === 'PMTiles';
  } finally {
    await fh.close();
  }
}

/** One run of tiles of the result and where its bytes come from. */
interface Run {
  tileId: number;
  runLength: number;
  fromDelta: boolean;
  range: ByteRange;
}

/** Apply PMTiles delta `deltaPath` to `oldPath`, writing `outPath`. Returns the result's tile count. */
export async function applyPmtilesDelta(oldPath: string, deltaPath: string, outPath: string): Promise<number> {
  const delta = await openArchiveFile(deltaPath);
  let old: ArchiveReader | undefined;
  try {
    old = await openArchiveFile(oldPath);
    const dm = await delta.metadata();
    const info = dm[DELTA_KEY] as DeltaInfo | undefined;
    if (!info || typeof info.since !== 'string' || !Array.isArray(info.removed)) throw new UserError(`${deltaPath}: not a tilebake delta (no "${DELTA_KEY}" in its metadata)`);
    const om = await old.metadata();
    const oldOf = (om[PACK_KEY] ?? {}) as PackOf;
    const newOf = (dm[PACK_KEY] ?? {}) as PackOf;
    if (oldOf.build !== info.since) {
      throw new UserError(`${oldPath}: a pack of build ${oldOf.build ?? '(unknown)'}; the delta ${deltaPath} applies to a pack of build ${info.since}`);
    }
    const same = (k: string, a: unknown, b: unknown) => {
      if (JSON.stringify(a) !== JSON.stringify(b)) throw new UserError(`${oldPath}: a pack with ${k} ${JSON.stringify(a)}; the delta ${deltaPath} is for one with ${k} ${JSON.stringify(b)}`);
    };
    same('source', oldOf.source, newOf.source);
    same('area', oldOf.area, newOf.area);
    same('minzoom', om.minzoom, dm.minzoom);
    same('maxzoom', om.maxzoom, dm.maxzoom);
    if (delta.header.tileType !== old.header.tileType || delta.header.tileCompression !== old.header.tileCompression) {
      throw new UserError(`${oldPath}: its tile type or compression differs from the delta ${deltaPath}'s`);
    }
    const removed = new Set(info.removed.map((t) => tileIdOf(t, deltaPath)));
    const deltaRuns: Run[] = [];
    for await (const e of delta.entries()) if (e.length > 0) deltaRuns.push({ tileId: e.tileId, runLength: e.runLength, fromDelta: true, range: { offset: e.offset, length: e.length } });
    // Merge: the delta's tiles win; the old pack's others stay unless removed.
    const runs: Run[] = [];
    let d = 0;
    const keepOld = (tileId: number, runLength: number, range: ByteRange) => {
      for (let t = tileId; t < tileId + runLength; ) {
        while (d < deltaRuns.length && deltaRuns[d].tileId + deltaRuns[d].runLength <= t) runs.push(deltaRuns[d++]);
        const next = d < deltaRuns.length ? deltaRuns[d] : undefined;
        if (next && next.tileId <= t) {
          t = next.tileId + next.runLength; // covered by the delta
          continue;
        }
        if (removed.has(t)) {
          t++;
          continue;
        }
        let end = Math.min(tileId + runLength, next ? next.tileId : Infinity);
        for (let u = t + 1; u < end; u++) if (removed.has(u)) end = u;
        runs.push({ tileId: t, runLength: end - t, fromDelta: false, range });
        t = end;
      }
    };
    for await (const e of old.entries()) if (e.length > 0) keepOld(e.tileId, e.runLength, { offset: e.offset, length: e.length });
    while (d < deltaRuns.length) runs.push(deltaRuns[d++]);
    const metadata = { ...dm };
    delete metadata[DELTA_KEY];
    const writer = await PMTilesWriter.create(outPath, writerOptionsOf(delta.header, metadata));
    try {
      const fromOld = readInOrder(old, (function* () {
        for (const r of runs) if (!r.fromDelta) yield r.range;
      })());
      const fromDelta = readInOrder(delta, (function* () {
        for (const r of runs) if (r.fromDelta) yield r.range;
      })());
      for (const r of runs) {
        const next = await (r.fromDelta ? fromDelta : fromOld).next();
        if (next.done) throw new Error('pack-apply: a source ended early');
        for (let t = 0; t < r.runLength; t++) await writer.addTileId(r.tileId + t, next.value);
      }
      const result = await writer.finish();
      return result.addressedTiles;
    } catch (e) {
      await writer.abort();
      throw e;
    }
  } finally {
    await old?.close();
    await delta.close();
  }
}

/** Apply one delta file to one pack file (PMTiles or MBTiles, told by the delta's first bytes). */
export async function applyDelta(oldPath: string, deltaPath: string, outPath: string): Promise<void> {
  if (await isPmtiles(deltaPath)) await applyPmtilesDelta(oldPath, deltaPath, outPath);
  else await applyMbtilesDelta(oldPath, deltaPath, outPath);
}
