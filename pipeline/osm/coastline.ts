/**
 * Sea polygons from an extract's coastline. OSM has no sea polygons, only `natural=coastline` ways
 * with the land on their left; in an extract the coastline is cut at the extract's bounds, so the
 * rings do not close (osmcoastline joins the loose ends with a straight line, which is wrong for an
 * extract). Here the coastline is merged into chains, clipped to the extract's box, and each chain's
 * loose ends are joined along the box's edge, walking clockwise, which keeps the water on the right.
 * Closed rings inside the box are islands (counter-clockwise) or enclosed seas (clockwise).
 * Pure functions on lon/lat arrays: no I/O.
 */
import type { BBox } from '../../lib/tile-math.ts';
import { clipSegment } from '../../lib/segment-clip.ts';

/** `[lon, lat]`. */
export type Point = [number, number];
/** A closed ring: first point repeated at the end. */
export type Ring = Point[];
/** A water polygon: a clockwise outer ring and counter-clockwise holes (islands). */
export interface WaterPolygon {
  outer: Ring;
  holes: Ring[];
}

/** One coastline way: node ids and their locations (same length). */
export interface CoastWay {
  id: number;
  refs: number[];
  coords: Point[];
}

/** Coastline merged by shared end nodes. */
export interface CoastChains {
  /** Chains whose ends meet (first point === last point). */
  closed: Point[][];
  /** Chains with two loose ends (cut by the extract, or broken data). */
  open: Point[][];
}

/** Distance under which a point counts as lying on the box edge (degrees, ~1 mm). */
const ON_EDGE = 1e-8;

/**
 * Parse coastline ways from OPL: node lines (`n<id> … x<lon> y<lat>`, as `osmium tags-filter` writes
 * the nodes a way references) and way lines whose node list refers to them (or carries the locations
 * inline, as `osmium add-locations-to-ways` writes). Nodes without a location are dropped.
 */
export function parseCoastlineOpl(text: string): CoastWay[] {
  const lines = text.split('\n');
  const nodes = new Map<number, Point>();
  for (const line of lines) {
    if (!line.startsWith('n')) continue;
    const m = / x(-?[\d.]+) y(-?[\d.]+)/.exec(line);
    if (m) nodes.set(Number(line.slice(1, line.indexOf(' '))), [Number(m[1]), Number(m[2])]);
  }
  const ways: CoastWay[] = [];
  for (const line of lines) {
    if (!line.startsWith('w')) continue;
    const id = Number(line.slice(1, line.indexOf(' ')));
    const list = / N(\S*)/.exec(line)?.[1] ?? '';
    const refs: number[] = [];
    const coords: Point[] = [];
    for (const n of list.split(',')) {
      const m = /^n(-?\d+)(?:x(-?[\d.]+)y(-?[\d.]+))?$/.exec(n);
      if (!m) continue;
      const ref = Number(m[1]);
      const at: Point | undefined = m[2] !== undefined ? [Number(m[2]), Number(m[3])] : nodes.get(ref);
      if (!at) continue;
      refs.push(ref);
      coords.push(at);
    }
    if (coords.length >= 2) ways.push({ id, refs, coords });
  }
  return ways.sort((a, b) => a.id - b.id);
}

/** Merge ways end to start (same direction only: the coastline's direction carries its meaning). */
export function assembleChains(ways: CoastWay[]): CoastChains {
  interface Chain {
    refs: number[];
    coords: Point[];
  }
  const first = (c: Chain) => c.refs[0];
  const last = (c: Chain) => c.refs[c.refs.length - 1];
  const isClosed = (c: Chain) => c.refs.length > 1 && first(c) === last(c);
  const join = (a: Chain, b: Chain): Chain => ({ refs: [...a.refs, ...b.refs.slice(1)], coords: [...a.coords, ...b.coords.slice(1)] });
  const byStart = new Map<number, Chain>();
  const byEnd = new Map<number, Chain>();
  const live = new Set<Chain>();
  const take = (c: Chain) => {
    live.delete(c);
    if (byStart.get(first(c)) === c) byStart.delete(first(c));
    if (byEnd.get(last(c)) === c) byEnd.delete(last(c));
  };
  for (const w of ways) {
    let chain: Chain = { refs: w.refs, coords: w.coords };
    const after = isClosed(chain) ? undefined : byStart.get(last(chain));
    if (after && !isClosed(after)) {
      take(after);
      chain = join(chain, after);
    }
    const before = isClosed(chain) ? undefined : byEnd.get(first(chain));
    if (before && !isClosed(before)) {
      take(before);
      chain = join(before, chain);
    }
    live.add(chain);
    byStart.set(first(chain), chain);
    byEnd.set(last(chain), chain);
  }
  const closed: Point[][] = [];
  const open: Point[][] = [];
  for (const c of live) (isClosed(c) && c.refs.length >= 4 ? closed : open).push(c.coords);
  return { closed, open };
}

