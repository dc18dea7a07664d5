/**
 * Polygons cut into tiles, so that what tilemaker does for them grows with their edges, not with the
 * area they cover. tilemaker 2.2 indexes a shapefile polygon on every tile of its bounding box and, for
 * each of those tiles, clips the whole polygon: a sea of 10⁵ vertices over 10⁵ tiles is 10¹⁰ steps
 * (a coastal extract's build ran for hours). Here each polygon is cut down a quadtree of tiles with GEOS
 * (gdal-async), every tile from its parent's piece:
 *
 * - a tile whose clip box (the tile and tilemaker's buffer, 1/200 of the tile on every side) the
 *   polygon covers is a **fill**: its feature is the canonical fill rectangle (fill.ts), the ring tilemaker
 *   and the canonical step would write for it, made without either; nothing under it is cut again;
 * - a tile the polygon's edge crosses gets its **piece**, the polygon clipped to its clip box, tagged
 *   `_tile` = `z/x/y`; tilemaker turns each piece into its tile, and the slivers of a piece that reach
 *   into a neighbour's buffer (tilemaker indexes a shape on every tile its box touches) are dropped by
 *   that tag (`ownFeatures`);
 * - a tile the polygon does not reach gets nothing.
 *
 * The work is GEOS intersections on the edge tiles only (each a small piece by then) and a counter for
 * the filled ones: the open sea of a coastal region is one fill tile, stored once by the PMTiles writer.
 */
import { tileBounds, worldToLonLat, type BBox } from '../../lib/tile-math.ts';
import { loadGdal } from '../../lib/gdal.ts';
import { boxPolygon, ofKind, type Geometry, type Shape, type ShapeAttributes } from './shapes.ts';

/** tilemaker's buffer around a tile: 1/200 of its width (and height, in Mercator). */
const BUFFER_DIVISOR = 200;
/** A piece counts as covering its clip box when its area falls short of it by less than this share (GEOS rounding). */
const COVER_TOLERANCE = 1e-12;
/** Intersections run at once (gdal-async's Async calls use libuv's pool). */
const PARALLEL = 8;
/** The hidden attribute naming the tile a piece was cut for. */
export const TILE_TAG = '_tile';

/** tilemaker's clip box of tile z/x/y in lon/lat: the tile grown by 1/200 of its size (latitudes in Mercator). */
export function clipBox(z: number, x: number, y: number): BBox {
  const [w, , e] = tileBounds(z, x, y);
  const dx = (e - w) / BUFFER_DIVISOR;
  // The tile's rows in Web Mercator world coordinates (0 … 1 from the north), grown by the buffer.
  const d = 1 / (2 ** z * BUFFER_DIVISOR);
  const north = worldToLonLat(0, y / 2 ** z - d).lat;
  const south = worldToLonLat(0, (y + 1) / 2 ** z + d).lat;
  return [w - dx, south, e + dx, north];
}

/** One polygon feature to cut: its geometry and the attributes its pieces and fills carry. */
export interface CutFeature {
  geometry: Geometry;
  attributes: ShapeAttributes;
  /**
   * Features of one group (parts of one polygon stored cut into cells, e.g. Natural Earth's ocean) are
   * one feature in a tile: their pieces there are joined (default: each feature is its own group).
   */
  group?: string;
}

/** The tiles of one zoom: the fills (tile → attributes of each feature filling it) and the pieces. */
export interface CutZoom {
  fills: Map<number, ShapeAttributes[]>;
  pieces: Shape[];
}

/** What to cut. */
export interface CutJob {
  features: CutFeature[];
  /** Zooms written; the quadtree starts at z0 in any case (each tile's piece comes from its parent's). */
  minzoom: number;
  maxzoom: number;
  /** The area of zoom z: pieces are clipped to it, and only a tile whose clip box lies inside it can be a fill. Shrinks (or stays) as z grows. */
  area: (z: number) => BBox;
  /** Only these tiles (`z/x/y`) and their ancestors are cut, only these are written (default: all). */
  only?: ReadonlySet<string>;
  /** Only tiles for which this holds are cut and written (it must hold for a tile's parent when it holds for the tile). */
  keep?: (z: number, x: number, y: number) => boolean;
}

