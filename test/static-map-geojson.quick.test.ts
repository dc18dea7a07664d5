// Static maps from a GeoJSON body over real HTTP (routes/static-map.ts, static-map/geojson.ts), on the
// static map tests' fixture (the gradient grid style over the world, the Monaco style with the sample's
// osm-bright sprite): a polygon's fill at its centroid and its hole, a `marker-symbol` icon cut from the
// style's sprite at 1x and @2x, a title under it, `?geojson=` equal to the POST, and the 400, 413 and
// 415 answers with the JSON error shape.
import { randomBytes } from 'node:crypto';
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { worldToLonLat } from '../lib/tile-math.ts';
import { hashToken } from '../static-server/auth.ts';
import { startServer, type RunningServer } from '../static-server/serve.ts';
import { request, serveOptions, type RawResponse } from './fixtures/server/helpers.ts';
import { buildStyleOutput, OSM_BRIGHT_DIR, STYLE_ID, type StyleOutput } from './fixtures/styles/output.ts';
import { addGridStyle, GRID_STYLE } from './fixtures/styles/world-grid.ts';

const TOKEN = randomBytes(18).toString('base64url');
const AUTH = { authorization: `Bearer ${TOKEN}` };
/** This server's --max-static-body. */
const MAX_BODY = 16 * 1024;
/** A view of the Monaco style and a point at its centre. */
const MONACO = [7.4245, 43.7383] as const;

let fixture: StyleOutput;
let server: RunningServer;

beforeAll(async () => {
  fixture = await buildStyleOutput();
  await addGridStyle(fixture.out);
  server = await startServer(serveOptions(fixture.out, { maxStaticBody: MAX_BODY }), { tokenHashes: [hashToken(TOKEN)] });
}, 120_000);

afterAll(async () => {
  await server?.close();
  if (fixture) await rm(fixture.out, { recursive: true, force: true });
});

function post(style: string, path: string, body: unknown, type = 'application/geo+json'): Promise<RawResponse> {
  return request(`${server.url}/styles/${style}/static/${path}`, { method: 'POST', headers: { ...AUTH, 'content-type': type }, body: typeof body === 'string' ? body : JSON.stringify(body) });
}

function get(style: string, path: string): Promise<RawResponse> {
  return request(`${server.url}/styles/${style}/static/${path}`, { headers: AUTH });
}

async function rgb(res: RawResponse): Promise<{ at(x: number, y: number): number[]; data: Buffer; width: number }> {
  expect(res.status, res.body.toString().slice(0, 300)).toBe(200);
  const { data, info } = await sharp(res.body).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  return { data, width: info.width, at: (x, y) => [...data.subarray((y * info.width + x) * 3, (y * info.width + x) * 3 + 3)] };
}

/** [lon, lat] of world pixel (x, y) at zoom 2 (the world 1024 px wide). */
function z2(x: number, y: number): [number, number] {
  const { lon, lat } = worldToLonLat(x / 1024, y / 1024);
  return [lon, lat];
}

const feature = (geometry: unknown, properties: Record<string, unknown> = {}) => ({ type: 'Feature', properties, geometry });
const collection = (...features: unknown[]) => ({ type: 'FeatureCollection', features });
const ring = (pts: [number, number][]) => [...pts, pts[0]].map(([x, y]) => z2(x, y));

/** The osm-bright sprite's icon `name` at `suffix` ('' or '@2x'): its RGBA pixels. */
async function spriteIcon(name: string, suffix: string): Promise<{ data: Buffer; width: number; height: number }> {
  const e = JSON.parse(await readFile(join(OSM_BRIGHT_DIR, `sprite${suffix}.json`), 'utf8'))[name] as { x: number; y: number; width: number; height: number };
  const data = await sharp(join(OSM_BRIGHT_DIR, `sprite${suffix}.png`)).ensureAlpha().extract({ left: e.x, top: e.y, width: e.width, height: e.height }).raw().toBuffer();
  return { data, width: e.width, height: e.height };
}