/** Twice the signed area (shoelace; positive = counter-clockwise with latitude up). */
export function signedArea2(ring: Point[]): number {
  let s = 0;
  for (let i = 0, n = ring.length; i < n; i++) {
    const [x1, y1] = ring[i];
    const [x2, y2] = ring[(i + 1) % n];
    s += x1 * y2 - x2 * y1;
  }
  return s;
}

/** Even-odd point-in-ring test. */
export function pointInRing(p: Point, ring: Point[]): boolean {
  let inside = false;
  for (let i = 0, j = ring.length - 1; i < ring.length; j = i++) {
    const [xi, yi] = ring[i];
    const [xj, yj] = ring[j];
    if (yi > p[1] !== yj > p[1] && p[0] < ((xj - xi) * (p[1] - yi)) / (yj - yi) + xi) inside = !inside;
  }
  return inside;
}

function inside(p: Point, b: BBox): boolean {
  return p[0] >= b[0] && p[0] <= b[2] && p[1] >= b[1] && p[1] <= b[3];
}

export { clipSegment };

const lerp = (p: Point, q: Point, t: number): Point => [p[0] + (q[0] - p[0]) * t, p[1] + (q[1] - p[1]) * t];
const same = (a: Point, b: Point) => a[0] === b[0] && a[1] === b[1];

/** The parts of a polyline inside the box, in order (each has at least two distinct points). */
export function clipPolyline(line: Point[], b: BBox): Point[][] {
  const parts: Point[][] = [];
  let cur: Point[] | undefined;
  for (let i = 0; i + 1 < line.length; i++) {
    const p = line[i];
    const q = line[i + 1];
    const c = clipSegment(p, q, b);
    if (!c) {
      if (cur) parts.push(cur);
      cur = undefined;
      continue;
    }
    const a = c[0] === 0 ? p : lerp(p, q, c[0]);
    const z = c[1] === 1 ? q : lerp(p, q, c[1]);
    if (!cur) cur = [a];
    else if (!same(cur[cur.length - 1], a)) {
      parts.push(cur);
      cur = [a];
    }
    if (!same(cur[cur.length - 1], z)) cur.push(z);
    if (c[1] < 1) {
      parts.push(cur);
      cur = undefined;
    }
  }
  if (cur) parts.push(cur);
  return parts.filter((p) => p.length >= 2);
}

/** True when the point lies on the box's edge. */
function onEdge(p: Point, b: BBox): boolean {
  return Math.abs(p[0] - b[0]) < ON_EDGE || Math.abs(p[0] - b[2]) < ON_EDGE || Math.abs(p[1] - b[1]) < ON_EDGE || Math.abs(p[1] - b[3]) < ON_EDGE;
}

/** How far back along a chain its heading at a loose end is measured (degrees, ~100 m). */
const HEADING_SPAN = 0.001;

/**
 * Where a chain ending inside the box (at `line[line.length - 1]`) would meet the edge if it went on
 * in its heading over the last ~100 m: data cut by an extract's polygon rather than its bbox
 * continues roughly that way. Falls back to the nearest edge point when the heading is undefined.
 */
function continueToEdge(line: Point[], b: BBox): Point {
  const end = line[line.length - 1];
  let k = line.length - 2;
  while (k > 0 && Math.hypot(end[0] - line[k][0], end[1] - line[k][1]) < HEADING_SPAN) k--;
  const dx = end[0] - line[Math.max(k, 0)][0];
  const dy = end[1] - line[Math.max(k, 0)][1];
  let t = Infinity;
  if (dx > 0) t = Math.min(t, (b[2] - end[0]) / dx);
  if (dx < 0) t = Math.min(t, (b[0] - end[0]) / dx);
  if (dy > 0) t = Math.min(t, (b[3] - end[1]) / dy);
  if (dy < 0) t = Math.min(t, (b[1] - end[1]) / dy);
  if (Number.isFinite(t)) return [Math.min(b[2], Math.max(b[0], end[0] + dx * t)), Math.min(b[3], Math.max(b[1], end[1] + dy * t))];
  const d = [end[0] - b[0], b[2] - end[0], end[1] - b[1], b[3] - end[1]];
  const i = d.indexOf(Math.min(...d));
  return i === 0 ? [b[0], end[1]] : i === 1 ? [b[2], end[1]] : i === 2 ? [end[0], b[1]] : [end[0], b[3]];
}

/** Position of an edge point along the box's perimeter, clockwise from the north-west corner. */
function perimeterPosition(p: Point, b: BBox): number {
  const w = b[2] - b[0];
  const h = b[3] - b[1];
  const d = [Math.abs(p[1] - b[3]), Math.abs(p[0] - b[2]), Math.abs(p[1] - b[1]), Math.abs(p[0] - b[0])];
  const k = d.indexOf(Math.min(...d));
  if (k === 0) return p[0] - b[0];
  if (k === 1) return w + (b[3] - p[1]);
  if (k === 2) return w + h + (b[2] - p[0]);
  return 2 * w + h + (p[1] - b[1]);
}

