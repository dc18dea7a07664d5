/**
 * Hillshade and colour-relief raster tilesets from the elevation index: the pool's threads sample
 * each tile's grid (with a one-pixel margin, so edge pixels shade from their real neighbours), this
 * thread shades or colours it with GDAL's DEM processing (lib/elevation/dem-processing.ts, on libuv's
 * threads) and encodes it with the build's encoders (lib/raster-encode.ts). Tiles with nothing to show are left out.
 */
import sharp from 'sharp';
import { colorReliefTile, hillshadeGreyAlpha, hillshadeOverlay, type HillshadeOptions, type TileGrid } from '../../lib/elevation/dem-processing.ts';
import { loadGdal } from '../../lib/gdal.ts';
import type { TilesetEntry } from '../../lib/manifest.ts';
import { Compression, TileType } from '../../lib/pmtiles/index.ts';
import { encodeRgba, encoder, type EncoderSettings } from '../../lib/raster-encode.ts';
import type { GridOut, GridTask, TileOut } from '../../workers/elevation-tiles.ts';
import type { HillshadeConfig, ReliefConfig } from '../config/elevation.ts';
import { fingerprintOf } from './fingerprint.ts';
import { indexExtent } from './terrain.ts';
import { runTileJob, type IndexTileset, type TileJobResult } from './tiles.ts';

/** Pixels per tile side (the TileJSON's `tileSize`). */
export const SHADED_TILE_SIZE = 256;
/** Pixels sampled beyond a hillshade tile: gdaldem shades a pixel from its 8 neighbours. */
const HILLSHADE_BUFFER = 1;
/** Bumped when the same index and settings would give other hillshade or relief tiles. */
const SHADED_VERSION = 'tilebake-shaded/1';

/** What a shaded tileset's job needs besides the index: zooms resolved, the ramp's text read. */
export type HillshadeJob = HillshadeConfig & { minzoom: number; maxzoom: number };
export type ReliefJob = Omit<ReliefConfig, 'ramp'> & { minzoom: number; maxzoom: number; rampText: string };

/** True when some pixel of a grey-alpha image is not fully transparent. */
function anyVisible(greyAlpha: Uint8Array): boolean {
  for (let i = 1; i < greyAlpha.length; i += 2) if (greyAlpha[i] !== 0) return true;
  return false;
}

/** A grey-alpha image encoded (a grey-alpha PNG; libvips would otherwise read the two channels as colour), or undefined when fully transparent. */
async function encodeGreyAlpha(pixels: Uint8Array, format: 'png' | 'webp', settings: EncoderSettings): Promise<Buffer | undefined> {
  if (!anyVisible(pixels)) return undefined;
  const img = sharp(pixels, { raw: { width: SHADED_TILE_SIZE, height: SHADED_TILE_SIZE, channels: 2 } }).toColourspace('b-w');
  return encoder(format, img, 2, settings).toBuffer();
}

/** Shade (or colour) each sampled grid and encode it (grey-alpha or RGBA pixels); tiles left fully transparent are dropped. */
async function encodeGrids(grids: GridOut[], buffer: number, pixelsOf: (g: TileGrid) => Promise<Uint8Array>, encode: (pixels: Uint8Array) => Promise<Buffer | undefined>): Promise<TileOut[]> {
  const tiles = await Promise.all(grids.map(async (g): Promise<TileOut | undefined> => {
    const data = await encode(await pixelsOf({ ...g, size: SHADED_TILE_SIZE, buffer }));
    return data && { z: g.z, x: g.x, y: g.y, data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength) };
  }));
  return tiles.filter((t): t is TileOut => t !== undefined);
}

/** The manifest entry of a shaded tileset (without `archive`) and what its job did. */
type ShadedEntry = Omit<TilesetEntry, 'archive'> & { result: TileJobResult };

