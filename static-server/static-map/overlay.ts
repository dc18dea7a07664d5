/**
 * Static map overlays, the one description of every overlay's geometry, as the layers composited over
 * the map (static-map/compose.ts), bottom to top:
 * 1. one SVG of the shapes, covering only their bounding box (in image pixels, clipped to the image):
 *    paths as polylines or filled polygons (holes by the even-odd rule), markers as pins (small, medium
 *    or large) with an optional 1–3 letter label; drawn by librsvg;
 * 2. the markers' sprite icons (sprite-icons.ts: cut out of the style's sheet by sharp), centred on their points;
 * 3. one SVG of the titles (labels with a white halo below markers, at a line's middle or a polygon's
 *    centroid), so that icons never hide a label.
 * Every value written into an SVG is a number, a colour parsed into `#rrggbb`, a pin label of letters
 * and digits, or a title escaped as XML text (lib/xml.ts; control characters are refused by geojson.ts),
 * so no request text can change an SVG's structure. Drawing the boxes instead of the whole image saves
 * most of the drawing (docs/static-map-speed.md).
 */
import type { LatLon } from '../../lib/geo-distance.ts';
import { xmlEscape } from '../../lib/xml.ts';
import { project, type Camera } from './camera.ts';
import type { Colour } from './colour.ts';
import type { MarkerOverlay, MarkerSize, PathOverlay } from './model.ts';

/** Pin sizes (simplestyle's `marker-size`), as scales of the medium pin. */
const PIN_SCALE: Readonly<Record<MarkerSize, number>> = Object.freeze({ small: 0.7, medium: 1, large: 1.4 });

/** Pin outline with its tip at 0,0, in logical pixels (20 px wide, 30 px tall at medium). */
const PIN_PATH = 'M0,0 C-2,-7 -10,-12 -10,-20 A10,10 0 1,1 10,-20 C10,-12 2,-7 0,0 Z';
/** Centre of the pin's head, relative to its tip. */
const PIN_HEAD_Y = -20;
/** Box around a pin and its label relative to its tip, in logical pixels (a 3-letter label is wider than the head). */
const PIN_BOX = { left: -18, right: 18, top: -32, bottom: 2 };
/** Pixels added around a box for antialiasing. */
const AA_MARGIN = 2;
/** Titles: font size, halo width and gap below a marker, in logical pixels. */
const TITLE_PX = 12;
const HALO_PX = 3;
const TITLE_GAP_PX = 2;
/** Bounds of a title's glyphs relative to its font size: advance per character at most (wide glyphs), ascent, descent. */
const TITLE_ADVANCE_EM = 1;
const TITLE_ASCENT_EM = 1;
const TITLE_DESCENT_EM = 0.3;
/** Height of capital letters: a title below a marker has its baseline this far below its top. */
const TITLE_CAP_EM = 0.75;
/** Shift of a centred title's baseline so that its letters sit about the point. */
const TITLE_MIDDLE_EM = 0.35;
const FONT = 'DejaVu Sans, sans-serif';

const r2 = (v: number) => Math.round(v * 100) / 100;

/** One image composited over the map at (left, top): an SVG (drawn by librsvg) or an icon's RGBA pixels (`raw`). */
export interface OverlayLayer {
  input: Buffer;
  left: number;
  top: number;
  raw?: { width: number; height: number; channels: 4 };
}

/** An SVG layer drawing the image's pixels from (left, top), `width`×`height`. */
export interface OverlaySvg extends OverlayLayer {
  width: number;
  height: number;
}

/** An icon of the style's sprite at the image's scale: straight RGBA pixels. */
export interface Icon {
  data: Buffer;
  width: number;
  height: number;
}

/** The icons the markers name, by name. */
export type Icons = ReadonlyMap<string, Icon>;

/** A box in image pixels: x0, y0, x1, y1 (not clipped). */
type Box = [number, number, number, number];

function paint(kind: 'stroke' | 'fill', c: Colour): string {
  return `${kind}="${c.hex}" ${kind}-opacity="${r2(c.opacity)}"`;
}

function ringPath(cam: Camera, pts: readonly LatLon[], closed: boolean): string {
  const d = pts.map((pt, i) => {
    const [x, y] = project(cam, pt.lon, pt.lat);
    return `${i === 0 ? 'M' : 'L'}${r2(x)},${r2(y)}`;
  });
  return `${d.join(' ')}${closed ? ' Z' : ''}`;
}

