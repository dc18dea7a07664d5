/**
 * The parameters of `GET /styles/{style}/static/{view}/{width}x{height}[@2x].{png|jpg|webp}`, parsed and
 * checked (every bad value is a 400 naming it):
 * - view: `{lon},{lat},{zoom}` with an optional bearing as `@{bearing}` or `,{bearing}` — but four
 *   plain numbers are the bounding box `{minlon},{minlat},{maxlon},{maxlat}` (tileserver-gl's shape;
 *   write the bearing of a centred view as `{lon},{lat},{zoom}@{bearing}` or with Mapbox's fifth value,
 *   pitch `0`); `[…]` around the box is accepted; `auto` fits the paths and markers.
 * - query: `path` (repeatable): `[stroke:{colour}|][width:{px}|][fill:{colour}|]` then `enc:{polyline5}`
 *   or `{lon},{lat}|{lon},{lat}|…`; `stroke`, `width`, `fill` set the defaults of every path; `marker`
 *   (repeatable): `{lon},{lat}[|color:{colour}][|label:{text}]`; `padding` for `auto` and boxes;
 *   `language`: the labels of the style's variant baked in that language.
 * - GeoJSON overlays (geojson.ts): a POSTed body or `geojson=`, on either form; the form without a view
 *   segment, `{width}x{height}[@2x].{png|jpg|webp}`, fits the overlays (`auto`) or takes
 *   `center={lon},{lat},{zoom}[@{bearing}]`.
 */
import { decodePolyline, TooManyPointsError } from '../../lib/elevation/geo.ts';
import { UserError } from '../../lib/errors.ts';
import type { RasterFormat } from '../../lib/raster-encode.ts';
import { MAX_LATITUDE, type BBox } from '../../lib/tile-math.ts';
import { HttpError } from '../context.ts';
import { HttpStatus } from '../../lib/http-status.ts';
import { checkJsonDepth } from '../json-body.ts';
import { queryLanguage } from '../styles/language.ts';
import { parseColour, type Colour } from './colour.ts';
import { parseGeoJson } from './geojson.ts';
import type { MarkerOverlay, PathOverlay } from './model.ts';

/** Limits of static images (TILEBAKE_STATIC_* environment variables override some). */
export interface StaticMapLimits {
  /** Largest width and height in logical pixels (before @2x). */
  maxSize: number;
  /** Most positions in all: path vertices of the URL, and every position of a GeoJSON body. */
  maxPoints: number;
  /** `path` and `marker` parameters of the URL. */
  maxPaths: number;
  maxMarkers: number;
  /** Features of a GeoJSON body (TILEBAKE_STATIC_MAX_FEATURES). */
  maxFeatures: number;
  /**
   * Images composed at once per process (TILEBAKE_STATIC_CONCURRENCY) and waiting (TILEBAKE_STATIC_QUEUE); more get 503.
   * 2, not 4: with one process per core, 4 in flight each cost ~7 % more CPU per image under wrk (more
   * libvips threads than cores, more garbage at once) for fewer images/s (docs/static-map-speed.md).
   */
  concurrency: number;
  queue: number;
}

/** Default of `serve --max-static-body`: the largest GeoJSON body of a static map, in bytes. */
export const DEFAULT_MAX_STATIC_BODY = 1024 * 1024;

export const DEFAULT_STATIC_MAP_LIMITS: StaticMapLimits = Object.freeze({ maxSize: 2048, maxPoints: 20_000, maxPaths: 50, maxMarkers: 100, maxFeatures: 1000, concurrency: 2, queue: 64 });

/** Limits from the environment, else the defaults. */
export function staticMapLimitsFromEnv(env: NodeJS.ProcessEnv = process.env): StaticMapLimits {
  const int = (name: string, fallback: number) => {
    const v = env[name];
    if (v === undefined || v === '') return fallback;
    const n = Number(v);
    if (!Number.isInteger(n) || n < 1) throw new UserError(`environment variable ${name}: expected a positive integer (got ${JSON.stringify(v)})`);
    return n;
  };
  const d = DEFAULT_STATIC_MAP_LIMITS;
  return {
    ...d,
    maxSize: int('TILEBAKE_STATIC_MAX_SIZE', d.maxSize),
    maxPoints: int('TILEBAKE_STATIC_MAX_POINTS', d.maxPoints),
    maxFeatures: int('TILEBAKE_STATIC_MAX_FEATURES', d.maxFeatures),
    concurrency: int('TILEBAKE_STATIC_CONCURRENCY', d.concurrency),
    queue: int('TILEBAKE_STATIC_QUEUE', d.queue),
  };
}

