// GeoJSON overlays of static maps without a server (static-map/geojson.ts, params.ts, overlay.ts): the
// simplestyle properties and defaults, multi-geometries and holes in the one overlay model, every
// violation a 400 naming its place, the limits, and titles that cannot change the SVG's structure.
import { describe, expect, it } from 'vitest';
import { HttpError } from '../lib/http-error.ts';
import type { Camera } from '../static-server/static-map/camera.ts';
import { parseGeoJson } from '../static-server/static-map/geojson.ts';
import { overlayLayers } from '../static-server/static-map/overlay.ts';
import { DEFAULT_STATIC_MAP_LIMITS, parseStaticMapRequest, staticMapLimitsFromEnv } from '../static-server/static-map/params.ts';

const LIMITS = { maxFeatures: 3, maxPositions: 12 };
const feature = (geometry: unknown, properties: Record<string, unknown> = {}) => ({ type: 'Feature', properties, geometry });
const collection = (...features: unknown[]) => ({ type: 'FeatureCollection', features });
const square = (x: number, y: number, d: number) => [[x, y], [x + d, y], [x + d, y + d], [x, y + d], [x, y]];

/** The 400's message of parsing `body`, or a failure when it parses. */
function refusal(body: unknown, limits = LIMITS): string {
  try {
    parseGeoJson(body, limits);
  } catch (e) {
    expect(e).toBeInstanceOf(HttpError);
    expect((e as HttpError).status).toBe(400);
    return (e as Error).message;
  }
  throw new Error(`accepted: ${JSON.stringify(body)}`);
}

