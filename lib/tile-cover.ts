/**
 * The tiles of an area (a box or polygons, in degrees), every zoom of a range, as sorted ranges of
 * PMTiles tile ids. Geometry in Web Mercator world coordinates (0 … 1 from the north-west corner,
 * where tiles are squares): a tile belongs to the area when its interior meets the area's interior.
 * A box (no polygons) takes at each zoom exactly the tiles tile-math's `tileRangeForBBox` gives (its
 * tolerance for an edge on a tile edge, so a tile's own bounds do not pull in its neighbours). The walk starts at zoom 0 and descends only into tiles
 * the area's outline crosses; a tile wholly inside adds all its descendants at once, which are one
 * range of tile ids at each deeper zoom (the Hilbert curve fills each tile's quarter before the next).
 */
import { zxyToTileId } from 'pmtiles';
import { clipSegment } from './segment-clip.ts';
import { lonLatToWorld, tileRangeForBBox, type BBox, type TileRange } from './tile-math.ts';

/** A polygon: its outer ring, then its holes; each ring `[lon, lat]` points (closed or not). */
export type PolygonRings = readonly (readonly (readonly [number, number])[])[];

/** An area: a box, optionally narrowed to polygons (whose union is the area; `bbox` is their extent). */
export interface Area {
  bbox: BBox;
  polygons?: readonly PolygonRings[];
}

/** Sorted, disjoint, non-touching ranges `[start, end)` of tile ids. */
export interface TileIdRanges {
  starts: Float64Array;
  ends: Float64Array;
  /** Number of tile ids in all ranges. */
  tiles: number;
}

/** A segment in world coordinates. */
type Edge = [number, number, number, number];

/** First tile id of zoom `z` (ids count the tiles of lower zooms first). */
function zoomBase(z: number): number {
  return (4 ** z - 1) / 3;
}

/** True when the segment meets the open rectangle's interior (a segment along its border does not). */
function edgeCrossesInterior(e: Edge, x0: number, y0: number, x1: number, y1: number): boolean {
  // Clipped to the closed rectangle, the clipped part's midpoint tested against the open one: a
  // segment within a convex set touches the border with its inside only when it lies along the border.
  const [ax, ay, bx, by] = e;
  const c = clipSegment([ax, ay], [bx, by], [x0, y0, x1, y1]);
  if (!c) return false;
  const [t0, t1] = c;
  const dx = bx - ax;
  const dy = by - ay;
  const t = (t0 + t1) / 2;
  const mx = ax + t * dx;
  const my = ay + t * dy;
  return mx > x0 && mx < x1 && my > y0 && my < y1;
}

/** Even-odd test of point (x, y) against rings (the polygon's outer ring and holes). */
function insideRings(rings: readonly Edge[], x: number, y: number): boolean {
  let inside = false;
  for (const [ax, ay, bx, by] of rings) {
    if (ay > y !== by > y && x < ((bx - ax) * (y - ay)) / (by - ay) + ax) inside = !inside;
  }
  return inside;
}

/** The area in world coordinates: its polygons' edges (each polygon's rings together). */
function worldPolygons(polygons: readonly PolygonRings[]): Edge[][] {
  return polygons.map((polygon) => {
    const edges: Edge[] = [];
    for (const ring of polygon) {
      const pts = ring.map(([lon, lat]) => lonLatToWorld(lon, lat));
      for (let i = 0; i < pts.length; i++) {
        const a = pts[i];
        const b = pts[(i + 1) % pts.length];
        if (a.x !== b.x || a.y !== b.y) edges.push([a.x, a.y, b.x, b.y]);
      }
    }
    return edges;
  });
}

/**
 * Tile ids of every tile of zooms `minzoom … maxzoom` that meets `area`, as sorted ranges. Zooms
 * above 26 or below 0 are the caller's bug (RangeError).
 */
