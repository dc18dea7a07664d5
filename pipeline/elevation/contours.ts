/** Contour lines from the elevation index, as a vector tileset (maplibre-contour's layer convention). */
import type { TilesetEntry } from '../../lib/manifest.ts';
import { MVT_EXTENT } from '../../lib/mvt.ts';
import { Compression, TileType } from '../../lib/pmtiles/index.ts';
import type { ContourTask, ContourZoom } from '../../workers/elevation-tiles.ts';
import { contourIntervals, type ContoursConfig } from '../config/elevation.ts';
import { fingerprintOf } from './fingerprint.ts';
import { indexExtent } from './terrain.ts';
import { runTileJob, type IndexTileset, type TileJobResult } from './tiles.ts';

/** The MVT layer holding the lines. */
export const CONTOUR_LAYER = 'contours';
/** Lines reach this far (tile units of 4096) beyond the tile, so joins across tile edges draw cleanly. */
const CLIP_BUFFER = 64;
/** Douglas–Peucker tolerance: half a pixel of a 512 px rendering of the tile. */
const SIMPLIFY_TOLERANCE = MVT_EXTENT / 512 / 2;
/** Bounds on the samples per tile side. */
const MIN_SAMPLES = 64;
const MAX_SAMPLES = 256;
/** Samples per DEM post along a tile side (about one: contours are drawn on the posts, like gdal_contour). */
const SAMPLES_PER_POST = 1;
/** Bumped when the same index and settings would give other contour tiles. */
const CONTOUR_VERSION = 'tilebake-contours/1';

/**
 * How zoom `z` samples the index: a power of two per tile side, about `SAMPLES_PER_POST` per post of
 * the finest layer (`stepLon` degrees), within 64..256; plus the buffer the clip needs.
 */
export function contourZoom(z: number, stepLon: number, intervals: ContoursConfig['intervals']): ContourZoom {
  const postsAcross = 360 / 2 ** z / stepLon;
  const samples = Math.min(MAX_SAMPLES, Math.max(MIN_SAMPLES, 2 ** Math.ceil(Math.log2(postsAcross * SAMPLES_PER_POST))));
  const [minor, major] = contourIntervals(intervals, z);
  // Points on the grid's border are dropped: keep two samples beyond the clip region.
  return { samples, buffer: Math.ceil((samples * CLIP_BUFFER) / MVT_EXTENT) + 2, minor, major };
}

/** Write the contour tileset, returning its manifest entry (without `archive`). */
export async function writeContourTiles(cfg: ContoursConfig, job: IndexTileset<ContourTask>): Promise<Omit<TilesetEntry, 'archive'> & { result: TileJobResult }> {
  const { meta } = job;
  const finest = Math.min(...meta.layers.map((l) => l.stepLon));
  const zooms: Record<number, ContourZoom> = {};
  for (let z = cfg.minzoom; z <= cfg.maxzoom; z++) zooms[z] = contourZoom(z, finest, cfg.intervals);
  const { bounds, center } = indexExtent(meta, cfg.minzoom, cfg.maxzoom);
  const description = 'Contour lines from the elevation index: ele (metres), level (1 for index contours)';
  const vectorLayers = [{ id: CONTOUR_LAYER, description, minzoom: cfg.minzoom, maxzoom: cfg.maxzoom, fields: { ele: 'Number', level: 'Number' } }];
  const metadata: Record<string, unknown> = { name: cfg.id, format: 'pbf', type: 'overlay', description, vector_layers: vectorLayers };
  if (job.attribution) metadata.attribution = job.attribution;
  const result = await runTileJob({
    label: `contours ${cfg.id}`,
    archive: job.archive,
    journal: job.journal,
    fingerprint: fingerprintOf(CONTOUR_VERSION, job.index.id, zooms, CLIP_BUFFER, SIMPLIFY_TOLERANCE, metadata),
    boxes: job.boxes,
    minzoom: cfg.minzoom,
    maxzoom: cfg.maxzoom,
    threads: job.threads,
    writer: { tileType: TileType.Mvt, tileCompression: Compression.Gzip, metadata, bounds, center },
    run: (tiles) => job.run({ index: job.index, layer: CONTOUR_LAYER, zooms, clipBuffer: CLIP_BUFFER, tolerance: SIMPLIFY_TOLERANCE, tiles }),
  });
  return {
    kind: 'vector', format: 'pbf', name: cfg.id, attribution: job.attribution, description,
    minzoom: cfg.minzoom, maxzoom: cfg.maxzoom, bounds, center, vector_layers: vectorLayers, tiles: result.tiles, bytes: result.bytes, result,
  };
}