/** The box's corners clockwise from north-west, with their perimeter positions. */
function corners(b: BBox): { at: number; p: Point }[] {
  const w = b[2] - b[0];
  const h = b[3] - b[1];
  return [
    { at: 0, p: [b[0], b[3]] },
    { at: w, p: [b[2], b[3]] },
    { at: w + h, p: [b[2], b[1]] },
    { at: 2 * w + h, p: [b[0], b[1]] },
  ];
}

/** Rotate a closed ring so it starts (and ends) at a vertex outside the box; undefined when none is. */
function startOutside(ring: Point[], b: BBox): Point[] | undefined {
  const k = ring.findIndex((p) => !inside(p, b));
  if (k < 0) return undefined;
  const body = ring.slice(0, -1);
  const rotated = [...body.slice(k), ...body.slice(0, k)];
  return [...rotated, rotated[0]];
}

/**
 * Water polygons over `box` from the coastline chains. A chain that ends inside the box (the extract
 * was cut along a polygon, or the data is broken) goes on in its heading to the box's edge.
 */
export function waterPolygons(chains: CoastChains, box: BBox): WaterPolygon[] {
  const pieces: Point[][] = [];
  const islands: Ring[] = [];
  const enclosed: Ring[] = [];
  const lines = [...chains.open];
  for (const ring of chains.closed) {
    if (ring.every((p) => inside(p, box))) {
      (signedArea2(ring) > 0 ? islands : enclosed).push(ring);
    } else {
      const r = startOutside(ring, box);
      if (r) lines.push(r);
    }
  }
  for (const line of lines) {
    const parts = clipPolyline(line, box);
    // Only a chain's own ends can lie inside the box; their heading comes from the whole chain.
    if (parts.length > 0 && !onEdge(parts[0][0], box)) parts[0].unshift(continueToEdge([...line].reverse(), box));
    const tail = parts[parts.length - 1];
    if (tail && !onEdge(tail[tail.length - 1], box)) tail.push(continueToEdge(line, box));
    pieces.push(...parts);
  }
  const outers: Ring[] = [...enclosed];
  if (pieces.length > 0) outers.push(...closeAlongEdge(pieces, box));
  else if (islands.length > 0) {
    // Islands and no coastline crossing the box: the box is sea around them.
    const [w, s, e, n] = box;
    outers.push([[w, n], [e, n], [e, s], [w, s], [w, n]]);
  }
  const polygons: WaterPolygon[] = outers.map((o) => ({ outer: o, holes: [] }));
  for (const island of islands) {
    let best: WaterPolygon | undefined;
    let bestArea = Infinity;
    for (const poly of polygons) {
      const area = Math.abs(signedArea2(poly.outer));
      if (area < bestArea && pointInRing(island[0], poly.outer)) {
        best = poly;
        bestArea = area;
      }
    }
    best?.holes.push(island);
  }
  return polygons;
}

/** Join edge-to-edge pieces into clockwise rings by walking the box's edge clockwise from each exit. */
function closeAlongEdge(pieces: Point[][], b: BBox): Ring[] {
  const perimeter = 2 * (b[2] - b[0] + (b[3] - b[1]));
  const entry = pieces.map((p) => perimeterPosition(p[0], b));
  const exit = pieces.map((p) => perimeterPosition(p[p.length - 1], b));
  const cornerList = corners(b);
  const used = new Array<boolean>(pieces.length).fill(false);
  const rings: Ring[] = [];
  for (let first = 0; first < pieces.length; first++) {
    if (used[first]) continue;
    const ring: Point[] = [];
    let cur = first;
    for (;;) {
      used[cur] = true;
      ring.push(...pieces[cur]);
      // The next piece is the one whose entry comes first clockwise after this exit.
      const from = exit[cur];
      let next = -1;
      let bestGap = Infinity;
      for (let j = 0; j < pieces.length; j++) {
        if (used[j] && j !== first) continue;
        let gap = (entry[j] - from + perimeter) % perimeter;
        if (j === cur && gap === 0) gap = perimeter;
        if (gap < bestGap) {
          bestGap = gap;
          next = j;
        }
      }
      // The corners passed on the way there, in walking order.
      const passed = cornerList
        .map((c) => ({ gap: (c.at - from + perimeter) % perimeter, p: c.p }))
        .filter((c) => c.gap > 0 && c.gap < bestGap)
        .sort((x, y) => x.gap - y.gap);
      for (const c of passed) ring.push(c.p);
      if (next === first || next < 0) break;
      cur = next;
    }
    rings.push(closeRing(ring));
  }
  return rings;
}

function closeRing(ring: Point[]): Ring {
  return same(ring[0], ring[ring.length - 1]) ? ring : [...ring, ring[0]];
}