/** Write one shaded tileset: the job over the index's data, its archive's metadata, its manifest entry. */
async function writeShaded(
  what: { id: string; label: string; type: 'overlay' | 'baselayer'; format: 'png' | 'webp'; minzoom: number; maxzoom: number; description: string; settings: unknown },
  job: IndexTileset<GridTask, GridOut>,
  buffer: number,
  shade: (grids: GridOut[]) => Promise<TileOut[]>,
): Promise<ShadedEntry> {
  const { bounds, center } = indexExtent(job.meta, what.minzoom, what.maxzoom);
  const metadata: Record<string, unknown> = { name: what.id, format: what.format, tileSize: SHADED_TILE_SIZE, type: what.type, description: what.description };
  if (job.attribution) metadata.attribution = job.attribution;
  const gdal = await loadGdal();
  const result = await runTileJob({
    label: `${what.label} ${what.id}`,
    archive: job.archive,
    journal: job.journal,
    // GDAL's version too: another GDAL may shade otherwise.
    fingerprint: fingerprintOf(SHADED_VERSION, job.index.id, gdal.version, what.settings, metadata),
    boxes: job.boxes,
    minzoom: what.minzoom,
    maxzoom: what.maxzoom,
    threads: job.threads,
    writer: { tileType: what.format === 'png' ? TileType.Png : TileType.Webp, tileCompression: Compression.None, metadata, bounds, center },
    run: async (tiles) => shade(await job.run({ index: job.index, size: SHADED_TILE_SIZE, buffer, tiles })),
  });
  return {
    kind: 'raster', format: what.format, tileSize: SHADED_TILE_SIZE, name: what.id, attribution: job.attribution, description: what.description,
    minzoom: what.minzoom, maxzoom: what.maxzoom, bounds, center, tiles: result.tiles, bytes: result.bytes, result,
  };
}

/** The gdaldem options of a hillshade config. */
export function hillshadeOptions(cfg: HillshadeConfig): HillshadeOptions {
  return { azimuth: cfg.azimuth, altitude: cfg.altitude, zfactor: cfg.zfactor, method: cfg.method, algorithm: cfg.algorithm };
}

/** Write the hillshade tileset (GDAL's hillshade of every tile over the index's data). */
export function writeHillshadeTiles(cfg: HillshadeJob, job: IndexTileset<GridTask, GridOut>, settings: EncoderSettings): Promise<ShadedEntry> {
  const opts = hillshadeOptions(cfg);
  const overlay = cfg.flat === 'transparent';
  const light = cfg.method === 'multidirectional' ? 'multidirectional light' : `light from ${cfg.azimuth}°`;
  const description = `Hillshade from the elevation index (GDAL, ${light} at ${cfg.altitude}°${overlay ? '; flat ground transparent, shadows black, highlights white' : ''})`;
  return writeShaded(
    { id: cfg.id, label: 'hillshade', type: 'overlay', format: cfg.format, minzoom: cfg.minzoom, maxzoom: cfg.maxzoom, description, settings: { opts, flat: cfg.flat, format: cfg.format, encode: settings[cfg.format], size: SHADED_TILE_SIZE, buffer: HILLSHADE_BUFFER } },
    job,
    HILLSHADE_BUFFER,
    (grids) => (overlay
      ? encodeGrids(grids, HILLSHADE_BUFFER, (g) => hillshadeOverlay(g, opts), (px) => encodeRgba(px, SHADED_TILE_SIZE, SHADED_TILE_SIZE, cfg.format, settings))
      : encodeGrids(grids, HILLSHADE_BUFFER, (g) => hillshadeGreyAlpha(g, opts), (px) => encodeGreyAlpha(px, cfg.format, settings))),
  );
}

/** Write the colour-relief tileset (GDAL's color-relief of every tile's heights with the ramp). */
export function writeReliefTiles(cfg: ReliefJob, job: IndexTileset<GridTask, GridOut>, settings: EncoderSettings): Promise<ShadedEntry> {
  const description = 'Colour relief from the elevation index (GDAL color-relief)';
  return writeShaded(
    { id: cfg.id, label: 'relief', type: 'baselayer', format: cfg.format, minzoom: cfg.minzoom, maxzoom: cfg.maxzoom, description, settings: { ramp: cfg.rampText, match: cfg.match, format: cfg.format, encode: settings[cfg.format], size: SHADED_TILE_SIZE } },
    job,
    0,
    (grids) => encodeGrids(grids, 0, (g) => colorReliefTile(g, cfg.rampText, cfg.match), (px) => encodeRgba(px, SHADED_TILE_SIZE, SHADED_TILE_SIZE, cfg.format, settings)),
  );
}
