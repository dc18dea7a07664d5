/** Terrain-RGB tiles from the elevation index, over the index's data only. */
import type { IndexMeta } from '../../lib/elevation/format.ts';
import type { TilesetEntry } from '../../lib/manifest.ts';
import { Compression, TileType } from '../../lib/pmtiles/index.ts';
import { centerInBounds, MAX_LATITUDE, pixelCentreAxes, zoomForPostSpacing, type BBox } from '../../lib/tile-math.ts';
import type { TerrainTask } from '../../workers/elevation-tiles.ts';
import type { TerrainConfig } from '../config/elevation.ts';
import { fingerprintOf } from './fingerprint.ts';
import { runTileJob, type IndexTileset, type TileJobResult } from './tiles.ts';

/** Pixels per terrain tile side (the TileJSON's `tileSize`). */
export const TERRAIN_TILE_SIZE = 256;
/** PNG zlib level for terrain tiles. */
const PNG_COMPRESSION_LEVEL = 6;
/** Bumped when the same index and settings would give other terrain tiles. */
const TERRAIN_VERSION = 'tilebake-terrain/2';

/** Lat/lon of every pixel centre of tile z/x/y, row by row (what a terrain tile's pixels sample). */
export function pixelCentres(z: number, x: number, y: number, size = TERRAIN_TILE_SIZE): { lat: number; lon: number }[] {
  const { lats, lons } = pixelCentreAxes(z, x, y, size);
  const out: { lat: number; lon: number }[] = new Array(size * size);
  for (let py = 0; py < size; py++) for (let px = 0; px < size; px++) out[py * size + px] = { lat: lats[py], lon: lons[px] };
  return out;
}

/** The default terrain maxzoom: per layer, the zoom whose pixels are just finer than its posts at its middle latitude; the finest wins. */
export function defaultTerrainMaxzoom(meta: IndexMeta, tileSize = TERRAIN_TILE_SIZE): number {
  return Math.max(...meta.layers.map((L) => zoomForPostSpacing(L.stepLon, L.stepLat, L.originLat - ((L.rows - 1) * L.stepLat) / 2, tileSize)));
}

/** The index's bounds clipped to the Mercator square, and a center on the first source's data. */
export function indexExtent(meta: IndexMeta, minzoom: number, maxzoom: number): { bounds: BBox; center: [number, number, number] } {
  const b = meta.bounds;
  const bounds: BBox = [Math.max(-180, b[0]), Math.max(-MAX_LATITUDE, b[1]), Math.min(180, b[2]), Math.min(MAX_LATITUDE, b[3])];
  // The middle of the bounds may lie between distant sources: aim at the first source instead.
  const f = meta.coverage[0] ?? bounds;
  return { bounds, center: centerInBounds(bounds, [(f[0] + f[2]) / 2, (f[1] + f[3]) / 2, NaN], minzoom, maxzoom) };
}

/**
 * Write terrain tiles at minzoom..maxzoom over the blocks of the index that hold data, returning
 * the manifest entry (without `archive`, which the caller knows relative to the output).
 */
export async function writeTerrainTiles(cfg: TerrainConfig & { maxzoom: number }, job: IndexTileset<TerrainTask>): Promise<Omit<TilesetEntry, 'archive'> & { result: TileJobResult }> {
  const { bounds, center } = indexExtent(job.meta, cfg.minzoom, cfg.maxzoom);
  const description = `Terrain-RGB (${cfg.encoding}) from the elevation index`;
  const metadata: Record<string, unknown> = { name: cfg.id, format: cfg.format, encoding: cfg.encoding, tileSize: TERRAIN_TILE_SIZE, type: 'baselayer', description };
  if (job.attribution) metadata.attribution = job.attribution;
  const settings = { encoding: cfg.encoding, format: cfg.format, minzoom: cfg.minzoom, maxzoom: cfg.maxzoom, size: TERRAIN_TILE_SIZE, png: PNG_COMPRESSION_LEVEL };
  const result = await runTileJob({
    label: `terrain ${cfg.id}`,
    archive: job.archive,
    journal: job.journal,
    fingerprint: fingerprintOf(TERRAIN_VERSION, job.index.id, settings, metadata),
    boxes: job.boxes,
    minzoom: cfg.minzoom,
    maxzoom: cfg.maxzoom,
    threads: job.threads,
    writer: { tileType: cfg.format === 'png' ? TileType.Png : TileType.Webp, tileCompression: Compression.None, metadata, bounds, center },
    run: (tiles) => job.run({ index: job.index, encoding: cfg.encoding, format: cfg.format, size: TERRAIN_TILE_SIZE, pngLevel: PNG_COMPRESSION_LEVEL, tiles }),
  });
  return {
    kind: 'terrain', format: cfg.format, encoding: cfg.encoding, tileSize: TERRAIN_TILE_SIZE, name: cfg.id, attribution: job.attribution,
    description, minzoom: cfg.minzoom, maxzoom: cfg.maxzoom, bounds, center, tiles: result.tiles, bytes: result.bytes, result,
  };
}
