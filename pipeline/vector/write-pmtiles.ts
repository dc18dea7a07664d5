/**
 * Packing a tile source into a PMTiles v3 archive (temp file + rename): the metadata written, progress,
 * and the result the vector stage records.
 */
import { basename, resolve } from 'node:path';
import { UserError } from '../../lib/errors.ts';
import type { BBox } from '../../lib/tile-math.ts';
import type { TileFormat } from '../../lib/manifest.ts';
import { PMTilesWriter } from '../../lib/pmtiles/index.ts';
import { centerInBounds } from '../../lib/tile-math.ts';
import { createProgress, logLine } from '../../lib/progress.ts';
import { tileTypeOf, type SourceMetadata, type SourcePhase, type TileSource } from '../sources/common.ts';
import type { GisSourceOptions } from '../sources/gis.ts';

const MS_PER_S = 1000;

/** Overrides of the input's own metadata. */
export interface PackOptions {
  name?: string;
  attribution?: string;
  description?: string;
  /** Label of the progress bar (default: the output file). */
  label?: string;
  /** For an .osm.pbf input: clip to `[w, s, e, n]` first; `bboxField` names where it was configured. */
  bbox?: BBox;
  bboxField?: string;
  /** For an .osm.pbf input: the work folder of the generator (default: `.work/osm-<output name>` beside the output). */
  workDir?: string;
  /** For an .osm.pbf input: the world's tiles whole up to this zoom (default 6), `false` for none (osm/source.ts). */
  worldMaxzoom?: number | false;
  /** Where `worldMaxzoom` was configured, for messages. */
  worldMaxzoomField?: string;
  /** For an .osm.pbf input: the extract's own tiles only, no sea or Natural Earth (bench/region's baseline). */
  extractOnly?: boolean;
  /** For an .osm.pbf input: the `name:xx` languages written (default: DEFAULT_LANGUAGES); `languagesField` names where they were configured. */
  languages?: readonly string[];
  languagesField?: string;
  /** For a GIS file or a PostGIS database: its layers and zooms, and the tileset its messages name (sources/gis.ts). */
  gis?: Pick<GisSourceOptions, 'layers' | 'minzoom' | 'maxzoom' | 'tileset'>;
}

/** What `packVectorTiles` wrote. */
export interface PackResult {
  output: string;
  format: TileFormat;
  /** Metadata as written into the archive (after overrides). */
  metadata: SourceMetadata;
  /** Addressed tiles, directory entries and distinct tile contents in the archive. */
  tiles: number;
  tileEntries: number;
  tileContents: number;
  /** Archive size in bytes. */
  bytes: number;
  /** Wall time of each step: the source's own (an OSM extract: clip, sea, tilemaker), then `pack`. */
  phases: SourcePhase[];
}

/** The archive metadata JSON for a source: its extra keys, then the normalised TileJSON fields. */
export function archiveMetadata(m: SourceMetadata, format: TileFormat): Record<string, unknown> {
  const out: Record<string, unknown> = { ...m.extra };
  const set = (k: string, v: unknown) => {
    if (v !== undefined) out[k] = v;
  };
  set('name', m.name);
  set('attribution', m.attribution);
  set('description', m.description);
  set('version', m.version);
  out.format = format;
  out.type = m.extra.type ?? (format === 'pbf' ? 'overlay' : 'baselayer');
  out.bounds = m.bounds;
  set('world_maxzoom', m.world_maxzoom);
  set('region', m.region);
  out.center = m.center;
  out.minzoom = m.minzoom;
  out.maxzoom = m.maxzoom;
  if (format === 'pbf') out.vector_layers = m.vector_layers ?? [];
  return out;
}

/** Pack an opened source into a PMTiles archive at `output` (temp file + rename; nothing left on failure). */
export async function packSource(source: TileSource, output: string, opts: PackOptions = {}): Promise<PackResult> {
  if (resolve(source.path) === resolve(output)) {
    throw new UserError(`${output}: the output would overwrite the input (choose another output path)`);
  }
  const m = source.metadata;
  const metadata: SourceMetadata = {
    ...m,
    name: opts.name ?? m.name,
    attribution: opts.attribution ?? m.attribution,
    description: opts.description ?? m.description,
    // TileJSON 3.0.0: the center lies inside the bounds (MBTiles often carry one that does not).
    center: centerInBounds(m.bounds, m.center, m.minzoom, m.maxzoom),
  };
  const writer = await PMTilesWriter.create(output, {
    tileType: tileTypeOf(source.format),
    tileCompression: source.compression,
    metadata: archiveMetadata(metadata, source.format),
    bounds: metadata.bounds,
    center: metadata.center,
  });
  const started = performance.now();
  const progress = createProgress(opts.label ?? `vector ${basename(output)}`, source.count);
  try {
    let added = 0;
    for await (const t of source.tiles()) {
      // A zero-length blob is "no tile" (some MBTiles store empty tiles that way).
      if (t.data.length === 0) continue;
      await writer.addTile(t.z, t.x, t.y, t.data);
      progress.tick();
      added++;
    }
    if (added === 0) throw new UserError(`${source.path}: no tiles to pack`);
    progress.setTotal(added);
    const r = await writer.finish();
    progress.done();
    logLine(`${output}: ${r.addressedTiles} tiles (${r.tileEntries} entries, ${r.tileContents} distinct), z${r.minZoom}-${r.maxZoom}, ${r.bytes} bytes`);
    return {
      output,
      format: source.format,
      metadata,
      tiles: r.addressedTiles,
      tileEntries: r.tileEntries,
      tileContents: r.tileContents,
      bytes: r.bytes,
      phases: [...(source.phases ?? []), { name: 'pack', seconds: (performance.now() - started) / MS_PER_S }],
    };
  } catch (e) {
    await writer.abort();
    if (e instanceof Error && e.name === 'DuplicateTileError') {
      throw new UserError(`${source.path}: ${e.message.replace(/^PMTiles writer: /, '')} (the input holds the same tile twice)`, { cause: e });
    }
    throw e;
  } finally {
    progress.done();
  }
}
