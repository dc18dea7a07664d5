/**
 * Canonical "fill" rings (what Planetiler calls fill polygons): a polygon ring that covers its whole
 * tile and the margin around it is replaced by one fixed rectangle, so that equal-looking tiles are
 * byte-identical.
 *
 * tilemaker clips every polygon to its tile plus a buffer (1/200 of the tile, 20.48 units of 4096)
 * with coordinates rounded from latitudes and longitudes: a tile of open sea, or one inside a forest,
 * is a rectangle whose edges lie 19 to 22 units outside the tile depending on where the tile is (over
 * Belize at z12, one of two byte strings by row). Renderers clip a tile's fills to the tile, so those
 * variants draw the same pixels; keyed by bytes (render dedup, ETags) they differ.
 *
 * A ring that contains the rectangle "tile plus `FILL_MARGIN` on every side" is replaced by exactly
 * that rectangle. Where the ring stops at the tile's edge on a side (the extract box's seam, the edge
 * of the world), that side of the rectangle is the tile's edge instead. The rectangle lies inside the
 * ring and covers the tile, so nothing inside the tile changes; only the ring's part further out than
 * the margin, which no renderer draws, is dropped. Holes of the ring stay as they are (a ring whose
 * holes reach outside the rectangle is left alone: a hole must stay inside its ring).
 */
import { PbfReader, PbfWriter } from 'pbf';
import type { RawFeature } from '../../lib/mvt.ts';
import type { BBox } from '../../lib/tile-math.ts';
import { clipSegment, pointInRing, signedArea2, type Point } from './coastline.ts';

/** Units outside the tile a fill rectangle reaches: 1/256 of the extent (16 of 4096, one pixel of a 256 px tile), inside tilemaker's rounded buffer. */
export const FILL_MARGIN_DIVISOR = 256;

const POLYGON = 3;
const MOVE_TO = 1;
const LINE_TO = 2;
const CLOSE_PATH = 7;

/** A ring in tile coordinates, its closing point not repeated. */
type Ring = Point[];

/** The rings of a polygon's command stream; undefined when it is not plain MoveTo/LineTo/ClosePath rings. */
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
      if (!ring || n !== 1) return undefined;
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
export function encodeRings(rings: Ring[]): Uint8Array {
  const pbf = new PbfWriter();
  let px = 0;
  let py = 0;
  const point = ([x, y]: Point) => {
    pbf.writeSVarint(x - px);
    pbf.writeSVarint(y - py);
    px = x;
    py = y;
  };
  for (const r of rings) {
    pbf.writeVarint((1 << 3) | MOVE_TO);
    point(r[0]);
    pbf.writeVarint(((r.length - 1) << 3) | LINE_TO);
    for (const q of r.slice(1)) point(q);
    pbf.writeVarint((1 << 3) | CLOSE_PATH);
  }
  return pbf.finish();
}

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
 * The fill rectangle `[x0, y0, x1, y1]` for ring `r` in a tile of `extent` units: each side at the
 * margin when the ring reaches that far on it, else at the tile's edge (the largest such box the ring
 * contains); undefined when the ring does not contain the tile.
 */
export function fillBox(r: Ring, extent: number): BBox | undefined {
  const m = Math.floor(extent / FILL_MARGIN_DIVISOR);
  let best: BBox | undefined;
  let bestArea = -1;
  // Bits: left, top, right, bottom side out at the margin. Ties keep the first (a fixed order).
  for (let sides = 15; sides >= 0; sides--) {
    const b: BBox = [sides & 1 ? -m : 0, sides & 2 ? -m : 0, sides & 4 ? extent + m : extent, sides & 8 ? extent + m : extent];
    const a = (b[2] - b[0]) * (b[3] - b[1]);
    if (a > bestArea && contains(r, b)) {
      best = b;
      bestArea = a;
    }
  }
  return best;
}

/** The canonical ring of a box: clockwise on screen (an exterior), from the bottom-left corner as tilemaker mostly writes it. */
const boxRing = ([x0, y0, x1, y1]: BBox): Ring => [[x0, y1], [x0, y0], [x1, y0], [x1, y1]];

const within = (r: Ring, [x0, y0, x1, y1]: BBox) => r.every(([x, y]) => x >= x0 && x <= x1 && y >= y0 && y <= y1);
const sameRing = (a: Ring, b: Ring) => a.length === b.length && a.every((p, i) => p[0] === b[i][0] && p[1] === b[i][1]);

/** Polygon `f` with every exterior ring that covers its tile replaced by its fill rectangle (the same object when none does). */
export function fillFeature(f: RawFeature, extent: number): RawFeature {
  if (f.type !== POLYGON) return f;
  const rings = decodeRings(f.geometry);
  if (!rings) return f;
  let changed = false;
  for (const [i, r] of rings.entries()) {
    // Exteriors only (positive area in tile coordinates), and first the cheap test: bounds reaching every edge.
    if (r.length < 3 || signedArea2(r) <= 0) continue;
    if (!r.some(([x]) => x <= 0) || !r.some(([, y]) => y <= 0) || !r.some(([x]) => x >= extent) || !r.some(([, y]) => y >= extent)) continue;
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
