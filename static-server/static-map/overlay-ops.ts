/**
 * Overlays as drawing operations for the native rasteriser (lib/native/src/raster.c) instead of an SVG
 * for librsvg: paths (stroke with round joins and caps, nonzero fill when closed) and pins without a
 * label, the same geometry as overlay.ts's SVG (coordinates rounded alike), the pin's curves flattened
 * here. Labels need text, so overlays with a labelled marker stay with librsvg.
 */
import { project, type Camera } from './camera.ts';
import type { Colour } from './colour.ts';
import type { MarkerOverlay, PathOverlay } from './params.ts';

const r2 = (v: number) => Math.round(v * 100) / 100;

type Pt = [number, number];

function cubic(out: Pt[], p0: Pt, p1: Pt, p2: Pt, p3: Pt, steps: number): void {
  for (let i = 1; i <= steps; i++) {
    const t = i / steps, u = 1 - t;
    const a = u * u * u, b = 3 * u * u * t, c = 3 * u * t * t, d = t * t * t;
    out.push([a * p0[0] + b * p1[0] + c * p2[0] + d * p3[0], a * p0[1] + b * p1[1] + c * p2[1] + d * p3[1]]);
  }
}

/** overlay.ts's PIN_PATH (`M0,0 C-2,-7 -10,-12 -10,-20 A10,10 0 1,1 10,-20 C10,-12 2,-7 0,0 Z`) as a polygon, tip at 0,0. */
const PIN_POLYGON: readonly Pt[] = (() => {
  const out: Pt[] = [[0, 0]];
  cubic(out, [0, 0], [-2, -7], [-10, -12], [-10, -20], 24);
  // The arc over the top from the left to the right end of the head (centre 0,-20, radius 10).
  for (let i = 1; i <= 48; i++) {
    const a = Math.PI + (Math.PI * i) / 48;
    out.push([10 * Math.cos(a), -20 + 10 * Math.sin(a)]);
  }
  cubic(out, [10, -20], [10, -12], [2, -7], [0, 0], 24);
  out.pop(); // back at the tip
  return out;
})();

const WHITE = 255;

function rgb(c: Colour): [number, number, number] {
  const v = Number.parseInt(c.hex.slice(1), 16);
  return [(v >> 16) & 255, (v >> 8) & 255, v & 255];
}

/**
 * The operations drawing `paths` then `markers` in a box whose top left is (left, top) in image pixels,
 * or undefined when a marker has a label (librsvg draws those). Layout per operation (raster.c):
 * [kind, r, g, b, opacity, …]: 1 stroke (width, closed, miter, n, x y…), 2 fill (n, x y…), 3 disc (x, y, radius).
 */
export function overlayOps(cam: Camera, paths: readonly PathOverlay[], markers: readonly MarkerOverlay[], left: number, top: number): Float64Array | undefined {
  if (markers.some((m) => m.label)) return undefined;
  const ops: number[] = [];
  for (const p of paths) {
    const xy: number[] = [];
    for (const pt of p.points) {
      const [x, y] = project(cam, pt.lon, pt.lat);
      xy.push(r2(x) - left, r2(y) - top);
    }
    if (p.fill && p.fill.opacity > 0) ops.push(2, ...rgb(p.fill), r2(p.fill.opacity), xy.length / 2, ...xy);
    if (p.stroke.opacity > 0) ops.push(1, ...rgb(p.stroke), r2(p.stroke.opacity), r2(p.width * cam.scale), p.fill ? 1 : 0, 0, xy.length / 2, ...xy);
  }
  for (const m of markers) {
    const [px, py] = project(cam, m.lon, m.lat);
    const x = r2(px) - left, y = r2(py) - top, s = cam.scale;
    const xy = PIN_POLYGON.flatMap(([u, v]) => [x + u * s, y + v * s]);
    if (m.colour.opacity > 0) ops.push(2, ...rgb(m.colour), r2(m.colour.opacity), xy.length / 2, ...xy);
    ops.push(1, 0, 0, 0, 0.35, s, 1, 1, xy.length / 2, ...xy);
    ops.push(3, WHITE, WHITE, WHITE, 1, x, y - 20 * s, 4 * s);
  }
  return Float64Array.from(ops);
}
