import { tileCountInBBox } from '../../lib/tile-math.ts';
import { metatileKey, TILE_SIZE, type Metatile, type TileId } from '../../lib/metatiles.ts';

/** Number of tiles of bbox over zooms minzoom..maxzoom. */
export const countTiles = tileCountInBBox;

/**
 * The order to render metatiles in: highest zoom first (the big, slow metatiles), each zoom in
 * enumeration order (neighbours share vector tiles in the page's cache). The cheap low-zoom renders
 * come last and keep every browser busy to the end. The tiles do not depend on the order.
 */
export function renderOrder(metas: Metatile[]): Metatile[] {
  return metas.map((m, i) => ({ m, i })).sort((a, b) => b.m.z - a.m.z || a.i - b.i).map((e) => e.m);
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
