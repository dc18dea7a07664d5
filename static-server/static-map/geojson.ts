/**
 * GeoJSON overlays of static maps (RFC 7946: a Feature or a FeatureCollection, POSTed or in `?geojson=`),
 * read into the static maps' one overlay model (model.ts: paths with fills and holes, markers) with the
 * simplestyle-spec 1.1.0 properties and defaults: `stroke`, `stroke-width`, `stroke-opacity`, `fill`,
 * `fill-opacity` on lines and polygons; `marker-color`, `marker-size` (small, medium, large) and
 * `marker-symbol` (an icon of the style's sprite, else 1–3 letters or digits on the pin: resolved against
 * the sprite by sprite-icons.ts) on points; `title`, drawn as a label. Other properties are ignored.
 *
 * Every violation is a 400 naming its place in the body and what was expected:
 * `features[3].properties.stroke-width: expected a number (got "2px")`,
 * `features[0].geometry.coordinates[0][5]: longitude 200 is outside -180 … 180` (a lone Feature's places
 * start at `geometry` and `properties`). Line and ring latitudes beyond Web Mercator's ±85.0511° are drawn
 * at its edge, as MapLibre draws them; a point there is a 400.
 */
import type { LatLon } from '../../lib/geo-distance.ts';
import { HttpError } from '../../lib/http-error.ts';
import { HttpStatus } from '../../lib/http-status.ts';
import { MAX_LATITUDE } from '../../lib/tile-math.ts';
import { parseColour, type Colour } from './colour.ts';
import { MARKER_SIZES, type MarkerOverlay, type MarkerSize, type PathOverlay } from './model.ts';

/** simplestyle-spec 1.1.0's defaults. */
const DEFAULTS = Object.freeze({ stroke: '#555555', strokeOpacity: 1, strokeWidth: 2, fill: '#555555', fillOpacity: 0.6, markerColor: '#7e7e7e', markerSize: 'medium' as MarkerSize });
/** Widest line, in logical pixels (as the URL's paths). */
export const MAX_STROKE_WIDTH = 50;
/** Longest `title`, in characters. */
export const MAX_TITLE = 80;
/** Deepest nesting of GeometryCollections. */
const MAX_COLLECTION_DEPTH = 4;
/** Characters XML 1.0 cannot hold, and lone surrogates: a title with them is refused, not altered. */
const NOT_XML_TEXT = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]|\p{Cs}/u;
/** Longest echo of a bad value in a message. */
const ECHO_CHARS = 40;
const GEOMETRY_TYPES = ['Point', 'MultiPoint', 'LineString', 'MultiLineString', 'Polygon', 'MultiPolygon', 'GeometryCollection'];

/** The overlays of a body. */
export interface GeoJsonOverlays {
  paths: PathOverlay[];
  markers: MarkerOverlay[];
}

/** Limits of one body: features, and positions in all (what the URL's paths already used is taken off). */
export interface GeoJsonLimits {
  maxFeatures: number;
  maxPositions: number;
}

function bad(message: string): never {
  throw new HttpError(HttpStatus.BadRequest, message);
}