function pathSvg(cam: Camera, p: PathOverlay): string {
  const d = [ringPath(cam, p.points, !!p.fill), ...(p.holes ?? []).map((h) => ringPath(cam, h, true))].join(' ');
  const fill = p.fill ? `${paint('fill', p.fill)}${p.holes?.length ? ' fill-rule="evenodd"' : ''}` : 'fill="none"';
  const stroke = p.width > 0 ? `${paint('stroke', p.stroke)} stroke-width="${r2(p.width * cam.scale)}" stroke-linejoin="round" stroke-linecap="round"` : 'stroke="none"';
  return `<path d="${d}" ${fill} ${stroke}/>`;
}

/** A pin's scale from logical pixels to image pixels. */
function pinScale(cam: Camera, m: MarkerOverlay): number {
  return cam.scale * PIN_SCALE[m.size ?? 'medium'];
}

function markerSvg(cam: Camera, m: MarkerOverlay): string {
  const [x, y] = project(cam, m.lon, m.lat);
  const inner = m.label
    ? `<text x="0" y="${PIN_HEAD_Y + 4.5}" font-family="${FONT}" font-weight="bold" font-size="${m.label.length > 1 ? 9 : 12}" text-anchor="middle" fill="#ffffff">${m.label}</text>`
    : `<circle cx="0" cy="${PIN_HEAD_Y}" r="4" fill="#ffffff"/>`;
  return `<g transform="translate(${r2(x)},${r2(y)}) scale(${r2(pinScale(cam, m))})"><path d="${PIN_PATH}" ${paint('fill', m.colour)} stroke="#000000" stroke-opacity="0.35" stroke-width="1"/>${inner}</g>`;
}

/** Grow `b` to hold (x0, y0)–(x1, y1). */
function grow(b: Box, x0: number, y0: number, x1: number, y1: number): void {
  b[0] = Math.min(b[0], x0), b[1] = Math.min(b[1], y0), b[2] = Math.max(b[2], x1), b[3] = Math.max(b[3], y1);
}

const emptyBox = (): Box => [Infinity, Infinity, -Infinity, -Infinity];

