/**
 * Static map overlays as one SVG covering only the overlays' bounding box (in image pixels, clipped to
 * the image): paths as polylines or filled polygons, markers as pins with an optional label. The one
 * description of every overlay's geometry; librsvg draws it (static-map/compose.ts). Every value
 * written into the SVG is a number or a colour parsed into `#rrggbb`, and labels are letters and
 * digits, so no request text can change the SVG's structure. Drawing the box instead of the whole
 * image saves most of the drawing (docs/static-map-speed.md).
 */
import { project, type Camera } from './camera.ts';
import type { Colour } from './colour.ts';
import type { MarkerOverlay, PathOverlay } from './params.ts';

/** Pin outline with its tip at 0,0, in logical pixels (20 px wide, 30 px tall). */
const PIN_PATH = 'M0,0 C-2,-7 -10,-12 -10,-20 A10,10 0 1,1 10,-20 C10,-12 2,-7 0,0 Z';
/** Centre of the pin's head, relative to its tip. */
const PIN_HEAD_Y = -20;
/** Box around a pin and its label relative to its tip, in logical pixels (a 3-letter label is wider than the head). */
const PIN_BOX = { left: -18, right: 18, top: -32, bottom: 2 };
/** Pixels added around the box for antialiasing. */
const AA_MARGIN = 2;

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

/** An overlay SVG drawing the image's pixels from (left, top), `width`×`height`. */
export interface OverlaySvg {
  svg: Buffer;
  left: number;
  top: number;
  width: number;
  height: number;
}

/** The box (image pixels, not clipped) every overlay draws inside. */
function overlayBox(cam: Camera, paths: readonly PathOverlay[], markers: readonly MarkerOverlay[]): [number, number, number, number] {
  let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
  for (const p of paths) {
    // Round joins and caps: nothing is drawn further than half the width from a vertex.
    const half = (p.width * cam.scale) / 2;
    for (const pt of p.points) {
      const [x, y] = project(cam, pt.lon, pt.lat);
      x0 = Math.min(x0, x - half), x1 = Math.max(x1, x + half);
      y0 = Math.min(y0, y - half), y1 = Math.max(y1, y + half);
    }
  }
  for (const m of markers) {
    const [x, y] = project(cam, m.lon, m.lat);
    x0 = Math.min(x0, x + PIN_BOX.left * cam.scale), x1 = Math.max(x1, x + PIN_BOX.right * cam.scale);
    y0 = Math.min(y0, y + PIN_BOX.top * cam.scale), y1 = Math.max(y1, y + PIN_BOX.bottom * cam.scale);
  }
  return [x0 - AA_MARGIN, y0 - AA_MARGIN, x1 + AA_MARGIN, y1 + AA_MARGIN];
}

/** The overlay SVG over the overlays' box within the image, or undefined when nothing is drawn on the image. */
export function overlaySvg(cam: Camera, paths: readonly PathOverlay[], markers: readonly MarkerOverlay[]): OverlaySvg | undefined {
  if (paths.length === 0 && markers.length === 0) return undefined;
  const [bx0, by0, bx1, by1] = overlayBox(cam, paths, markers);
  const left = Math.max(0, Math.floor(bx0)), top = Math.max(0, Math.floor(by0));
  const width = Math.min(cam.width, Math.ceil(bx1)) - left, height = Math.min(cam.height, Math.ceil(by1)) - top;
  if (width <= 0 || height <= 0) return undefined;
  const body = [...paths.map((p) => pathSvg(cam, p)), ...markers.map((m) => markerSvg(cam, m))].join('');
  const svg = Buffer.from(`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="${left} ${top} ${width} ${height}">${body}</svg>`);
  return { svg, left, top, width, height };
}