export type StaticView =
  | { kind: 'center'; lon: number; lat: number; zoom: number; bearing: number }
  | { kind: 'bbox'; bbox: BBox }
  | { kind: 'auto' };

export interface StaticMapRequest {
  view: StaticView;
  /** Logical size; the image is `scale` times larger. */
  width: number;
  height: number;
  scale: 1 | 2;
  format: RasterFormat;
  paths: PathOverlay[];
  markers: MarkerOverlay[];
  /** Share of width/height kept free around a box or `auto`'s overlays (0 … 0.45). */
  padding: number;
  /** `language`: compose from the style's variant baked in this language (styles/language.ts). */
  language?: string;
}

const SIZE = /^(\d{1,5})x(\d{1,5})(@2x)?\.(png|jpg|jpeg|webp)$/;
const NUMBER = /^-?\d+(\.\d+)?$/;
const DEFAULT_STROKE: Colour = { hex: '#0050c8', opacity: 0.85 };
const DEFAULT_MARKER: Colour = { hex: '#d7263d', opacity: 1 };
const DEFAULT_WIDTH = 3;
const MAX_WIDTH = 50;
const DEFAULT_PADDING = 0.1;
const MAX_PADDING = 0.45;
const MAX_LABEL = 3;
/** Deepest zoom a view may name (further limited by the style's served zoom range). */
export const MAX_VIEW_ZOOM = 24;

function bad(message: string): never {
  throw new HttpError(HttpStatus.BadRequest, message);
}

function num(text: string, what: string): number {
  if (!NUMBER.test(text.trim())) bad(`${what}: expected a number (got ${JSON.stringify(text)})`);
  return Number(text);
}

function checkLonLat(lon: number, lat: number, what: string): void {
  if (lon < -180 || lon > 180) bad(`${what}: longitude ${lon} is outside -180 … 180`);
  if (lat < -MAX_LATITUDE || lat > MAX_LATITUDE) bad(`${what}: latitude ${lat} is outside ±${MAX_LATITUDE} (Web Mercator)`);
}

/** The view path segment. */
export function parseView(text: string): StaticView {
  if (text === 'auto') return { kind: 'auto' };
  const boxed = /^\[(.*)\]$/.exec(text);
  const [main, at] = (boxed ? boxed[1] : text).split('@');
  const parts = main.split(',');
  if (!boxed && at === undefined && parts.length === 4) {
    const [w, s, e, n] = parts.map((p, i) => num(p, `bounding box value ${i + 1}`));
    checkLonLat(w, s, 'bounding box south-west corner');
    checkLonLat(e, n, 'bounding box north-east corner');
    if (!(w < e) || !(s < n)) bad(`bounding box [${w}, ${s}, ${e}, ${n}]: expected minlon < maxlon and minlat < maxlat`);
    return { kind: 'bbox', bbox: [w, s, e, n] };
  }
  if (boxed) {
    if (parts.length !== 4) bad(`bounding box "${text}": expected [minlon,minlat,maxlon,maxlat]`);
    return parseView(parts.join(','));
  }
  if (parts.length < 3 || parts.length > 5) bad(`view "${text}": expected {lon},{lat},{zoom}[@{bearing}], {minlon},{minlat},{maxlon},{maxlat} or auto`);
  const [lon, lat, zoom] = parts.slice(0, 3).map((p, i) => num(p, ['longitude', 'latitude', 'zoom'][i]));
  checkLonLat(lon, lat, 'centre');
  if (zoom < 0 || zoom > MAX_VIEW_ZOOM) bad(`zoom ${zoom} is outside 0 … ${MAX_VIEW_ZOOM}`);
  if (parts.length === 5 && num(parts[4], 'pitch') !== 0) bad('pitch: only 0 is supported (images are composed from flat tiles)');
  const bearingText = at ?? parts[3];
  if (at !== undefined && parts.length > 3) bad(`view "${text}": give the bearing once`);
  const bearing = bearingText === undefined ? 0 : num(bearingText, 'bearing');
  if (bearing < -360 || bearing > 360) bad(`bearing ${bearing} is outside -360 … 360`);
  return { kind: 'center', lon, lat, zoom, bearing };
}

