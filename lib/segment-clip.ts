/** Clipping a segment to a box (Liang–Barsky): shared by the coastline's polygons and a pack's area. */

/** The part [t0, t1] of segment p→q inside the closed box [x0, y0, x1, y1], or undefined when it misses the box. */
export function clipSegment(p: readonly [number, number], q: readonly [number, number], b: readonly [number, number, number, number]): [number, number] | undefined {
  const dx = q[0] - p[0];
  const dy = q[1] - p[1];
  let t0 = 0;
  let t1 = 1;
  const edges: [number, number][] = [
    [-dx, p[0] - b[0]],
    [dx, b[2] - p[0]],
    [-dy, p[1] - b[1]],
    [dy, b[3] - p[1]],
  ];
  for (const [pp, qq] of edges) {
    if (pp === 0) {
      if (qq < 0) return undefined;
      continue;
    }
    const r = qq / pp;
    if (pp < 0) {
      if (r > t1) return undefined;
      if (r > t0) t0 = r;
    } else {
      if (r < t0) return undefined;
      if (r < t1) t1 = r;
    }
  }
  return [t0, t1];
}