export function coverArea(area: Area, minzoom: number, maxzoom: number): TileIdRanges {
  if (!(Number.isInteger(minzoom) && Number.isInteger(maxzoom) && minzoom >= 0 && minzoom <= maxzoom && maxzoom <= 26)) {
    throw new RangeError(`coverArea: zooms ${minzoom}–${maxzoom} must be whole numbers with 0 ≤ min ≤ max ≤ 26`);
  }
  // A box: a tile whose descendants are within the box's tiles at every zoom to come is wholly inside;
  // one in the box's tiles is added and its children visited while a deeper zoom's tiles meet it.
  const visitBox = (z: number, x: number, y: number, rects: TileRange[]) => {
    let all = true;
    let meets = false;
    for (let zz = z; zz <= maxzoom; zz++) {
      const k = 2 ** (zz - z);
      const r = rects[zz];
      const inside = x * k >= r.minX && (x + 1) * k - 1 <= r.maxX && y * k >= r.minY && (y + 1) * k - 1 <= r.maxY;
      const meetsAt = x * k <= r.maxX && (x + 1) * k - 1 >= r.minX && y * k <= r.maxY && (y + 1) * k - 1 >= r.minY;
      if (zz >= minzoom && !inside) all = false;
      if (zz > z && meetsAt) meets = true;
    }
    if (all) return addInside(z, x, y);
    const r = rects[z];
    if (z >= minzoom && x >= r.minX && x <= r.maxX && y >= r.minY && y <= r.maxY) {
      const id = zxyToTileId(z, x, y);
      ranges.push([id, id + 1]);
    }
    if (!meets) return;
    for (const [qx, qy] of [[2 * x, 2 * y], [2 * x + 1, 2 * y], [2 * x, 2 * y + 1], [2 * x + 1, 2 * y + 1]]) visitBox(z + 1, qx, qy, rects);
  };
  const ranges: [number, number][] = [];
  const addInside = (z: number, x: number, y: number) => {
    const d = zxyToTileId(z, x, y) - zoomBase(z);
    for (let zz = Math.max(z, minzoom); zz <= maxzoom; zz++) {
      const k = 4 ** (zz - z);
      ranges.push([zoomBase(zz) + d * k, zoomBase(zz) + (d + 1) * k]);
    }
  };
  // Per polygon: the edges crossing the tile. A tile no edge crosses is wholly inside a polygon or wholly
  // outside all of them, which its centre tells (no edge passes through it, or that edge would cross).
  // Tested against all the polygon's edges: a parity carried from the parent's centre goes wrong when
  // that centre lies on the outline (a box's corner at 0°, 0°).
  const visit = (z: number, x: number, y: number, crossing: Edge[][], polygons: Edge[][]) => {
    const crossed = crossing.some((c) => c.length > 0);
    if (!crossed) {
      const [cx, cy] = [(x + 0.5) / 2 ** z, (y + 0.5) / 2 ** z];
      if (polygons.some((edges) => insideRings(edges, cx, cy))) addInside(z, x, y);
      return;
    }
    if (z >= minzoom) {
      const id = zxyToTileId(z, x, y);
      ranges.push([id, id + 1]);
    }
    if (z === maxzoom) return;
    const n = 2 ** (z + 1);
    for (const [qx, qy] of [[2 * x, 2 * y], [2 * x + 1, 2 * y], [2 * x, 2 * y + 1], [2 * x + 1, 2 * y + 1]]) {
      const x0 = qx / n, x1 = (qx + 1) / n, y0 = qy / n, y1 = (qy + 1) / n;
      visit(z + 1, qx, qy, crossing.map((c) => c.filter((e) => edgeCrossesInterior(e, x0, y0, x1, y1))), polygons);
    }
  };
  if (area.polygons?.length) {
    const polygons = worldPolygons(area.polygons);
    visit(0, 0, 0, polygons.map((edges) => edges.filter((e) => edgeCrossesInterior(e, 0, 0, 1, 1))), polygons);
  } else {
    visitBox(0, 0, 0, Array.from({ length: maxzoom + 1 }, (_, z) => tileRangeForBBox(area.bbox, z)));
  }
  ranges.sort((a, b) => a[0] - b[0]);
  const starts: number[] = [];
  const ends: number[] = [];
  let tiles = 0;
  for (const [s, e] of ranges) {
    const last = ends.length - 1;
    if (last >= 0 && s <= ends[last]) {
      if (e > ends[last]) {
        tiles += e - ends[last];
        ends[last] = e;
      }
      continue;
    }
    starts.push(s);
    ends.push(e);
    tiles += e - s;
  }
  return { starts: Float64Array.from(starts), ends: Float64Array.from(ends), tiles };
}

/** True when tile ids `[start, end)` meet one of the ranges. */
export function rangesMeet(r: TileIdRanges, start: number, end: number): boolean {
  // The first range ending after `start`.
  let lo = 0;
  let hi = r.ends.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (r.ends[mid] <= start) lo = mid + 1;
    else hi = mid;
  }
  return lo < r.starts.length && r.starts[lo] < end;
}

/**
 * The parts of the run `[start, start + length)` inside the ranges, as `[start, length]` pairs in order;
 * `from` is a hint (index of a range at or before the first one that can meet the run), returned
 * updated for a walk in tile-id order.
 */
export function clipRun(r: TileIdRanges, start: number, length: number, from = 0): { parts: [number, number][]; next: number } {
  const end = start + length;
  let i = from;
  while (i < r.ends.length && r.ends[i] <= start) i++;
  const parts: [number, number][] = [];
  let j = i;
  for (; j < r.starts.length && r.starts[j] < end; j++) {
    const s = Math.max(start, r.starts[j]);
    const e = Math.min(end, r.ends[j]);
    if (e > s) parts.push([s, e - s]);
    if (r.ends[j] > end) break;
  }
  return { parts, next: i };
}
