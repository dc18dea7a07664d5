/**
 * Metatiles: the blocks of tiles the render page draws at once (the build bakes every one of a
 * bbox; `serve` renders one on demand above the baked zooms), the MapLibre view that draws one, and
 * where each tile lies in its canvas. One grid for both, so an on-demand tile is the baked one.
 */
import { tileRangeForBBox as tileRange, type BBox, type TileRange } from './tile-math.ts';

/** Tile size in CSS pixels at 1x. */
export const TILE_SIZE = 256;
/** One tile address. */
export interface TileId {
  z: number;
  x: number;
  y: number;
}

/** An N×N block of tiles rendered at once (less along the bbox's far edges); `tiles` are its tiles. */
export interface Metatile {
  z: number;
  /** Top-left tile of the block. */
  x0: number;
  y0: number;
  /** Tiles per side of a full block (the configured size, clamped to the world at low zooms). */
  size: number;
  /** Tiles of the block, all inside the bbox (row-major). */
  tiles: TileId[];
  /** The rectangle those tiles form (tile units); this is what is drawn (plus the margin). */
  area: TileArea;
}

/** A rectangle of tiles: top-left column/row and width/height in tiles. */
export interface TileArea {
  x: number;
  y: number;
  w: number;
  h: number;
}

/** A stable key `z/x0/y0` for journals and sharding. */
export function metatileKey(m: Pick<Metatile, 'z' | 'x0' | 'y0'>): string {
  return `${m.z}/${m.x0}/${m.y0}`;
}

/** The metatile of zoom z whose top-left tile is x0/y0, clamped to the tile range `r` of its bbox. */
function metatileAt(r: TileRange, z: number, x0: number, y0: number, size: number): Metatile {
  const tiles: TileId[] = [];
  const x1 = Math.min(x0 + size - 1, r.maxX);
  const y1 = Math.min(y0 + size - 1, r.maxY);
  for (let y = y0; y <= y1; y++) {
    for (let x = x0; x <= x1; x++) tiles.push({ z, x, y });
  }
  return { z, x0, y0, size, tiles, area: { x: x0, y: y0, w: x1 - x0 + 1, h: y1 - y0 + 1 } };
}

/** A bbox, or one per zoom (a tileset with the world's low zooms: lib/manifest.ts `boundsAtZoom`). */
export type ZoomBBox = BBox | ((z: number) => BBox);
const bboxAt = (area: ZoomBBox, z: number): BBox => (typeof area === 'function' ? area(z) : area);

/**
 * Every metatile of bbox for zooms minzoom..maxzoom, in a deterministic order (z, row, column).
 * The grid starts at the bbox's first tile (not at multiples of the metatile size, as on-demand
 * renderers that cache metatiles do): a region then has partial metatiles only along its far edges,
 * fewer and larger renders. Metatiles are clamped to the world at low zooms.
 */
export function* enumerateMetatiles(bbox: ZoomBBox, minzoom: number, maxzoom: number, metatile: number): Generator<Metatile> {
  for (let z = minzoom; z <= maxzoom; z++) {
    const size = Math.min(metatile, 2 ** z);
    const r = tileRange(bboxAt(bbox, z), z);
    for (let y0 = r.minY; y0 <= r.maxY; y0 += size) {
      for (let x0 = r.minX; x0 <= r.maxX; x0 += size) yield metatileAt(r, z, x0, y0, size);
    }
  }
}

/**
 * The metatile of enumerateMetatiles(bbox, z, z, metatile) that holds tile z/x/y (the same grid,
 * without enumerating it), or undefined when the tile is outside the bbox's tiles.
 */
export function metatileContaining(bbox: ZoomBBox, z: number, x: number, y: number, metatile: number): Metatile | undefined {
  const r = tileRange(bboxAt(bbox, z), z);
  if (x < r.minX || x > r.maxX || y < r.minY || y > r.maxY) return undefined;
  const size = Math.min(metatile, 2 ** z);
  return metatileAt(r, z, r.minX + Math.floor((x - r.minX) / size) * size, r.minY + Math.floor((y - r.minY) / size) * size, size);
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

/** The MapLibre view (CSS size, centre, zoom) that draws a metatile's area plus `margin` CSS pixels on every side. */
export function metatileView(m: Pick<Metatile, 'z' | 'area'>, margin: number): { width: number; height: number; center: [number, number]; zoom: number } {
  const { x, y, w, h } = m.area;
  // MapLibre zoom z draws the world 512·2^z px wide, so 256 px tiles of zoom z are MapLibre zoom z − 1.
  return {
    width: w * TILE_SIZE + 2 * margin,
    height: h * TILE_SIZE + 2 * margin,
    center: [tileXToLon(x + w / 2, m.z), tileYToLat(y + h / 2, m.z)],
    zoom: m.z - 1,
  };
}

/** Canvas size in device pixels of a metatile's render. */
export function canvasSize(m: Pick<Metatile, 'area'>, margin: number, pixelRatio: number): { width: number; height: number } {
  return { width: (m.area.w * TILE_SIZE + 2 * margin) * pixelRatio, height: (m.area.h * TILE_SIZE + 2 * margin) * pixelRatio };
}

/** Pixel rectangle of `tile` inside the rendered metatile canvas (device pixels). */
export function tileRect(m: Pick<Metatile, 'area'>, tile: TileId, margin: number, pixelRatio: number): { left: number; top: number; width: number; height: number } {
  const size = TILE_SIZE * pixelRatio;
  return {
    left: (margin + (tile.x - m.area.x) * TILE_SIZE) * pixelRatio,
    top: (margin + (tile.y - m.area.y) * TILE_SIZE) * pixelRatio,
    width: size,
    height: size,
  };
}

