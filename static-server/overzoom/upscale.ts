/**
 * Raster tiles above a style's baked maxzoom (`upscale` mode): the tile is the view of its own
 * extent composed from the deepest baked zoom (static-server/static-map/compose.ts: the ancestor's
 * quadrant with a pixel of its neighbours, resampled by sharp), encoded and kept in the
 * server's tile cache. Where the build has no ancestor tile the answer is "no tile", as below maxzoom.
 */
import type { StyleArchive, StyleEntry } from '../../lib/manifest.ts';
import type { Archives } from '../archives.ts';
import type { Camera } from '../static-map/camera.ts';
import { composeImage, type RasterSource } from '../static-map/compose.ts';
import type { DecodedTiles } from '../static-map/decoded-tiles.ts';
import { TILE_SIZE } from '../../lib/metatiles.ts';
import { tileBody, type TileBody } from '../tile-response.ts';

/** The baked tiles of one archive of a style, as static maps and upscaled tiles read them. */
export function styleRasterSource(archives: Archives, decoded: DecodedTiles, entry: StyleEntry, archive: StyleArchive): RasterSource {
  return {
    tileSize: TILE_SIZE * archive.scale,
    minzoom: entry.minzoom,
    maxzoom: entry.maxzoom,
    tile: async (z, x, y, alpha) => {
      const body = await archives.tile(archive.archive, z, x, y);
      return body && decoded.get(`${archive.archive}/${z}/${x}/${y}`, body.bytes, alpha);
    },
  };
}

/** Cache key prefix of upscaled tiles in the server's tile cache. */
const KEY_PREFIX = 'upscaled:';

/** Upscaled tiles, cached with the baked ones; concurrent requests for one tile share one computation. */
export class Upscaler {
  constructor(
    private readonly archives: Archives,
    private readonly decoded: DecodedTiles,
  ) {}

  /** Tile z/x/y (z above the baked maxzoom) of `archive`, or null where the build has no ancestor tile. */
  tile(entry: StyleEntry, archive: StyleArchive, z: number, x: number, y: number): Promise<TileBody | null> {
    return this.archives.tiles.getOrLoad(`${KEY_PREFIX}${archive.archive}/${z}/${x}/${y}`, () => this.make(entry, archive, z, x, y));
  }

  private async make(entry: StyleEntry, archive: StyleArchive, z: number, x: number, y: number): Promise<TileBody | null> {
    const dz = z - entry.maxzoom;
    const ancestor = await this.archives.tile(archive.archive, entry.maxzoom, Math.floor(x / 2 ** dz), Math.floor(y / 2 ** dz));
    if (!ancestor) return null;
    const size = TILE_SIZE * archive.scale;
    const n = 2 ** z;
    const cam: Camera = { cx: (x + 0.5) / n, cy: (y + 0.5) / n, zoom: z, bearing: 0, width: size, height: size, scale: archive.scale };
    const image = await composeImage(cam, styleRasterSource(this.archives, this.decoded, entry, archive), [], archive.format);
    return tileBody(image.bytes);
  }
}
