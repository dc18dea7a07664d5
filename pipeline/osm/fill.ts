/**
 * Canonical "fill" rings (what Planetiler calls fill polygons): a polygon ring that covers its whole
 * tile and buffer is replaced by one fixed rectangle, so that equal-looking tiles are byte-identical.
 *
 * tilemaker clips every polygon to its tile plus a buffer (1/200 of the tile, 20.48 units of 4096)
 * with coordinates rounded from latitudes: a tile of open sea, or one inside a forest, is a rectangle
 * whose edges lie 19 to 22 units outside the tile depending on where the tile is (over Belize at z12,
 * one of two byte strings by row). Keyed by bytes (render dedup, ETags) such tiles differ.
 *
 * A ring that covers the tile and its buffer (21 units of 4096, 1/200 rounded outward; reached within
 * tilemaker's rounding, 2 units) is replaced by the rectangle "tile plus 21 units on every side",
 * clockwise from its bottom-left corner. Where the ring stops exactly at the tile's edge on a side (the
 * extract box's seam), that side of the rectangle is the tile's edge too; a ring that goes past an edge
 * but not out to the buffer (an island in the buffer) is left alone, as is one whose holes reach
 * outside the rectangle (a hole must stay inside its ring). So the rectangle covers the tile and the
 * buffer's inner band exactly as the ring did: a style's `fill-translate` draws that band inside the
 * tile (osm-bright's water pattern is moved 2.5 px, 20 units at 512 px tiles).
 */
import { PbfReader } from 'pbf';
import { GEOM_COMMAND, GEOM_TYPE, partsGeometry, type RawFeature } from '../../lib/mvt.ts';
import type { BBox } from '../../lib/tile-math.ts';
import { clipSegment, pointInRing, signedArea2, type Point } from './coastline.ts';

/** tilemaker's buffer: 1/200 of the tile on every side (20.48 units of 4096); a fill rectangle reaches it, rounded outward (21). */
const BUFFER_DIVISOR = 200;
/** How far short of the buffer tilemaker's rounding leaves a clipped ring (measured over Belize: 19 to 22 units of 4096). */
const ROUNDING = 2;

const { MoveTo: MOVE_TO, LineTo: LINE_TO, ClosePath: CLOSE_PATH } = GEOM_COMMAND;

/** A ring in tile coordinates, its closing point not repeated. */
type Ring = Point[];

/** The rings of a polygon's command stream; undefined when it is not plain MoveTo/LineTo/ClosePath rings of 3+ points. */
export function decodeRings(geometry: Uint8Array): Ring[] | undefined {
  const p = new PbfReader(geometry);
  const rings: Ring[] = [];
  let x = 0;
  let y = 0;
  let ring: Ring | undefined;
  while (p.pos < p.length) {
    const c = p.readVarint();
    const id = c & 0x7;
    const n = c >> 3;
    if (id === CLOSE_PATH) {
      if (!ring || n !== 1 || ring.length < 3) return undefined;
      rings.push(ring);
      ring = undefined;
      continue;
    }
    if ((id === MOVE_TO && (n !== 1 || ring)) || (id === LINE_TO && !ring) || (id !== MOVE_TO && id !== LINE_TO)) return undefined;
    if (id === MOVE_TO) ring = [];
    for (let i = 0; i < n; i++) {
      x += p.readSVarint();
      y += p.readSVarint();
      ring!.push([x, y]);
    }
  }
  return ring ? undefined : rings;
}

/** The command stream of polygon rings. */
export const encodeRings = (rings: Ring[]): Uint8Array => partsGeometry(rings.map((r) => r.flat()), true);

/** True when segment p–q has a point strictly inside box `b`: the middle of its part in the closed box is. */
function crossesInterior(p: Point, q: Point, b: BBox): boolean {
  const t = clipSegment(p, q, b);
  if (!t) return false;
  const m = (t[0] + t[1]) / 2;
  const x = p[0] + (q[0] - p[0]) * m;
  const y = p[1] + (q[1] - p[1]) * m;
  return x > b[0] && x < b[2] && y > b[1] && y < b[3];
}

