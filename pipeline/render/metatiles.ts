import { tileRangeForBBox as tileRange, tileCountInBBox } from '../../lib/tile-math.ts';

/** Tile size in CSS pixels at 1x. */
export const TILE_SIZE = 256;
/** One tile address. */
export interface TileId {
  z: number;
  x: number;
  y: number;
}

/** An N×N block of tiles rendered at once; `tiles` are the ones inside the area to render. */
export interface Metatile {
  z: number;
  /** Top-left tile of the block. */
  x0: number;
  y0: number;
  /** Tiles per side (the configured size, clamped to the world at low zooms). */
  size: number;
  /** Tiles of the block that intersect the bbox (row-major). */
  tiles: TileId[];
}

/** A stable key `z/x0/y0` for journals and sharding. */
export function metatileKey(m: Pick<Metatile, 'z' | 'x0' | 'y0'>): string {
  return `${m.z}/${m.x0}/${m.y0}`;
}

/** Number of tiles of bbox over zooms minzoom..maxzoom. */
export const countTiles = tileCountInBBox;

/** Every metatile touching bbox for zooms minzoom..maxzoom, in a deterministic order (z, row, column). */
export function* enumerateMetatiles(bbox: [number, number, number, number], minzoom: number, maxzoom: number, metatile: number): Generator<Metatile> {
  for (let z = minzoom; z <= maxzoom; z++) {
    const size = Math.min(metatile, 2 ** z);
    const r = tileRange(bbox, z);
    for (let my = Math.floor(r.minY / size); my <= Math.floor(r.maxY / size); my++) {
      for (let mx = Math.floor(r.minX / size); mx <= Math.floor(r.maxX / size); mx++) {
        const x0 = mx * size;
        const y0 = my * size;
        const tiles: TileId[] = [];
        for (let y = Math.max(y0, r.minY); y <= Math.min(y0 + size - 1, r.maxY); y++) {
          for (let x = Math.max(x0, r.minX); x <= Math.min(x0 + size - 1, r.maxX); x++) tiles.push({ z, x, y });
        }
        yield { z, x0, y0, size, tiles };
      }
    }
  }
}

/** Longitude of world x (in tiles) at zoom z. */
function tileXToLon(x: number, z: number): number {
  return (x / 2 ** z) * 360 - 180;
}

/** Latitude of world y (in tiles) at zoom z. */
function tileYToLat(y: number, z: number): number {
  const n = Math.PI * (1 - (2 * y) / 2 ** z);
  return (Math.atan(Math.sinh(n)) * 180) / Math.PI;
}

/** The MapLibre view (CSS size, centre, zoom) that draws a metatile plus `margin` CSS pixels on every side. */
export function metatileView(m: Pick<Metatile, 'z' | 'x0' | 'y0' | 'size'>, margin: number): { width: number; height: number; center: [number, number]; zoom: number } {
  const side = m.size * TILE_SIZE + 2 * margin;
  const cx = m.x0 + m.size / 2;
  const cy = m.y0 + m.size / 2;
  // MapLibre zoom z draws the world 512·2^z px wide, so 256 px tiles of zoom z are MapLibre zoom z − 1.
  return { width: side, height: side, center: [tileXToLon(cx, m.z), tileYToLat(cy, m.z)], zoom: m.z - 1 };
}

/** Pixel rectangle of `tile` inside the rendered metatile canvas (device pixels). */
export function tileRect(m: Pick<Metatile, 'x0' | 'y0'>, tile: TileId, margin: number, pixelRatio: number): { left: number; top: number; width: number; height: number } {
  const size = TILE_SIZE * pixelRatio;
  return {
    left: (margin + (tile.x - m.x0) * TILE_SIZE) * pixelRatio,
    top: (margin + (tile.y - m.y0) * TILE_SIZE) * pixelRatio,
    width: size,
    height: size,
  };
}

/** True when metatile number `ordinal` (in enumeration order) belongs to shard `index` of `count`. */
export function inShard(ordinal: number, shard?: { index: number; count: number }): boolean {
  return !shard || ordinal % shard.count === shard.index;
}
