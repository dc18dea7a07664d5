/**
 * One pack archive planned from a build version: the zooms and bounds it has (the request's, within the
 * archive's), its metadata, and the tiles it holds, read from the archive's directories only (no tile
 * bytes yet); for a delta, the tiles that changed since an older version and the ones removed. Shared
 * by `tilebake pack` and `GET /packs/…`.
 */
import { boundsAtZoom, type Manifest } from '../../lib/manifest.ts';
import { UserError } from '../../lib/errors.ts';
import { sha256 } from '../../lib/hash.ts';
import { intersectBBox } from '../../lib/packs/area.ts';
import { deltaTiles, selectTiles, type PackDelta, type PackTiles } from '../../lib/packs/select.ts';
import { DELTA_KEY, type DeltaInfo } from '../../lib/packs/pmtiles-pack.ts';
import { openStoreArchive, tileIdToZxy, type ArchiveReader, type WriterOptions } from '../../lib/pmtiles/index.ts';
import type { Store } from '../../lib/storage.ts';
import { coverArea, type Area } from '../../lib/tile-cover.ts';
import { packMetadata, packSourceNamed, sourceExtent, type PackExtent, type PackSource } from './sources.ts';

/** A build version to pack from. */
export interface PackVersion {
  store: Store;
  manifest: Manifest;
  build: string | undefined;
}

/** What is asked: the area and zooms, and how to name them in errors (CLI flags or HTTP parameters). */
export interface PackRequest {
  area: Area;
  minzoom?: number;
  maxzoom?: number;
  names: { area: string; minzoom: string; maxzoom: string; since: string };
}

/** The delta part of a plan. */
export interface PlannedDelta extends PackDelta {
  since: string;
  older: PackTiles;
  olderReader: ArchiveReader;
  /** The metadata the older version's pack of the same request has. */
  olderMetadata: Record<string, unknown>;
}

/** One planned pack archive. Close it when done (it holds the archives open). */
export interface PackPlan {
  source: PackSource;
  extent: PackExtent;
  /** The pack's metadata (of the newer version, for a delta). */
  metadata: Record<string, unknown>;
  reader: ArchiveReader;
  /** Every tile of the area in this version (a full pack holds these). */
  tiles: PackTiles;
  delta?: PlannedDelta;
  /** The tiles the archive written holds: `tiles`, or the delta's changed tiles. */
  readonly content: PackTiles;
  /** A delta archive's metadata: the newer pack's, plus what it applies to and what it removes. */
  archiveMetadata(): Record<string, unknown>;
  close(): Promise<void>;
}

/** A request the build cannot answer (zooms or area outside the archive's, a source an older build lacks): the asker's to fix. */
export class PackInputError extends UserError {
  constructor(message: string) {
    super(message, { exitCode: 2 });
  }
}

/** A short id of an area (what a delta checks its older pack was cut from). */
export function areaId(area: Area): string {
  return sha256(JSON.stringify(area)).slice(0, 16);
}

/** The zooms and bounds of `source`'s pack for `req`, or a UserError naming the input. */
function extentOf(source: PackSource, req: PackRequest, build: string | undefined): PackExtent {
  const src = sourceExtent(source);
  const minzoom = Math.max(req.minzoom ?? src.minzoom, src.minzoom);
  const maxzoom = Math.min(req.maxzoom ?? src.maxzoom, src.maxzoom);
  if (minzoom > maxzoom) {
    throw new PackInputError(`${req.names.minzoom}/${req.names.maxzoom}: ${source.name} has zooms ${src.minzoom}–${src.maxzoom}, none of them asked for`);
  }
  // With the world at low zooms, only the extract's region above world_maxzoom (lib/manifest.ts boundsAtZoom):
  // the widest coverage of the zooms asked for is the one at the lowest.
  const bounds = intersectBBox(req.area.bbox, boundsAtZoom(src, minzoom));
  if (!bounds) throw new PackInputError(`${req.names.area}: the area [${req.area.bbox.join(', ')}] does not meet ${source.name}'s bounds [${boundsAtZoom(src, minzoom).join(', ')}]${src.world_maxzoom !== undefined ? ` at zooms ${minzoom}–${maxzoom}` : ''}`);
  return { build, bounds, minzoom, maxzoom };
}

/** Plan `source`'s pack from `version` (and its delta since `older` when given). */
export async function planPack(version: PackVersion, source: PackSource, req: PackRequest, older?: PackVersion): Promise<PackPlan> {
  const extent = extentOf(source, req, version.build);
  const metadata = { ...packMetadata(source, extent, areaId(req.area)) };
  const ranges = coverArea(req.area, extent.minzoom, extent.maxzoom);
  const opened: ArchiveReader[] = [];
  const close = async () => {
    await Promise.allSettled(opened.map((r) => r.close()));
  };
  try {
    const reader = await openStoreArchive(version.store, source.archive);
    opened.push(reader);
    const tiles = await selectTiles(reader, ranges);
    let delta: PlannedDelta | undefined;
    if (older) {
      const since = older.build ?? '(legacy)';
      const olderSource = packSourceNamed(older.manifest, source.name);
      if (!olderSource) throw new PackInputError(`${req.names.since}: build ${since} has no ${source.name} (a pack of it cannot be brought up to date)`);
      const olderExtent = extentOf(olderSource, req, older.build);
      const olderReader = await openStoreArchive(older.store, olderSource.archive);
      opened.push(olderReader);
      const olderTiles = await selectTiles(olderReader, ranges);
      const d = await deltaTiles(olderTiles, olderReader, tiles, reader);
      delta = { ...d, since, older: olderTiles, olderReader, olderMetadata: packMetadata(olderSource, olderExtent, areaId(req.area)) };
    }
    return {
      source,
      extent,
      metadata,
      reader,
      tiles,
      delta,
      content: delta ?? tiles,
      archiveMetadata() {
        if (!delta) return metadata;
        const removed: string[] = [];
        for (const [start, end] of delta.removed) for (let id = start; id < end; id++) removed.push(tileIdToZxy(id).join('/'));
        const info: DeltaInfo = { since: delta.since, removed };
        return { ...metadata, [DELTA_KEY]: info };
      },
      close,
    };
  } catch (e) {
    await close();
    throw e;
  }
}

/** The PMTiles writer options of a plan: the source archive's tile type and compression, the pack's metadata, bounds and centre. */
export function packWriterOptions(plan: PackPlan): WriterOptions {
  const h = plan.reader.header;
  return {
    tileType: h.tileType,
    tileCompression: h.tileCompression,
    metadata: plan.archiveMetadata(),
    bounds: plan.metadata.bounds as [number, number, number, number],
    center: plan.metadata.center as [number, number, number],
  };
}