/** True when box `b` lies inside ring `r`: no edge passes through the box's interior and its centre is inside. */
function contains(r: Ring, b: BBox): boolean {
  for (let i = 0, j = r.length - 1; i < r.length; j = i++) if (crossesInterior(r[j], r[i], b)) return false;
  return pointInRing([(b[0] + b[2]) / 2, (b[1] + b[3]) / 2], r);
}

/**
 * The fill rectangle `[x0, y0, x1, y1]` for ring `r` in a tile of `extent` units, or undefined when
 * the ring does not cover the tile and its buffer. A side where the ring goes past the tile's edge
 * must be covered out to the buffer (less tilemaker's rounding) and is at the buffer; a side where the
 * ring stops exactly at the tile's edge (the extract box's seam) is at the tile's edge.
 */
export function fillBox(r: Ring, extent: number): BBox | undefined {
  let [x0, y0, x1, y1] = [Infinity, Infinity, -Infinity, -Infinity];
  for (const [x, y] of r) {
    x0 = Math.min(x0, x);
    y0 = Math.min(y0, y);
    x1 = Math.max(x1, x);
    y1 = Math.max(y1, y);
  }
  if (x0 > 0 || y0 > 0 || x1 < extent || y1 < extent) return undefined;
  const buffer = Math.ceil(extent / BUFFER_DIVISOR);
  const side = (out: boolean, edge: number, dir: number, d: number) => (out ? edge + dir * d : edge);
  const box = (d: number): BBox => [side(x0 < 0, 0, -1, d), side(y0 < 0, 0, -1, d), side(x1 > extent, extent, 1, d), side(y1 > extent, extent, 1, d)];
  return contains(r, box(buffer - ROUNDING)) ? box(buffer) : undefined;
}

/** The canonical ring of a box: clockwise on screen (an exterior), from the bottom-left corner as tilemaker mostly writes it. */
const boxRing = ([x0, y0, x1, y1]: BBox): Ring => [[x0, y1], [x0, y0], [x1, y0], [x1, y1]];

/**
 * The canonical ring of a tile whose clip box a polygon covers (the rectangle `fillBox` gives such a
 * ring), as a command stream: what tilemaker and this step write for it, made without either (cut.ts).
 */
export function fullTileGeometry(extent: number): Uint8Array {
  const b = Math.ceil(extent / BUFFER_DIVISOR);
  return encodeRings([boxRing([-b, -b, extent + b, extent + b])]);
}

const within = (r: Ring, [x0, y0, x1, y1]: BBox) => r.every(([x, y]) => x >= x0 && x <= x1 && y >= y0 && y <= y1);
const sameRing = (a: Ring, b: Ring) => a.length === b.length && a.every((p, i) => p[0] === b[i][0] && p[1] === b[i][1]);

/** Polygon `f` with every exterior ring that covers its tile replaced by its fill rectangle (the same object when none does). */
export function fillFeature(f: RawFeature, extent: number): RawFeature {
  if (f.type !== GEOM_TYPE.Polygon) return f;
  const rings = decodeRings(f.geometry);
  if (!rings) return f;
  let changed = false;
  for (const [i, r] of rings.entries()) {
    // Exteriors only (positive area in tile coordinates).
    if (r.length < 3 || signedArea2(r) <= 0) continue;
    const box = fillBox(r, extent);
    if (!box) continue;
    // Its holes: the rings after it with negative area. Each must stay inside the rectangle.
    let end = i + 1;
    while (end < rings.length && signedArea2(rings[end]) < 0) end++;
    if (!rings.slice(i + 1, end).every((h) => within(h, box))) continue;
    const canonical = boxRing(box);
    if (sameRing(r, canonical)) continue;
    rings[i] = canonical;
    changed = true;
  }
  return changed ? { ...f, geometry: encodeRings(rings) } : f;
}