/** An SVG of `body` over box `b` (clipped to the image), or undefined when it is off the image. */
function svgLayer(cam: Camera, b: Box, body: string): OverlaySvg | undefined {
  const left = Math.max(0, Math.floor(b[0] - AA_MARGIN)), top = Math.max(0, Math.floor(b[1] - AA_MARGIN));
  const width = Math.min(cam.width, Math.ceil(b[2] + AA_MARGIN)) - left, height = Math.min(cam.height, Math.ceil(b[3] + AA_MARGIN)) - top;
  if (width <= 0 || height <= 0 || body === '') return undefined;
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="${left} ${top} ${width} ${height}">${body}</svg>`;
  return { input: Buffer.from(svg), left, top, width, height };
}

/** The shapes' SVG (paths, and the pins of markers without an icon) over their box within the image, or undefined when nothing is drawn on the image. */
export function overlaySvg(cam: Camera, paths: readonly PathOverlay[], markers: readonly MarkerOverlay[]): OverlaySvg | undefined {
  const pins = markers.filter((m) => m.icon === undefined);
  const b = emptyBox();
  for (const p of paths) {
    // Round joins and caps: nothing is drawn further than half the width from a vertex.
    const half = (p.width * cam.scale) / 2;
    for (const pt of p.points) {
      const [x, y] = project(cam, pt.lon, pt.lat);
      grow(b, x - half, y - half, x + half, y + half);
    }
  }
  for (const m of pins) {
    const [x, y] = project(cam, m.lon, m.lat);
    const s = pinScale(cam, m);
    grow(b, x + PIN_BOX.left * s, y + PIN_BOX.top * s, x + PIN_BOX.right * s, y + PIN_BOX.bottom * s);
  }
  return svgLayer(cam, b, [...paths.map((p) => pathSvg(cam, p)), ...pins.map((m) => markerSvg(cam, m))].join(''));
}

/** The image position of an icon's top-left corner, centred on its marker's point. */
function iconAt(cam: Camera, m: MarkerOverlay, icon: Icon): [number, number] {
  const [x, y] = project(cam, m.lon, m.lat);
  return [Math.round(x - icon.width / 2), Math.round(y - icon.height / 2)];
}

/** The markers' icons as raw layers (those on the image; sharp clips what reaches beyond it). */
function iconLayers(cam: Camera, markers: readonly MarkerOverlay[], icons: Icons): OverlayLayer[] {
  const out: OverlayLayer[] = [];
  for (const m of markers) {
    const icon = m.icon === undefined ? undefined : icons.get(m.icon);
    if (!icon) continue;
    const [left, top] = iconAt(cam, m, icon);
    if (left >= cam.width || top >= cam.height || left + icon.width <= 0 || top + icon.height <= 0) continue;
    out.push({ input: icon.data, left, top, raw: { width: icon.width, height: icon.height, channels: 4 } });
  }
  return out;
}

/** Where a line's title goes: the point half way along it (image pixels). */
function lineMiddle(xy: [number, number][]): [number, number] {
  const lengths = xy.slice(1).map((p, i) => Math.hypot(p[0] - xy[i][0], p[1] - xy[i][1]));
  let rest = lengths.reduce((a, b) => a + b, 0) / 2;
  for (let i = 0; i < lengths.length; i++) {
    if (rest <= lengths[i] && lengths[i] > 0) {
      const t = rest / lengths[i];
      return [xy[i][0] + (xy[i + 1][0] - xy[i][0]) * t, xy[i][1] + (xy[i + 1][1] - xy[i][1]) * t];
    }
    rest -= lengths[i];
  }
  return xy[0];
}

/** Where a polygon's title goes: its outer ring's centroid (image pixels), or the mean vertex of a ring without area. */
function ringCentroid(xy: [number, number][]): [number, number] {
  let a = 0, cx = 0, cy = 0;
  for (let i = 0; i < xy.length - 1; i++) {
    const [x0, y0] = xy[i], [x1, y1] = xy[i + 1];
    const k = x0 * y1 - x1 * y0;
    a += k, cx += (x0 + x1) * k, cy += (y0 + y1) * k;
  }
  if (Math.abs(a) < 1e-9) return [xy.reduce((s, p) => s + p[0], 0) / xy.length, xy.reduce((s, p) => s + p[1], 0) / xy.length];
  return [cx / (3 * a), cy / (3 * a)];
}

/** The titles' SVG over their box within the image, or undefined when there are none on it. */
function titlesSvg(cam: Camera, paths: readonly PathOverlay[], markers: readonly MarkerOverlay[], icons: Icons): OverlaySvg | undefined {
  const size = TITLE_PX * cam.scale, halo = HALO_PX * cam.scale;
  const placed: { x: number; baseline: number; text: string }[] = [];
  for (const m of markers) {
    if (m.title === undefined) continue;
    const [x, y] = project(cam, m.lon, m.lat);
    const icon = m.icon === undefined ? undefined : icons.get(m.icon);
    const bottom = icon ? iconAt(cam, m, icon)[1] + icon.height : y;
    placed.push({ x, baseline: bottom + TITLE_GAP_PX * cam.scale + halo + size * TITLE_CAP_EM, text: m.title });
  }
  for (const p of paths) {
    if (p.title === undefined) continue;
    const xy = p.points.map((pt) => project(cam, pt.lon, pt.lat));
    const [x, y] = p.fill ? ringCentroid(xy) : lineMiddle(xy);
    placed.push({ x, baseline: y + size * TITLE_MIDDLE_EM, text: p.title });
  }
  if (placed.length === 0) return undefined;
  const b = emptyBox();
  const body = placed.map((t) => {
    const half = ([...t.text].length * size * TITLE_ADVANCE_EM) / 2 + halo;
    grow(b, t.x - half, t.baseline - size * TITLE_ASCENT_EM - halo, t.x + half, t.baseline + size * TITLE_DESCENT_EM + halo);
    return `<text x="${r2(t.x)}" y="${r2(t.baseline)}" font-family="${FONT}" font-size="${r2(size)}" text-anchor="middle" fill="#222222" stroke="#ffffff" stroke-width="${r2(halo)}" stroke-linejoin="round" paint-order="stroke">${xmlEscape(t.text)}</text>`;
  });
  return svgLayer(cam, b, body.join(''));
}

/** Every overlay layer of an image, bottom to top: the shapes, the icons, the titles (see the module comment). */
export function overlayLayers(cam: Camera, paths: readonly PathOverlay[], markers: readonly MarkerOverlay[], icons: Icons = new Map()): OverlayLayer[] {
  const shapes = overlaySvg(cam, paths, markers);
  const titles = titlesSvg(cam, paths, markers, icons);
  return [...(shapes ? [shapes] : []), ...iconLayers(cam, markers, icons), ...(titles ? [titles] : [])];
}