/** The tile index of x/y at zoom z in the maps of `CutZoom`. */
export const tileIndex = (z: number, x: number, y: number) => y * 2 ** z + x;
/** `z/x/y` of a tile index at zoom z. */
export const tileOfIndex = (z: number, i: number): [number, number, number] => [z, i % 2 ** z, Math.floor(i / 2 ** z)];

/** A feature's state in one tile: it covers the tile's clip box, or it has a piece there. */
type State = { full: true } | { full: false; piece: Geometry; env: BBox };

interface Node {
  x: number;
  y: number;
  /** Per feature (index into job.features). */
  states: Map<number, State>;
}

const intersects = (a: BBox, b: BBox) => a[0] < b[2] && b[0] < a[2] && a[1] < b[3] && b[1] < a[3];
const within = (a: BBox, b: BBox) => a[0] >= b[0] && a[1] >= b[1] && a[2] <= b[2] && a[3] <= b[3];
const meet = (a: BBox, b: BBox): BBox => [Math.max(a[0], b[0]), Math.max(a[1], b[1]), Math.min(a[2], b[2]), Math.min(a[3], b[3])];
const area = (b: BBox) => (b[2] - b[0]) * (b[3] - b[1]);
/** The area of a (multi)polygon (the type lacks the method its polygon kinds have). */
const areaOf = (g: Geometry) => (g as unknown as { getArea(): number }).getArea();
const envelopeOf = (g: Geometry): BBox => {
  const e = g.getEnvelope();
  return [e.minX, e.minY, e.maxX, e.maxY];
};

/** Run `f` over `items`, `PARALLEL` at a time. */
async function pooled<T>(items: T[], f: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(PARALLEL, items.length) }, async () => {
    while (next < items.length) await f(items[next++]);
  }));
}

/** The state of a feature in child tile z/x/y, from its state in the parent; undefined where it does not reach. */
async function childState(parent: State, z: number, x: number, y: number, zoneOf: (z: number) => BBox): Promise<State | undefined> {
  const clip = clipBox(z, x, y);
  const zone = meet(clip, zoneOf(z));
  if (!(zone[0] < zone[2] && zone[1] < zone[3])) return undefined;
  const whole = within(clip, zoneOf(z));
  if (parent.full) return whole ? { full: true } : { full: false, piece: await boxPolygon(zone), env: zone };
  if (!intersects(parent.env, zone)) return undefined;
  // A piece inside the zone already is its own piece here (it cannot cover the whole clip box).
  if (within(parent.env, zone) && !(whole && within(clip, parent.env))) return parent;
  let cut: Geometry;
  try {
    cut = await parent.piece.intersectionAsync(await boxPolygon(zone));
  } catch {
    cut = await (await parent.piece.makeValidAsync()).intersectionAsync(await boxPolygon(zone));
  }
  const piece = await ofKind(cut, 'polygon');
  if (!piece) return undefined;
  if (whole && areaOf(piece) >= area(clip) * (1 - COVER_TOLERANCE)) return { full: true };
  return { full: false, piece, env: envelopeOf(piece) };
}

/**
 * One state per group in node `n` of zoom z: the pieces of a group's features joined (GEOS union), a
 * fill when one of them, or their union, covers the tile's clip box. Kept under the group's first feature.
 */
async function joinGroups(n: Node, z: number, groupOf: string[]): Promise<void> {
  const byGroup = new Map<string, number[]>();
  for (const i of [...n.states.keys()].sort((a, b) => a - b)) {
    const list = byGroup.get(groupOf[i]);
    if (list) list.push(i);
    else byGroup.set(groupOf[i], [i]);
  }
  for (const members of byGroup.values()) {
    if (members.length < 2) continue;
    const states = members.map((i) => n.states.get(i)!);
    for (const i of members.slice(1)) n.states.delete(i);
    if (states.some((s) => s.full)) {
      n.states.set(members[0], { full: true });
      continue;
    }
    let joined = (states[0] as Extract<State, { full: false }>).piece;
    for (const s of states.slice(1)) joined = await joined.unionAsync((s as Extract<State, { full: false }>).piece);
    const piece = (await ofKind(joined, 'polygon'))!;
    const clip = clipBox(z, n.x, n.y);
    const env = envelopeOf(piece);
    n.states.set(members[0], within(clip, env) && areaOf(piece) >= area(clip) * (1 - COVER_TOLERANCE) ? { full: true } : { full: false, piece, env });
  }
}

