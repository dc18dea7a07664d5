/**
 * What bench/static-map/run.ts and profile.ts share: the sample's osm-bright baked at @2x PNG (in
 * `upscale` or `render` overzoom mode), and the bench's random views (640×480 @2x, a 50-point path
 * and a marker each; or a POSTed GeoJSON body of 100 points with icons and a 500-vertex polygon).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { lonLatToWorld, worldToLonLat, type BBox } from '../../lib/tile-math.ts';

export const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const STYLE = 'osm-bright';
export const UPSCALED_ZOOM = 16;
export const PATH_POINTS = 50;
/** The POSTed GeoJSON case: points with sprite icons, and the vertices of one polygon. */
export const GEOJSON_POINTS = 100;
export const POLYGON_VERTICES = 500;
export const work = join(root, 'bench/results/static-map');

/**
 * Build the sample's osm-bright at @2x PNG to `bakedMaxzoom` (vector, then render) into bench/results/,
 * once per mode. In `render` mode (zooms above the baked ones rendered on demand by `serve`) only
 * `bakedMaxzoom` itself is baked: an on-demand tile is drawn from the vector tiles on the build's
 * metatile grid at its own zoom, whatever zooms were baked, so the shallower ones would only cost time.
 */
export function buildSample(bakedMaxzoom: number, overzoom: 'upscale' | 'render' = 'upscale'): string {
  const name = `build-z${bakedMaxzoom}${overzoom === 'render' ? '-render' : ''}`;
  const out = join(work, name);
  if (existsSync(join(out, 'current.json')) || existsSync(join(out, 'manifest.json'))) return out;
  const sample = JSON.parse(readFileSync(join(root, 'data/sample/config.json'), 'utf8')) as Record<string, unknown> & { tilesets: Record<string, { source: string }> };
  const abs = (p: string) => join(root, 'data/sample', p);
  const zooms = overzoom === 'render' ? { minzoom: bakedMaxzoom, overzoom } : { minzoom: 0 };
  const config = {
    out,
    attribution: sample.attribution,
    tilesets: { openmaptiles: { ...sample.tilesets.openmaptiles, source: abs(sample.tilesets.openmaptiles.source), search: false } },
    styles: { [STYLE]: { style: abs(`styles/${STYLE}/style.json`), tileset: 'openmaptiles', ...zooms, maxzoom: bakedMaxzoom, maxzoom_served: UPSCALED_ZOOM, scales: [2], formats: ['png'] } },
    fonts: abs('fonts'),
  };
  mkdirSync(work, { recursive: true });
  const file = join(work, `${name}.json`);
  writeFileSync(file, JSON.stringify(config, null, 2));
  for (const only of ['vector', 'render']) {
    execFileSync(process.execPath, [join(root, 'bin/tilebake.js'), 'build', '--config', file, '--only', only], { stdio: 'inherit', env: { ...process.env, TILEBAKE_QUIET: '1' } });
  }
  return out;
}

/** A seeded random number generator (the same views every run). */
function rng(seed: number): () => number {
  let s = seed;
  return () => (s = (s * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
}

/**
 * Random 640x480@2x views over `bounds` (zoom 12–15.75), each with a 50-point random-walk path inside
 * the view and a marker at the centre: the part of the URL after `/styles/{style}/static/`.
 */
export function views(bounds: BBox, n: number): string[] {
  const rnd = rng(7);
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    const { lon, lat, zoom, c, span } = randomView(rnd, bounds);
    let x = c.x, y = c.y;
    const pts: string[] = [];
    for (let k = 0; k < PATH_POINTS; k++) {
      x += (rnd() - 0.5) * span * 0.3;
      y += (rnd() - 0.5) * span * 0.3;
      const p = worldToLonLat(x, y);
      pts.push(`${p.lon.toFixed(6)},${p.lat.toFixed(6)}`);
    }
    out.push(`${lon.toFixed(5)},${lat.toFixed(5)},${zoom}/640x480@2x.png?path=stroke:%23e0245e|width:4|${pts.join('|')}&marker=${lon.toFixed(5)},${lat.toFixed(5)}`);
  }
  return out;
}

/** A random view's centre (also in world units) and zoom over `bounds`, and the world units of 200 logical px at that zoom. */
function randomView(rnd: () => number, bounds: BBox) {
  const lon = bounds[0] + rnd() * (bounds[2] - bounds[0]);
  const lat = bounds[1] + rnd() * (bounds[3] - bounds[1]);
  const zoom = Math.round((12 + rnd() * 3.75) * 100) / 100;
  return { lon, lat, zoom, c: lonLatToWorld(lon, lat), span: 200 / (256 * 2 ** zoom) };
}

/**
 * The POSTed case over `bounds`: random views drawn as `views` draws them, each with a GeoJSON body
 * of GEOJSON_POINTS points inside the view, each with one of `icons` (a `marker-symbol` of the style's
 * sprite), and a polygon of POLYGON_VERTICES vertices (a star about the centre): `{path, body}` with
 * the path after `/styles/{style}/static/`.
 */
export function geojsonViews(bounds: BBox, n: number, icons: string[]): { path: string; body: string }[] {
  const rnd = rng(7);
  const out: { path: string; body: string }[] = [];
  const at = (x: number, y: number) => {
    const p = worldToLonLat(x, y);
    return [Number(p.lon.toFixed(6)), Number(p.lat.toFixed(6))];
  };
  for (let i = 0; i < n; i++) {
    const { lon, lat, zoom, c, span } = randomView(rnd, bounds);
    const ring = Array.from({ length: POLYGON_VERTICES }, (_, k) => {
      const a = (2 * Math.PI * k) / POLYGON_VERTICES, r = span * (0.6 + 0.4 * rnd());
      return at(c.x + r * Math.cos(a), c.y + r * Math.sin(a));
    });
    const features: unknown[] = [{ type: 'Feature', properties: { fill: '#3388ff', 'fill-opacity': 0.3, stroke: '#1144aa', 'stroke-width': 2 }, geometry: { type: 'Polygon', coordinates: [[...ring, ring[0]]] } }];
    for (let k = 0; k < GEOJSON_POINTS; k++) {
      const coordinates = at(c.x + (rnd() - 0.5) * span * 2.8, c.y + (rnd() - 0.5) * span * 2);
      features.push({ type: 'Feature', properties: { 'marker-symbol': icons[k % icons.length] }, geometry: { type: 'Point', coordinates } });
    }
    out.push({ path: `${lon.toFixed(5)},${lat.toFixed(5)},${zoom}/640x480@2x.png`, body: JSON.stringify({ type: 'FeatureCollection', features }) });
  }
  return out;
}

/** A line of `views` split as the static route receives it: view, size and query (values decoded). */
export function viewParts(line: string): { view: string; size: string; query: Record<string, string[]> } {
  const [path, q] = line.split('?');
  const [view, size] = path.split('/');
  const query: Record<string, string[]> = {};
  for (const kv of q.split('&')) {
    const [k, val] = kv.split('=');
    (query[k] ??= []).push(decodeURIComponent(val));
  }
  return { view, size, query };
}