/** The size path segment `{w}x{h}[@2x].{png|jpg|webp}`. */
export function parseSize(text: string, limits: StaticMapLimits): Pick<StaticMapRequest, 'width' | 'height' | 'scale' | 'format'> {
  const m = SIZE.exec(text);
  if (!m) bad(`size "${text}": expected {width}x{height}[@2x].{png|jpg|webp}`);
  const width = Number(m[1]);
  const height = Number(m[2]);
  for (const [name, v] of [['width', width], ['height', height]] as const) {
    if (v < 1 || v > limits.maxSize) bad(`${name} ${v} is outside 1 … ${limits.maxSize}`);
  }
  return { width, height, scale: m[3] ? 2 : 1, format: m[4] === 'jpeg' ? 'jpg' : (m[4] as RasterFormat) };
}

function colour(text: string, what: string): Colour {
  const c = parseColour(text);
  if (!c) bad(`${what}: "${text}" is not a colour (#rrggbb, #rrggbbaa, #rgb, rgb(r,g,b), rgba(r,g,b,a) or a CSS name such as red)`);
  return c;
}

function width(text: string, what: string): number {
  const w = num(text, what);
  if (!(w > 0 && w <= MAX_WIDTH)) bad(`${what}: ${w} is outside (0, ${MAX_WIDTH}]`);
  return w;
}

/** Query values as a list (a repeated parameter arrives as an array). */
function list(v: unknown): string[] {
  if (v === undefined) return [];
  return (Array.isArray(v) ? v : [v]).map(String);
}

function single(v: unknown, name: string): string | undefined {
  const l = list(v);
  if (l.length > 1) bad(`${name}: given ${l.length} times`);
  return l[0];
}

/** One `path` parameter; `budget` is the number of vertices still allowed. */
function parsePath(text: string, index: number, defaults: Omit<PathOverlay, 'points'>, budget: number): PathOverlay {
  const what = `path ${index + 1}`;
  const out: PathOverlay = { ...defaults, points: [] };
  // Options first; an encoded polyline may itself contain `|`, so the rest is not split before `enc:` is seen.
  let rest = text;
  for (let m = /^(stroke|width|fill):([^|]*)\|/.exec(rest); m; m = /^(stroke|width|fill):([^|]*)\|/.exec(rest)) {
    if (m[1] === 'stroke') out.stroke = colour(m[2], `${what} stroke`);
    else if (m[1] === 'fill') out.fill = colour(m[2], `${what} fill`);
    else out.width = width(m[2], `${what} width`);
    rest = rest.slice(m[0].length);
  }
  if (rest.startsWith('enc:')) {
    try {
      out.points = decodePolyline(rest.slice(4), 5, budget);
    } catch (e) {
      if (e instanceof TooManyPointsError) bad(`paths have more than ${budget} points in all`);
      bad(`${what}: malformed encoded polyline (${(e as Error).message})`);
    }
  } else {
    const parts = rest.split('|');
    if (parts.length > budget) bad(`paths have more than ${budget} points in all`);
    out.points = parts.map((p, k) => {
      const xy = p.split(',');
      if (xy.length !== 2) bad(`${what} point ${k + 1}: expected {lon},{lat} (got ${JSON.stringify(p)})`);
      return { lon: num(xy[0], `${what} point ${k + 1} longitude`), lat: num(xy[1], `${what} point ${k + 1} latitude`) };
    });
  }
  if (out.points.length < 2) bad(`${what}: needs at least 2 points`);
  out.points.forEach((p, k) => checkLonLat(p.lon, p.lat, `${what} point ${k + 1}`));
  return out;
}