/**
 * Cut the features down the tiles (see the module comment); resolves with the fills and pieces of each
 * zoom from `minzoom` to `maxzoom`, tiles and features in a fixed order (the same input gives the same
 * pieces, whichever tiles are `wanted`).
 */
export async function cutPolygons(job: CutJob): Promise<Map<number, CutZoom>> {
  await loadGdal();
  const out = new Map<number, CutZoom>();
  const { only } = job;
  const wanted = (z: number, x: number, y: number) => !only || only.has(`${z}/${x}/${y}`);
  // A tile is cut when it, or a tile under it, is wanted.
  let ancestors: Set<string> | undefined;
  if (only) {
    ancestors = new Set();
    for (const key of only) {
      let [z, x, y] = key.split('/').map(Number);
      for (; z >= 0 && !ancestors.has(`${z}/${x}/${y}`); z--, x >>= 1, y >>= 1) ancestors.add(`${z}/${x}/${y}`);
    }
  }
  const needed = (z: number, x: number, y: number) => (!ancestors || ancestors.has(`${z}/${x}/${y}`)) && (!job.keep || job.keep(z, x, y));
  // The root: each feature clipped to the world tile's clip box and the area of zoom 0.
  let level: Node[] = [{ x: 0, y: 0, states: new Map() }];
  const rootStates: (State | undefined)[] = new Array(job.features.length);
  await pooled(job.features.map((f, i) => ({ f, i })), async ({ f, i }) => {
    const g = await ofKind(f.geometry, 'polygon');
    rootStates[i] = g && (await childState({ full: false, piece: g, env: envelopeOf(g) }, 0, 0, 0, job.area));
  });
  rootStates.forEach((s, i) => s && level[0].states.set(i, s));
  const groupOf = job.features.map((f, i) => f.group ?? `#${i}`);
  for (let z = 0; z <= job.maxzoom; z++) {
    if (z >= job.minzoom) {
      const zoom: CutZoom = { fills: new Map(), pieces: [] };
      await pooled(level, (n) => joinGroups(n, z, groupOf));
      for (const n of level) {
        if (!wanted(z, n.x, n.y)) continue;
        const key = `${z}/${n.x}/${n.y}`;
        for (const [i, s] of [...n.states].sort(([a], [b]) => a - b)) {
          const attributes = job.features[i].attributes;
          if (s.full) {
            const idx = tileIndex(z, n.x, n.y);
            const list = zoom.fills.get(idx);
            if (list) list.push(attributes);
            else zoom.fills.set(idx, [attributes]);
          } else zoom.pieces.push({ geometry: s.piece, attributes: { ...attributes, [TILE_TAG]: key } });
        }
      }
      out.set(z, zoom);
    }
    if (z === job.maxzoom) break;
    const next: Node[] = [];
    const work: { node: Node; i: number; s: State }[] = [];
    for (const n of level) {
      for (let dy = 0; dy < 2; dy++) {
        for (let dx = 0; dx < 2; dx++) {
          const [cx, cy] = [2 * n.x + dx, 2 * n.y + dy];
          if (!needed(z + 1, cx, cy)) continue;
          const node: Node = { x: cx, y: cy, states: new Map() };
          next.push(node);
          for (const [i, s] of n.states) work.push({ node, i, s });
        }
      }
    }
    await pooled(work, async ({ node, i, s }) => {
      const c = await childState(s, z + 1, node.x, node.y, job.area);
      if (c) node.states.set(i, c);
    });
    level = next.filter((n) => n.states.size > 0);
  }
  return out;
}