describe('GeoJSON into the overlay model', () => {
  it('simplestyle-spec 1.1.0 defaults; opacities multiply the colours\' own; each marker-size', () => {
    const g = parseGeoJson(collection(feature({ type: 'LineString', coordinates: [[0, 0], [1, 1]] }), feature({ type: 'Point', coordinates: [2, 3] })), LIMITS);
    expect(g.paths).toEqual([{ points: [{ lon: 0, lat: 0 }, { lon: 1, lat: 1 }], stroke: { hex: '#555555', opacity: 1 }, width: 2 }]);
    expect(g.markers).toEqual([{ lon: 2, lat: 3, colour: { hex: '#7e7e7e', opacity: 1 }, size: 'medium' }]);
    const styled = parseGeoJson(
      feature({ type: 'Polygon', coordinates: [square(0, 0, 1)] }, { stroke: '#ff000080', 'stroke-opacity': 0.5, 'stroke-width': 0, fill: 'blue', 'fill-opacity': 0.25, title: 'Zone' }),
      LIMITS,
    );
    expect(styled.paths[0]).toMatchObject({ stroke: { hex: '#ff0000', opacity: (128 / 255) * 0.5 }, width: 0, fill: { hex: '#0000ff', opacity: 0.25 }, title: 'Zone' });
    // A polygon is filled by default, with simplestyle's fill.
    expect(parseGeoJson(feature({ type: 'Polygon', coordinates: [square(0, 0, 1)] }), LIMITS).paths[0].fill).toEqual({ hex: '#555555', opacity: 0.6 });
    for (const size of ['small', 'medium', 'large']) expect(parseGeoJson(feature({ type: 'Point', coordinates: [0, 0] }, { 'marker-size': size }), LIMITS).markers[0].size).toBe(size);
  });

  it('multi-geometries, holes and collections become paths and markers; a title once per feature at its first part, on every point', () => {
    const g = parseGeoJson(
      collection(
        feature({ type: 'MultiPolygon', coordinates: [[square(0, 0, 4), square(1, 1, 1)], [square(10, 0, 1)]] }, { title: 'Two' }),
        feature({ type: 'MultiLineString', coordinates: [[[0, 0], [1, 0]], [[0, 1], [1, 1], [2, 1]]] }),
        feature({ type: 'GeometryCollection', geometries: [{ type: 'MultiPoint', coordinates: [[5, 5], [6, 6]] }] }, { 'marker-symbol': 'cafe', title: 'Here' }),
      ),
      { maxFeatures: 3, maxPositions: 100 },
    );
    expect(g.paths.map((p) => [p.points.length, p.holes?.length ?? 0, p.fill !== undefined, p.title])).toEqual([[5, 1, true, 'Two'], [5, 0, true, undefined], [2, 0, false, undefined], [3, 0, false, undefined]]);
    expect(g.markers.map((m) => [m.lon, m.symbol, m.title])).toEqual([
      [5, { name: 'cafe', where: 'features[2].properties.marker-symbol' }, 'Here'],
      [6, { name: 'cafe', where: 'features[2].properties.marker-symbol' }, 'Here'],
    ]);
    // A feature without a location draws nothing; latitudes beyond Web Mercator are drawn at its edge on lines.
    expect(parseGeoJson(feature(null), LIMITS)).toEqual({ paths: [], markers: [] });
    expect(parseGeoJson(feature({ type: 'LineString', coordinates: [[0, -89], [0, 0]] }), LIMITS).paths[0].points[0].lat).toBeCloseTo(-85.0511287798, 8);
  });

  it('every violation is a 400 naming its place in the body and what was expected', () => {
    const point = (coordinates: unknown, properties: Record<string, unknown> = {}) => collection(feature({ type: 'Point', coordinates: [0, 0] }), feature({ type: 'Point', coordinates }, properties));
    const cases: [unknown, string][] = [
      [point([200, 0]), 'features[1].geometry.coordinates: longitude 200 is outside -180 … 180'],
      [point([0, 86]), 'features[1].geometry.coordinates: latitude 86 is outside ±85.0511287798066 (Web Mercator)'],
      [point(['7.4', 43]), 'features[1].geometry.coordinates: expected a position [longitude, latitude] of numbers (got ["7.4",43])'],
      [point([1]), 'features[1].geometry.coordinates: expected a position [longitude, latitude] of numbers (got [1])'],
      [collection(feature({ type: 'LineString', coordinates: [[0, 0], [1, 91]] })), 'features[0].geometry.coordinates[1]: latitude 91 is outside -90 … 90'],
      [point([0, 0], { 'stroke-width': '2px' }), 'features[1].properties.stroke-width: expected a number (got "2px")'],
      [point([0, 0], { 'stroke-width': 51 }), 'features[1].properties.stroke-width: 51 is outside 0 … 50'],
      [point([0, 0], { 'fill-opacity': 2 }), 'features[1].properties.fill-opacity: 2 is outside 0 … 1'],
      [point([0, 0], { stroke: 'bluish' }), 'features[1].properties.stroke: expected a colour such as "#ff0000", "#f00" or "red" (got "bluish")'],
      [point([0, 0], { 'marker-color': 7 }), 'features[1].properties.marker-color: expected a colour such as "#ff0000", "#f00" or "red" (got 7)'],
      [point([0, 0], { 'marker-size': 'huge' }), 'features[1].properties.marker-size: expected one of small, medium, large (got "huge")'],
      [point([0, 0], { 'marker-symbol': ['a'] }), 'features[1].properties.marker-symbol: expected the name of an icon of the style\'s sprite, or 1 to 3 letters or digits (got ["a"])'],
      [point([0, 0], { title: 5 }), 'features[1].properties.title: expected a string (got 5)'],
      [point([0, 0], { title: 'x'.repeat(81) }), 'features[1].properties.title: at most 80 characters (got 81)'],
      [point([0, 0], { title: 'bell\u0007' }), 'features[1].properties.title: control characters and lone surrogates are not allowed'],
      [point([0, 0], { title: 'half \ud800' }), 'features[1].properties.title: control characters and lone surrogates are not allowed'],
      [collection(feature({ type: 'Polygon', coordinates: [[[0, 0], [1, 0], [1, 1], [0, 1]]] })), 'features[0].geometry.coordinates[0]: a linear ring ends where it starts (RFC 7946 3.1.6)'],
      [collection(feature({ type: 'Polygon', coordinates: [[[0, 0], [1, 0], [0, 0]]] })), 'features[0].geometry.coordinates[0]: a linear ring needs at least 4 positions (got 3)'],
      [collection(feature({ type: 'LineString', coordinates: [[0, 0]] })), 'features[0].geometry.coordinates: a line needs at least 2 positions (got 1)'],
      [collection(feature({ type: 'Circle', coordinates: [0, 0] })), 'features[0].geometry.type: expected one of Point, MultiPoint, LineString, MultiLineString, Polygon, MultiPolygon, GeometryCollection (got "Circle")'],
      [collection(feature(undefined)), 'features[0].geometry: expected a geometry object or null (got undefined)'],
      [collection({ type: 'Point', coordinates: [0, 0] }), 'features[0]: expected a Feature (got "Point")'],
      [collection(feature({ type: 'Point', coordinates: [0, 0] }, 'red' as never)), 'features[0].properties: expected an object or null (got "red")'],
      [feature({ type: 'Point', coordinates: [0, 360] }), 'geometry.coordinates: latitude 360 is outside ±85.0511287798066 (Web Mercator)'],
      [{ type: 'Polygon', coordinates: [] }, 'type: expected "Feature" or "FeatureCollection" (got "Polygon"): put a geometry in a Feature\'s "geometry"'],
      [[1, 2], 'GeoJSON: expected a Feature or FeatureCollection object (got [1,2])'],
      [{ type: 'FeatureCollection', features: {} }, 'features: expected an array of Features (got {})'],
      [collection(...Array.from({ length: 4 }, () => feature(null))), 'features: at most 3 features (got 4)'],
      [collection(feature({ type: 'LineString', coordinates: Array.from({ length: 13 }, (_, i) => [i, 0]) })), 'features[0].geometry.coordinates[12]: more than 12 positions in all (the limit of one image)'],
    ];
    for (const [body, message] of cases) expect(refusal(body), message).toBe(message);
  });

  it('in a request: with the URL\'s overlays, from ?geojson=, one vertex budget for both; center= or auto', () => {
    const body = collection(feature({ type: 'LineString', coordinates: [[7.41, 43.73], [7.43, 43.74]] }), feature({ type: 'Point', coordinates: [7.42, 43.735] }));
    const limits = { ...DEFAULT_STATIC_MAP_LIMITS, maxPoints: 5 };
    const posted = parseStaticMapRequest(undefined, '300x200.png', { path: '7.40,43.72|7.44,43.76' }, limits, body);
    expect(posted.view).toEqual({ kind: 'auto' });
    expect([posted.paths.length, posted.markers.length]).toEqual([2, 1]);
    expect(parseStaticMapRequest(undefined, '300x200.png', { path: '7.40,43.72|7.44,43.76', geojson: JSON.stringify(body) }, limits)).toEqual(posted);
    expect(() => parseStaticMapRequest(undefined, '300x200.png', { path: '7.40,43.72|7.44,43.76|7.45,43.77' }, limits, body)).toThrow('features[1].geometry.coordinates: more than 2 positions in all');
    expect(parseStaticMapRequest(undefined, '300x200@2x.png', { center: '7.42,43.73,12@30' }, limits, body).view).toEqual({ kind: 'center', lon: 7.42, lat: 43.73, zoom: 12, bearing: 30 });
    expect(() => parseStaticMapRequest(undefined, '300x200.png', { center: '7.4,43.7,7.5,43.8' }, limits, body)).toThrow('center "7.4,43.7,7.5,43.8": expected {lon},{lat},{zoom}[@{bearing}]');
    expect(() => parseStaticMapRequest('7.4,43.7,12', '300x200.png', { center: '7.4,43.7,12' }, limits, body)).toThrow('center: the view is given in the path already');
    expect(() => parseStaticMapRequest(undefined, '300x200.png', { geojson: '{"type":' }, limits)).toThrow(/^geojson: not valid JSON/);
    expect(() => parseStaticMapRequest(undefined, '300x200.png', { geojson: JSON.stringify(body) }, limits, body)).toThrow('geojson: give the GeoJSON once');
    expect(() => parseStaticMapRequest(undefined, '300x200.png', {}, limits, collection())).toThrow(/auto: give at least one path, marker or GeoJSON feature/);
    expect(staticMapLimitsFromEnv({ TILEBAKE_STATIC_MAX_FEATURES: '7' }).maxFeatures).toBe(7);
  });

  it('a title is text of the titles\' SVG, escaped: markup in it changes nothing of the SVG\'s structure', () => {
    const cam: Camera = { cx: 0.5, cy: 0.5, zoom: 2, bearing: 0, width: 400, height: 300, scale: 1 };
    const layers = (title: string) => {
      const g = parseGeoJson(collection(feature({ type: 'Point', coordinates: [0, 0] }, { title }), feature({ type: 'Polygon', coordinates: [square(-20, -20, 40)] }, { title })), LIMITS);
      return overlayLayers(cam, g.paths, g.markers).map((l) => l.input.toString());
    };
    const attack = '</text><image href="file:///etc/passwd"/><text>&xxe;"\'';
    const [shapes, titles] = layers(attack);
    // A plain title as long (the layer's box follows the length).
    const [plainShapes, plainTitles] = layers('x'.repeat(attack.length));
    expect(shapes).toBe(plainShapes);
    // The same elements and attributes as an ordinary title: only the text differs, escaped.
    const structure = (svg: string) => svg.replace(/>[^<]*</g, '><');
    expect(structure(titles)).toBe(structure(plainTitles));
    expect(titles.match(/<text /g)).toHaveLength(2);
    expect(titles).not.toContain('<image');
    expect(titles).toContain('&lt;/text&gt;&lt;image href=&quot;file:///etc/passwd&quot;/&gt;&lt;text&gt;&amp;xxe;&quot;&apos;');
  });
});