function parseMarker(text: string, index: number): MarkerOverlay {
  const what = `marker ${index + 1}`;
  const [pos, ...opts] = text.split('|');
  const xy = pos.split(',');
  if (xy.length !== 2) bad(`${what}: expected {lon},{lat}[|color:{colour}][|label:{text}] (got ${JSON.stringify(text)})`);
  const m: MarkerOverlay = { lon: num(xy[0], `${what} longitude`), lat: num(xy[1], `${what} latitude`), colour: DEFAULT_MARKER };
  checkLonLat(m.lon, m.lat, what);
  for (const o of opts) {
    const kv = /^(color|colour|label):(.*)$/.exec(o);
    if (!kv) bad(`${what}: unknown option ${JSON.stringify(o)} (color:, label:)`);
    if (kv[1] === 'label') {
      if (!/^[\p{L}\p{N}]{1,3}$/u.test(kv[2])) bad(`${what} label: 1 to ${MAX_LABEL} letters or digits (got ${JSON.stringify(kv[2])})`);
      m.label = kv[2];
    } else m.colour = colour(kv[2], `${what} color`);
  }
  return m;
}

/** The view of the form without a view segment: `center=` of the query, else `auto`. */
function viewOfQuery(query: Record<string, unknown>): StaticView {
  const center = single(query.center, 'center');
  if (center === undefined) return { kind: 'auto' };
  const view = parseView(center);
  if (view.kind !== 'center') bad(`center "${center}": expected {lon},{lat},{zoom}[@{bearing}]`);
  return view;
}

/** The GeoJSON of a request: the POSTed body, or the `geojson` parameter (parsed here); undefined when neither. */
function geojsonOf(query: Record<string, unknown>, body: unknown): unknown {
  const text = single(query.geojson, 'geojson');
  if (text === undefined) return body;
  if (body !== undefined) bad('geojson: give the GeoJSON once, in the body or in the geojson parameter');
  try {
    checkJsonDepth(text);
    return JSON.parse(text);
  } catch (e) {
    bad(`geojson: not valid JSON (${(e as Error).message})`);
  }
}

/**
 * The whole request: path segments (`viewText` undefined for the form without a view segment), query and
 * a POSTed GeoJSON body (undefined for GET).
 */
export function parseStaticMapRequest(viewText: string | undefined, sizeText: string, query: Record<string, unknown>, limits: StaticMapLimits, body?: unknown): StaticMapRequest {
  if (viewText !== undefined && query.center !== undefined) bad('center: the view is given in the path already');
  const view = viewText === undefined ? viewOfQuery(query) : parseView(viewText);
  const size = parseSize(sizeText, limits);
  const stroke = single(query.stroke, 'stroke');
  const fill = single(query.fill, 'fill');
  const w = single(query.width, 'width');
  const defaults = {
    stroke: stroke === undefined ? DEFAULT_STROKE : colour(stroke, 'stroke'),
    width: w === undefined ? DEFAULT_WIDTH : width(w, 'width'),
    ...(fill === undefined ? {} : { fill: colour(fill, 'fill') }),
  };
  const pathTexts = list(query.path);
  if (pathTexts.length > limits.maxPaths) bad(`at most ${limits.maxPaths} paths (got ${pathTexts.length})`);
  let budget = limits.maxPoints;
  const paths = pathTexts.map((t, i) => {
    const p = parsePath(t, i, defaults, budget);
    budget -= p.points.length;
    return p;
  });
  const markerTexts = list(query.marker);
  if (markerTexts.length > limits.maxMarkers) bad(`at most ${limits.maxMarkers} markers (got ${markerTexts.length})`);
  const markers = markerTexts.map(parseMarker);
  const geojson = geojsonOf(query, body);
  if (geojson !== undefined) {
    const g = parseGeoJson(geojson, { maxFeatures: limits.maxFeatures, maxPositions: budget });
    paths.push(...g.paths);
    markers.push(...g.markers);
  }
  const pad = single(query.padding, 'padding');
  const padding = pad === undefined ? DEFAULT_PADDING : num(pad, 'padding');
  if (padding < 0 || padding > MAX_PADDING) bad(`padding ${padding} is outside 0 … ${MAX_PADDING}`);
  if (view.kind === 'auto' && paths.length === 0 && markers.length === 0) bad('auto: give at least one path, marker or GeoJSON feature to fit the view to (or center=)');
  const language = queryLanguage(query);
  return { view, ...size, paths, markers, padding, ...(language === undefined ? {} : { language }) };
}