/** A value as a message shows it: JSON, cut short. */
function echo(v: unknown): string {
  const text = JSON.stringify(v) ?? String(v);
  return text.length > ECHO_CHARS ? `${text.slice(0, ECHO_CHARS)}…` : text;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** `where` + `.key` (a lone Feature's places have no prefix). */
function at(where: string, key: string): string {
  return where === '' ? key : `${where}.${key}`;
}

/** The simplestyle properties of one feature, checked. */
interface FeatureStyle {
  stroke: Colour;
  width: number;
  fill: Colour;
  markerColour: Colour;
  markerSize: MarkerSize;
  symbol?: { name: string; where: string };
  title?: string;
}

function readStyle(props: Record<string, unknown>, where: string): FeatureStyle {
  const p = (name: string) => at(where, `properties.${name}`);
  const colour = (name: string, fallback: string): Colour => {
    const v = props[name];
    if (v === undefined) return parseColour(fallback)!;
    const c = typeof v === 'string' ? parseColour(v) : undefined;
    if (!c) bad(`${p(name)}: expected a colour such as "#ff0000", "#f00" or "red" (got ${echo(v)})`);
    return c;
  };
  const number = (name: string, fallback: number, max: number): number => {
    const v = props[name];
    if (v === undefined) return fallback;
    if (typeof v !== 'number' || !Number.isFinite(v)) bad(`${p(name)}: expected a number (got ${echo(v)})`);
    if (v < 0 || v > max) bad(`${p(name)}: ${v} is outside 0 … ${max}`);
    return v;
  };
  const withOpacity = (c: Colour, opacity: number): Colour => ({ hex: c.hex, opacity: c.opacity * opacity });
  const size = props['marker-size'] ?? DEFAULTS.markerSize;
  if (typeof size !== 'string' || !(MARKER_SIZES as readonly string[]).includes(size)) bad(`${p('marker-size')}: expected one of ${MARKER_SIZES.join(', ')} (got ${echo(size)})`);
  const style: FeatureStyle = {
    stroke: withOpacity(colour('stroke', DEFAULTS.stroke), number('stroke-opacity', DEFAULTS.strokeOpacity, 1)),
    width: number('stroke-width', DEFAULTS.strokeWidth, MAX_STROKE_WIDTH),
    fill: withOpacity(colour('fill', DEFAULTS.fill), number('fill-opacity', DEFAULTS.fillOpacity, 1)),
    markerColour: colour('marker-color', DEFAULTS.markerColor),
    markerSize: size as MarkerSize,
  };
  const symbol = props['marker-symbol'];
  if (symbol !== undefined && symbol !== '') {
    // simplestyle allows a number ("marker-symbol": 1) for a digit.
    const name = typeof symbol === 'number' && Number.isInteger(symbol) && symbol >= 0 ? String(symbol) : symbol;
    if (typeof name !== 'string') bad(`${p('marker-symbol')}: expected the name of an icon of the style's sprite, or 1 to 3 letters or digits (got ${echo(symbol)})`);
    style.symbol = { name, where: p('marker-symbol') };
  }
  const title = props.title;
  if (title !== undefined && title !== '') {
    if (typeof title !== 'string') bad(`${p('title')}: expected a string (got ${echo(title)})`);
    if ([...title].length > MAX_TITLE) bad(`${p('title')}: at most ${MAX_TITLE} characters (got ${[...title].length})`);
    if (NOT_XML_TEXT.test(title)) bad(`${p('title')}: control characters and lone surrogates are not allowed`);
    style.title = title;
  }
  return style;
}

/** Reads the features of one body into overlays, counting positions against the budget. */
class Reader {
  readonly out: GeoJsonOverlays = { paths: [], markers: [] };
  private positions = 0;

  constructor(private readonly maxPositions: number) {}

  /** One position; `point`: a marker's (refused beyond Web Mercator), else a vertex (drawn at its edge). */
  position(v: unknown, where: string, point: boolean): LatLon {
    if (++this.positions > this.maxPositions) bad(`${where}: more than ${this.maxPositions} positions in all (the limit of one image)`);
    if (!Array.isArray(v) || v.length < 2 || typeof v[0] !== 'number' || typeof v[1] !== 'number' || !Number.isFinite(v[0]) || !Number.isFinite(v[1])) {
      bad(`${where}: expected a position [longitude, latitude] of numbers (got ${echo(v)})`);
    }
    const [lon, lat] = v as [number, number];
    if (lon < -180 || lon > 180) bad(`${where}: longitude ${lon} is outside -180 … 180`);
    if (point && Math.abs(lat) > MAX_LATITUDE) bad(`${where}: latitude ${lat} is outside ±${MAX_LATITUDE} (Web Mercator)`);
    if (Math.abs(lat) > 90) bad(`${where}: latitude ${lat} is outside -90 … 90`);
    return { lon, lat: Math.max(-MAX_LATITUDE, Math.min(MAX_LATITUDE, lat)) };
  }

  private list(v: unknown, where: string, what: string): unknown[] {
    if (!Array.isArray(v)) bad(`${where}: expected ${what} (got ${echo(v)})`);
    return v;
  }

  private line(v: unknown, where: string): LatLon[] {
    const pts = this.list(v, where, 'an array of positions').map((p, i) => this.position(p, `${where}[${i}]`, false));
    if (pts.length < 2) bad(`${where}: a line needs at least 2 positions (got ${pts.length})`);
    return pts;
  }

  private ring(v: unknown, where: string): LatLon[] {
    const pts = this.list(v, where, 'a linear ring: an array of positions').map((p, i) => this.position(p, `${where}[${i}]`, false));
    if (pts.length < 4) bad(`${where}: a linear ring needs at least 4 positions (got ${pts.length})`);
    const [a, b] = [pts[0], pts[pts.length - 1]];
    if (a.lon !== b.lon || a.lat !== b.lat) bad(`${where}: a linear ring ends where it starts (RFC 7946 3.1.6)`);
    return pts;
  }

  private marker(p: LatLon, style: FeatureStyle): void {
    const m: MarkerOverlay = { lon: p.lon, lat: p.lat, colour: style.markerColour, size: style.markerSize };
    if (style.symbol) m.symbol = style.symbol;
    if (style.title !== undefined) m.title = style.title;
    this.out.markers.push(m);
  }

  private path(points: LatLon[], style: FeatureStyle, titled: { done: boolean }, polygon?: { holes: LatLon[][] }): void {
    const p: PathOverlay = { points, stroke: style.stroke, width: style.width };
    if (polygon) {
      p.fill = style.fill;
      if (polygon.holes.length) p.holes = polygon.holes;
    }
    // A feature's title once, at its first line or polygon.
    if (style.title !== undefined && !titled.done) {
      p.title = style.title;
      titled.done = true;
    }
    this.out.paths.push(p);
  }

  private polygon(v: unknown, where: string, style: FeatureStyle, titled: { done: boolean }): void {
    const rings = this.list(v, where, 'an array of linear rings').map((r, i) => this.ring(r, `${where}[${i}]`));
    if (rings.length === 0) bad(`${where}: a polygon needs its outer ring`);
    this.path(rings[0], style, titled, { holes: rings.slice(1) });
  }

  geometry(g: unknown, where: string, style: FeatureStyle, titled: { done: boolean }, depth = 0): void {
    if (!isObject(g)) bad(`${where}: expected a geometry object or null (got ${echo(g)})`);
    const c = at(where, 'coordinates');
    switch (g.type) {
      case 'Point':
        this.marker(this.position(g.coordinates, c, true), style);
        return;
      case 'MultiPoint':
        this.list(g.coordinates, c, 'an array of positions').forEach((p, i) => this.marker(this.position(p, `${c}[${i}]`, true), style));
        return;
      case 'LineString':
        this.path(this.line(g.coordinates, c), style, titled);
        return;
      case 'MultiLineString':
        this.list(g.coordinates, c, 'an array of lines').forEach((l, i) => this.path(this.line(l, `${c}[${i}]`), style, titled));
        return;
      case 'Polygon':
        this.polygon(g.coordinates, c, style, titled);
        return;
      case 'MultiPolygon':
        this.list(g.coordinates, c, 'an array of polygons').forEach((p, i) => this.polygon(p, `${c}[${i}]`, style, titled));
        return;
      case 'GeometryCollection': {
        if (depth >= MAX_COLLECTION_DEPTH) bad(`${where}: GeometryCollections nested more than ${MAX_COLLECTION_DEPTH} deep`);
        const gs = at(where, 'geometries');
        this.list(g.geometries, gs, 'an array of geometries').forEach((x, i) => this.geometry(x, `${gs}[${i}]`, style, titled, depth + 1));
        return;
      }
      default:
        bad(`${at(where, 'type')}: expected one of ${GEOMETRY_TYPES.join(', ')} (got ${echo(g.type)})`);
    }
  }
}

function readFeature(reader: Reader, f: unknown, where: string): void {
  if (!isObject(f) || f.type !== 'Feature') bad(`${where || 'type'}: expected a Feature (got ${echo(isObject(f) ? f.type : f)})`);
  const props = f.properties ?? {};
  if (!isObject(props)) bad(`${at(where, 'properties')}: expected an object or null (got ${echo(props)})`);
  const style = readStyle(props, where);
  // A feature without a location is valid GeoJSON: nothing to draw.
  if (f.geometry === null) return;
  reader.geometry(f.geometry, at(where, 'geometry'), style, { done: false });
}

/** The overlays of a GeoJSON body (a Feature or a FeatureCollection), or a 400 naming what is wrong. */
export function parseGeoJson(body: unknown, limits: GeoJsonLimits): GeoJsonOverlays {
  if (!isObject(body)) bad(`GeoJSON: expected a Feature or FeatureCollection object (got ${echo(body)})`);
  const reader = new Reader(limits.maxPositions);
  if (body.type === 'FeatureCollection') {
    const features = body.features;
    if (!Array.isArray(features)) bad(`features: expected an array of Features (got ${echo(features)})`);
    if (features.length > limits.maxFeatures) bad(`features: at most ${limits.maxFeatures} features (got ${features.length})`);
    features.forEach((f, i) => readFeature(reader, f, `features[${i}]`));
  } else if (body.type === 'Feature') {
    readFeature(reader, body, '');
  } else {
    const hint = GEOMETRY_TYPES.includes(String(body.type)) ? ': put a geometry in a Feature\'s "geometry"' : '';
    bad(`type: expected "Feature" or "FeatureCollection" (got ${echo(body.type)})${hint}`);
  }
  return reader.out;
}
