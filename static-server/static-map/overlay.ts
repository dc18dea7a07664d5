/**
 * Static map overlays as one SVG the size of the image (composited by sharp): paths as polylines or
 * filled polygons, markers as pins with an optional label. Every value written into the SVG is a
 * number or a colour parsed into `#rrggbb`, and labels are letters and digits, so no request text
 * can change the SVG's structure.
 */
import { project, type Camera } from './camera.ts';
import type { Colour } from './colour.ts';
import type { MarkerOverlay, PathOverlay } from './params.ts';

/** Pin outline with its tip at 0,0, in logical pixels (20 px wide, 30 px tall). */
const PIN_PATH = 'M0,0 C-2,-7 -10,-12 -10,-20 A10,10 0 1,1 10,-20 C10,-12 2,-7 0,0 Z';
/** Centre of the pin's head, relative to its tip. */
const PIN_HEAD_Y = -20;

const r2 = (v: number) => Math.round(v * 100) / 100;

function paint(kind: 'stroke' | 'fill', c: Colour): string {
  return `${kind}="${c.hex}" ${kind}-opacity="${r2(c.opacity)}"`;
}

function pathSvg(cam: Camera, p: PathOverlay): string {
  const d = p.points.map((pt, i) => {
    const [x, y] = project(cam, pt.lon, pt.lat);
    return `${i === 0 ? 'M' : 'L'}${r2(x)},${r2(y)}`;
  });
  const fill = p.fill ? `${paint('fill', p.fill)}` : 'fill="none"';
  return `<path d="${d.join(' ')}${p.fill ? ' Z' : ''}" ${fill} ${paint('stroke', p.stroke)} stroke-width="${r2(p.width * cam.scale)}" stroke-linejoin="round" stroke-linecap="round"/>`;
}

function markerSvg(cam: Camera, m: MarkerOverlay): string {
  const [x, y] = project(cam, m.lon, m.lat);
  const inner = m.label
    ? `<text x="0" y="${PIN_HEAD_Y + 4.5}" font-family="DejaVu Sans, sans-serif" font-weight="bold" font-size="${m.label.length > 1 ? 9 : 12}" text-anchor="middle" fill="#ffffff">${m.label}</text>`
    : `<circle cx="0" cy="${PIN_HEAD_Y}" r="4" fill="#ffffff"/>`;
  return `<g transform="translate(${r2(x)},${r2(y)}) scale(${cam.scale})"><path d="${PIN_PATH}" ${paint('fill', m.colour)} stroke="#000000" stroke-opacity="0.35" stroke-width="1"/>${inner}</g>`;
}

/** The overlay SVG, or undefined when there is nothing to draw. */
export function overlaySvg(cam: Camera, paths: readonly PathOverlay[], markers: readonly MarkerOverlay[]): Buffer | undefined {
  if (paths.length === 0 && markers.length === 0) return undefined;
  const body = [...paths.map((p) => pathSvg(cam, p)), ...markers.map((m) => markerSvg(cam, m))].join('');
  return Buffer.from(`<svg xmlns="http://www.w3.org/2000/svg" width="${cam.width}" height="${cam.height}" viewBox="0 0 ${cam.width} ${cam.height}">${body}</svg>`);
}