describe('static maps from a GeoJSON body', () => {
  it('a POSTed polygon\'s fill colour is at its centroid, its hole shows the map; ?geojson= and the view form give the same image', async () => {
    // z2, 400x300 around world pixel (500, 500): image pixel = world pixel - (300, 350).
    const view = `400x300.png?center=${z2(500, 500).join(',')},2`;
    const body = collection(
      // A triangle: its centroid is world (416.67, 480), image (117, 130).
      feature({ type: 'Polygon', coordinates: [ring([[350, 420], [550, 420], [350, 600]])] }, { fill: '#00ff00', 'fill-opacity': 1, 'stroke-width': 0 }),
      // A square, image (280, 20)–(380, 120), with a hole (310, 50)–(350, 90), outlined in blue.
      feature({ type: 'Polygon', coordinates: [ring([[580, 370], [680, 370], [680, 470], [580, 470]]), ring([[610, 400], [650, 400], [650, 440], [610, 440]])] }, { fill: '#ff00ff', 'fill-opacity': 1, stroke: '#0000ff' }),
    );
    const res = await post(GRID_STYLE, view, body);
    expect(res.headers['content-type']).toBe('image/png');
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers['x-tilebake-source-zoom']).toBe('2');
    const img = await rgb(res);
    const map = await rgb(await get(GRID_STYLE, view.replace('400x300.png?center=', `${z2(500, 500).join(',')},2/400x300.png?x=`)));
    expect(img.at(117, 130)).toEqual([0, 255, 0]);
    expect(img.at(60, 200)).toEqual([0, 255, 0]);
    expect(img.at(250, 200)).toEqual(map.at(250, 200));
    expect(map.at(117, 130)).not.toEqual([0, 255, 0]);
    // The hole's centre is the map; the band around it magenta; the outline blue.
    expect(img.at(330, 70)).toEqual(map.at(330, 70));
    expect(img.at(330, 70)).not.toEqual([255, 0, 255]);
    expect(img.at(295, 35)).toEqual([255, 0, 255]);
    expect(img.at(280, 75)).toEqual([0, 0, 255]);
    // GET ?geojson= (URL-encoded), and POST to the form with a view segment, give the same bytes.
    const viaGet = await get(GRID_STYLE, `${view}&geojson=${encodeURIComponent(JSON.stringify(body))}`);
    expect(viaGet.status).toBe(200);
    expect(viaGet.body.equals(res.body)).toBe(true);
    expect(viaGet.headers['cache-control']).toBe('private, max-age=86400');
    const viewForm = await post(GRID_STYLE, `${z2(500, 500).join(',')},2/400x300.png`, body, 'application/json');
    expect(viewForm.body.equals(res.body)).toBe(true);
  });

  it('a marker-symbol icon is drawn from the style\'s sprite at 1x and @2x, centred on its point, its title below it', async () => {
    const point = (properties: Record<string, unknown>) => collection(feature({ type: 'Point', coordinates: MONACO }, properties));
    for (const [scale, suffix] of [[1, ''], [2, '@2x']] as const) {
      const path = `200x200${suffix}.png?center=${MONACO.join(',')},10`;
      const img = await rgb(await post(STYLE_ID, path, point({ 'marker-symbol': 'airport_11' })));
      const icon = await spriteIcon('airport_11', suffix);
      const left = Math.round(100 * scale - icon.width / 2), top = Math.round(100 * scale - icon.height / 2);
      let opaque = 0;
      for (let j = 0; j < icon.height; j++) {
        for (let i = 0; i < icon.width; i++) {
          const o = (j * icon.width + i) * 4;
          if (icon.data[o + 3] !== 255) continue;
          opaque++;
          expect(img.at(left + i, top + j), `${suffix} ${i},${j}`).toEqual([...icon.data.subarray(o, o + 3)]);
        }
      }
      expect(opaque).toBeGreaterThan(20);
      // The title: drawn below the icon only.
      const titled = await rgb(await post(STYLE_ID, path, point({ 'marker-symbol': 'airport_11', title: 'Héliport' })));
      let changed = 0;
      for (let y = 0; y < 200 * scale; y++) {
        for (let x = 0; x < 200 * scale; x++) {
          if (titled.at(x, y).join() === img.at(x, y).join()) continue;
          changed++;
          expect(y, `${suffix} ${x},${y}`).toBeGreaterThanOrEqual(top + icon.height);
        }
      }
      expect(changed).toBeGreaterThan(50 * scale * scale);
    }
  });

  it('a marker-symbol of letters the sprite lacks is the pin\'s label; another name is a 400 naming the feature and where the icons are', async () => {
    const body = (symbol: string) => collection(feature({ type: 'Point', coordinates: MONACO }), feature({ type: 'Point', coordinates: MONACO }, { 'marker-symbol': symbol }));
    const path = `200x200.png?center=${MONACO.join(',')},10`;
    const pinA = await post(STYLE_ID, path, body('A'));
    const pinB = await post(STYLE_ID, path, body('B'));
    expect([pinA.status, pinB.status]).toEqual([200, 200]);
    expect(pinA.body.equals(pinB.body)).toBe(false);
    const r = await post(STYLE_ID, path, body('spaceport_11'));
    expect(r.status).toBe(400);
    expect(r.json().error).toBe('features[1].properties.marker-symbol: "spaceport_11" is not an icon of the sprite of style "osm-bright" (its icons: /styles/osm-bright/sprite.json), nor 1 to 3 letters or digits for the pin');
    const grid = await post(GRID_STYLE, '100x100.png?center=0,0,2', body('cafe_11'));
    expect(grid.json().error).toMatch(/is not an icon of the sprite of style "grid" \(style "grid" has no sprite\)/);
  });

  it('a body with a bad coordinate is a 400 naming features[i], by POST and by GET; a body too large is a 413; not JSON 400, not a JSON type 415', async () => {
    const bad = collection(feature({ type: 'Point', coordinates: [7.42, 43.73] }), feature({ type: 'LineString', coordinates: [[7.42, 43.73], [187.42, 43.73]] }));
    for (const r of [await post(GRID_STYLE, '100x100.png', bad), await get(GRID_STYLE, `100x100.png?geojson=${encodeURIComponent(JSON.stringify(bad))}`)]) {
      expect(r.status).toBe(400);
      expect(r.headers['content-type']).toMatch(/^application\/json/);
      expect(r.json()).toEqual({ status: 400, error: 'features[1].geometry.coordinates[1]: longitude 187.42 is outside -180 … 180' });
    }
    const big = collection(feature({ type: 'LineString', coordinates: Array.from({ length: 1200 }, (_, i) => [7.4 + i / 1e5, 43.73]) }));
    expect(JSON.stringify(big).length).toBeGreaterThan(MAX_BODY);
    const tooLarge = await post(GRID_STYLE, '100x100.png', big);
    expect(tooLarge.status).toBe(413);
    expect(tooLarge.json()).toEqual({ status: 413, error: `request body larger than ${MAX_BODY} bytes (this server's --max-static-body)`, limit: MAX_BODY });
    const notJson = await post(GRID_STYLE, '100x100.png', '{"type": "Feature",');
    expect(notJson.status).toBe(400);
    expect(notJson.json().status).toBe(400);
    const text = await post(GRID_STYLE, '100x100.png', JSON.stringify(bad), 'text/plain');
    expect(text.status).toBe(415);
    expect(text.json().status).toBe(415);
    // The token is checked as on every route.
    expect((await request(`${server.url}/styles/${GRID_STYLE}/static/100x100.png`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).status).toBe(401);
  });
});
