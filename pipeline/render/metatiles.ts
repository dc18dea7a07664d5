import { tileRangeForBBox as tileRange, tileCountInBBox } from '../../lib/tile-math.ts';

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

/** Number of tiles of bbox over zooms minzoom..maxzoom. */
export const countTiles = tileCountInBBox;

/**
 * Every metatile of bbox for zooms minzoom..maxzoom, in a deterministic order (z, row, column).
 * The grid starts at the bbox's first tile (not at multiples of the metatile size, as on-demand
 * renderers that cache metatiles do): a region then has partial metatiles only along its far edges,
 * fewer and larger renders. Metatiles are clamped to the world at low zooms.
 */
export function* enumerateMetatiles(bbox: [number, number, number, number], minzoom: number, maxzoom: number, metatile: number): Generator<Metatile> {
  for (let z = minzoom; z <= maxzoom; z++) {
    const size = Math.min(metatile, 2 ** z);
    const r = tileRange(bbox, z);
    for (let y0 = r.minY; y0 <= r.maxY; y0 += size) {
      for (let x0 = r.minX; x0 <= r.maxX; x0 += size) {
        const tiles: TileId[] = [];
        const x1 = Math.min(x0 + size - 1, r.maxX);
        const y1 = Math.min(y0 + size - 1, r.maxY);
        for (let y = y0; y <= y1; y++) {
          for (let x = x0; x <= x1; x++) tiles.push({ z, x, y });
        }
        yield { z, x0, y0, size, tiles, area: { x: x0, y: y0, w: x1 - x0 + 1, h: y1 - y0 + 1 } };
      }
    }
  }
}

/**
 * The order to render metatiles in: highest zoom first (the big, slow metatiles), each zoom in
 * enumeration order (neighbours share vector tiles in the page's cache). The cheap low-zoom renders
 * come last and keep every browser busy to the end. The tiles do not depend on the order.
 */
export function renderOrder(metas: Metatile[]): Metatile[] {
  return metas.map((m, i) => ({ m, i })).sort((a, b) => b.m.z - a.m.z || a.i - b.i).map((e) => e.m);
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

/** True when metatile number `ordinal` (in enumeration order) belongs to shard `index` of `count`. */
export function inShard(ordinal: number, shard?: { index: number; count: number }): boolean {
  return !shard || ordinal % shard.count === shard.index;
}

/** What decides which tiles of a source MapLibre loads: the source's zoom range and tile size (CSS px). */
export interface SourceGrid {
  minzoom: number;
  maxzoom: number;
  /** 512 unless the style's source says otherwise (MapLibre's default). */
  tileSize: number;
}

/**
 * The block of source tiles MapLibre loads to draw metatile `m` with `margin` CSS pixels on every
 * side, before wrapping and clamping to the world: the tiles of the source's covering zoom that
 * intersect the view. The page draws 256 px tiles of zoom z at map zoom z − 1; MapLibre covers a view
 * at zoom max(0, ⌊mapZoom + log2(512 / tileSize)⌋), none below the source's minzoom (undefined), the
 * maxzoom tiles beyond it (overzoom: a parent of the ideal tile). Tiles touching the view's edge are
 * included (a change there re-renders rather than being missed). Columns x0..x1 may run past the
 * antimeridian and rows y0..y1 past the poles (`n` tiles per side at zoom `z`).
 */
export function viewSourceRange(m: Pick<Metatile, 'z' | 'area'>, margin: number, grid: SourceGrid): { z: number; n: number; x0: number; x1: number; y0: number; y1: number } | undefined {
  let z = Math.max(0, Math.floor(m.z - 1 + Math.log2(512 / grid.tileSize)));
  if (z < grid.minzoom) return undefined;
  z = Math.min(z, grid.maxzoom);
  const s = 2 ** (z - m.z);
  const mt = margin / TILE_SIZE;
  return {
    z,
    n: 2 ** z,
    x0: Math.ceil((m.area.x - mt) * s) - 1,
    x1: Math.floor((m.area.x + m.area.w + mt) * s),
    y0: Math.ceil((m.area.y - mt) * s) - 1,
    y1: Math.floor((m.area.y + m.area.h + mt) * s),
  };
}

/**
 * The source tiles MapLibre loads to draw metatile `m` (viewSourceRange): columns wrap around the
 * antimeridian, rows outside the world are dropped.
 */
export function viewSourceTiles(m: Pick<Metatile, 'z' | 'area'>, margin: number, grid: SourceGrid): TileId[] {
  const r = viewSourceRange(m, margin, grid);
  if (!r) return [];
  const { z, n } = r;
  const out: TileId[] = [];
  const seen = new Set<number>();
  for (let y = Math.max(0, r.y0); y <= Math.min(n - 1, r.y1); y++) {
    for (let xw = r.x0; xw <= r.x1; xw++) {
      const x = ((xw % n) + n) % n;
      if (seen.has(y * n + x)) continue;
      seen.add(y * n + x);
      out.push({ z, x, y });
    }
  }
  return out;
}

/** A source of a style with the tiles (`z/x/y`) whose bytes changed since the previous build. */
export interface ChangedSource {
  grid: SourceGrid;
  changed: ReadonlySet<string>;
}

/** The metatiles whose view (area plus margin) loads a changed tile of any of `sources`. */
export function metatilesToRerender(metas: readonly Metatile[], margin: number, sources: readonly ChangedSource[]): Metatile[] {
  const active = sources.filter((s) => s.changed.size > 0);
  if (active.length === 0) return [];
  return metas.filter((m) => active.some((s) => viewSourceTiles(m, margin, s.grid).some((t) => s.changed.has(`${t.z}/${t.x}/${t.y}`))));
}
