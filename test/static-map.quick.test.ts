// Static map images (static-server/static-map/, routes/static-map.ts) over real HTTP from a real output
// folder: views on the tile grid equal the stitched tiles, paths and markers land on the right pixels,
// @2x, bearings, boxes, `auto`, zooms above the baked ones, and every bad parameter is a 400.
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tileBounds, worldToLonLat } from '../lib/tile-math.ts';
import { hashToken } from '../static-server/auth.ts';
import { startServer, type RunningServer } from '../static-server/serve.ts';
import type { Camera } from '../static-server/static-map/camera.ts';
import { parseColour } from '../static-server/static-map/colour.ts';
import { encodeImage } from '../static-server/static-map/compose.ts';
import { overlaySvg } from '../static-server/static-map/overlay.ts';
import { DEFAULT_STATIC_MAP_LIMITS, parseStaticMapRequest, staticMapLimitsFromEnv } from '../static-server/static-map/params.ts';
import { request, serveOptions, type RawResponse } from './fixtures/server/helpers.ts';
import { buildStyleOutput, type StyleOutput } from './fixtures/styles/output.ts';
import { addGridStyle, GRID_MAXZOOM, GRID_STYLE } from './fixtures/styles/world-grid.ts';

const TOKEN = randomBytes(18).toString('base64url');
const AUTH = { authorization: `Bearer ${TOKEN}` };
const MAX_SIZE = 1500;
const MAX_POINTS = 60;
/** Static images waiting while one is composed (TILEBAKE_STATIC_CONCURRENCY=1). */
const QUEUE = 2;

let fixture: StyleOutput;
let tiles: Map<string, Buffer>;
let server: RunningServer;

beforeAll(async () => {
  fixture = await buildStyleOutput();
  tiles = await addGridStyle(fixture.out);
  process.env.TILEBAKE_STATIC_MAX_SIZE = String(MAX_SIZE);
  process.env.TILEBAKE_STATIC_MAX_POINTS = String(MAX_POINTS);
  process.env.TILEBAKE_STATIC_CONCURRENCY = '1';
  process.env.TILEBAKE_STATIC_QUEUE = String(QUEUE);
  server = await startServer(serveOptions(fixture.out), { tokenHashes: [hashToken(TOKEN)] });
}, 120_000);

afterAll(async () => {
  delete process.env.TILEBAKE_STATIC_MAX_SIZE;
  delete process.env.TILEBAKE_STATIC_MAX_POINTS;
  delete process.env.TILEBAKE_STATIC_CONCURRENCY;
  delete process.env.TILEBAKE_STATIC_QUEUE;
  await server?.close();
  if (fixture) await rm(fixture.out, { recursive: true, force: true });
});

function get(path: string, headers: Record<string, string> = AUTH): Promise<RawResponse> {
  return request(`${server.url}/styles/${GRID_STYLE}/static/${path}`, { headers });
}

interface Pixels {
  data: Buffer;
  width: number;
  height: number;
  at(x: number, y: number): [number, number, number];
}

async function pixels(bytes: Buffer): Promise<Pixels> {
  const { data, info } = await sharp(bytes).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height, at: (x, y) => [...data.subarray((y * info.width + x) * 3, (y * info.width + x) * 3 + 3)] as [number, number, number] };
}

async function image(path: string): Promise<Pixels & { res: RawResponse }> {
  const res = await get(path);
  expect(res.status, res.body.toString().slice(0, 200)).toBe(200);
  return { ...(await pixels(res.body)), res };
}

/** The stitched fixture tiles of zoom `z` (scale `s`), cropped at world pixel (left, top), as raw RGB. */
async function stitched(z: number, s: 1 | 2, left: number, top: number, w: number, h: number): Promise<Buffer> {
  const T = 256 * s;
  const out = Buffer.alloc(w * h * 3);
  for (let j = 0; j < h; j++) {
    for (let i = 0; i < w; i++) {
      const gx = left + i, gy = top + j;
      const key = `${s}x/${z}/${Math.floor(gx / T)}/${Math.floor(gy / T)}`;
      const t = await tilePixels(key);
      t.data.copy(out, (j * w + i) * 3, ((gy % T) * T + (gx % T)) * 3, ((gy % T) * T + (gx % T)) * 3 + 3);
    }
  }
  return out;
}
const decoded = new Map<string, Promise<Pixels>>();
function tilePixels(key: string): Promise<Pixels> {
  let p = decoded.get(key);
  if (!p) decoded.set(key, (p = pixels(tiles.get(key)!)));
  return p;
}

/** lon,lat of the world pixel (x, y) at zoom z (256 px world at z0). */
function lonLatAt(z: number, x: number, y: number): string {
  const { lon, lat } = worldToLonLat(x / (256 * 2 ** z), y / (256 * 2 ** z));
  return `${lon},${lat}`;
}

describe('composed from the baked tiles', () => {
  it('a view on the tile grid equals the stitched tiles pixel for pixel, across tile edges', async () => {
    // z2: the world is 1024 px; a 300x200 view with its top-left corner at world pixel (180, 400).
    const img = await image(`${lonLatAt(2, 180 + 150, 400 + 100)},2/300x200.png`);
    expect([img.width, img.height]).toEqual([300, 200]);
    expect(img.res.headers['content-type']).toBe('image/png');
    expect(img.res.headers['x-tilebake-source-zoom']).toBe('2');
    expect(img.data.equals(await stitched(2, 1, 180, 400, 300, 200))).toBe(true);
  });

  it('@2x is twice the size, made of the 512 px tiles', async () => {
    const img = await image(`${lonLatAt(2, 180 + 150, 400 + 100)},2/300x200@2x.png`);
    expect([img.width, img.height]).toEqual([600, 400]);
    expect(img.data.equals(await stitched(2, 2, 360, 800, 600, 400))).toBe(true);
  });

  it('the bounding box form fits the box: a tile\'s bounds at 256x256 is that tile', async () => {
    const [w, s, e, n] = tileBounds(3, 5, 2);
    const img = await image(`${w},${s},${e},${n}/256x256.png?padding=0`);
    expect(img.data.equals((await tilePixels('1x/3/5/2')).data)).toBe(true);
    const boxed = await image(`[${w},${s},${e},${n}]/256x256.png?padding=0`);
    expect(boxed.data.equals(img.data)).toBe(true);
  });

  it('a fractional zoom resamples the next deeper tiles; JPEG output', async () => {
    const img = await image(`${lonLatAt(2, 512, 512)},2.5/400x300.jpg`);
    expect(img.res.headers['content-type']).toBe('image/jpeg');
    expect(img.res.headers['x-tilebake-source-zoom']).toBe('3');
    expect([img.width, img.height]).toEqual([400, 300]);
    // The image centre is the world centre: the corner of the four z3 tiles 3/3, 4/3, 3/4, 4/4 — a
    // point 20 px up-left of it shows tile 3/3/3's colours, 20 px down-right tile 3/4/4's.
    // 20 image px are 20 / 2^-0.5 z3 px.
    const ul = await stitched(3, 1, Math.round(1024 - 20 / Math.SQRT1_2), Math.round(1024 - 20 / Math.SQRT1_2), 1, 1);
    const got = img.at(200 - 20, 150 - 20);
    for (let c = 0; c < 3; c++) expect(Math.abs(got[c] - ul[c])).toBeLessThan(24);
  });

  it('above the baked zooms the deepest tiles are upscaled', async () => {
    const img = await image(`${lonLatAt(GRID_MAXZOOM, 1000.5, 1000.5)},${GRID_MAXZOOM + 2}/64x64.png`);
    expect(img.res.headers['x-tilebake-source-zoom']).toBe(String(GRID_MAXZOOM));
    // 4x upscaled: the centre pixel is the z3 pixel (1000, 1000).
    const src = await stitched(GRID_MAXZOOM, 1, 1000, 1000, 1, 1);
    const got = img.at(32, 32);
    for (let c = 0; c < 3; c++) expect(Math.abs(got[c] - src[c])).toBeLessThanOrEqual(3);
  });

  it('a bearing rotates the map about the centre (bearing 90: east is up)', async () => {
    const centre = lonLatAt(2, 400, 300);
    const flat = await image(`${centre},2/200x200.png`);
    const turned = await image(`${centre},2@90/200x200.png`);
    const mapbox = await image(`${centre},2,90,0/200x200.png`);
    expect(mapbox.data.equals(turned.data)).toBe(true);
    let worst = 0;
    for (const d of [10, 30, 60, 90]) {
      const east = flat.at(100 + d, 100);
      const up = turned.at(100, 100 - d);
      for (let c = 0; c < 3; c++) worst = Math.max(worst, Math.abs(east[c] - up[c]));
    }
    expect(worst).toBeLessThanOrEqual(6);
    expect(flat.data.equals(turned.data)).toBe(false);
  });
});

describe('overlays', () => {
  it('a path through known points lands on their pixels, with its colour and width', async () => {
    // z2 view of 400x300 with its top-left at world pixel (300, 400): the path runs along world row 550
    // (image row 150) from world column 350 to 650, then down column 650 to row 620.
    const pts = [[350, 550], [650, 550], [650, 620]].map(([x, y]) => lonLatAt(2, x, y)).join('|');
    const img = await image(`${lonLatAt(2, 500, 550)},2/400x300.png?path=stroke:%23ff00ff|width:6|${pts}`);
    const magenta = (p: [number, number, number]) => p[0] > 240 && p[1] < 15 && p[2] > 240;
    for (const x of [60, 150, 340]) {
      expect(magenta(img.at(x, 149)), `x=${x}`).toBe(true);
      expect(magenta(img.at(x, 151)), `x=${x}`).toBe(true);
      expect(magenta(img.at(x, 146)), `x=${x} above`).toBe(false);
      expect(magenta(img.at(x, 154)), `x=${x} below`).toBe(false);
    }
    for (const y of [170, 200]) {
      expect(magenta(img.at(349, y))).toBe(true);
      expect(magenta(img.at(354, y))).toBe(false);
    }
    expect(magenta(img.at(40, 150))).toBe(false);
    // The same path as an encoded polyline (precision 5) draws the same line, here at @2x and twice as thick.
    const enc = encodePolyline([[350, 550], [650, 550]].map(([x, y]) => worldToLonLat(x / 1024, y / 1024)));
    const img2 = await image(`${lonLatAt(2, 500, 550)},2/400x300@2x.png?path=enc:${encodeURIComponent(enc)}&stroke=magenta&width=6`);
    expect(magenta(img2.at(300, 300 - 5))).toBe(true);
    expect(magenta(img2.at(300, 300 + 5))).toBe(true);
    expect(magenta(img2.at(300, 300 - 8))).toBe(false);
  });

  it('fill colours a closed polygon; a marker pin stands on its point', async () => {
    const ring = [[100, 100], [200, 100], [200, 200], [100, 200]].map(([x, y]) => lonLatAt(2, x, y)).join('|');
    const img = await image(`${lonLatAt(2, 200, 200)},2/400x400.png?path=fill:%2300ff00|stroke:%230000ff|${ring}&marker=${lonLatAt(2, 300, 300)}|color:%23ff0000|label:B`);
    expect(img.at(150, 150)).toEqual([0, 255, 0]);
    expect(img.at(120, 180)).toEqual([0, 255, 0]);
    expect(img.at(250, 150)).not.toEqual([0, 255, 0]);
    // The blue outline on the ring's edge.
    expect(img.at(100, 150)).toEqual([0, 0, 255]);
    // The pin's body is 12-30 px above its tip, in its colour.
    expect(img.at(300, 300 - 6)[0]).toBeGreaterThan(200);
    expect(img.at(300, 300 - 6)[1]).toBeLessThan(40);
    expect(img.at(300 - 7, 300 - 20)[0]).toBeGreaterThan(200);
    expect(img.at(300 - 14, 300 - 20)[0]).toBeLessThan(200);
    expect(img.at(300, 300 + 4)).not.toEqual(img.at(300, 300 - 6));
  });

  it('auto fits the view to the overlays, inside the padding', async () => {
    // A 400x200 px box at z3, fitted into 240x240 px (300 less 10% each side): zoom 3 + log2(0.6), the
    // segment runs from (30, 90) to (270, 210).
    const a = lonLatAt(3, 500, 800), b = lonLatAt(3, 900, 1000);
    const img = await image(`auto/300x300.png?path=stroke:%23ff00ff|width:4|${a}|${b}&padding=0.1`);
    const magenta = (p: [number, number, number]) => p[0] > 240 && p[1] < 15 && p[2] > 240;
    for (const [x, y] of [[31, 91], [90, 120], [150, 150], [210, 180], [269, 209]]) expect(magenta(img.at(x, y)), `${x},${y}`).toBe(true);
    for (const [x, y] of [[150, 140], [150, 160], [24, 87], [276, 213]]) expect(magenta(img.at(x, y)), `${x},${y}`).toBe(false);
  });
});

describe('bad parameters: 400 with a JSON body', () => {
  const centre = '0,0,2';
  const cases: [string, RegExp][] = [
    [`${centre}/${MAX_SIZE + 1}x100.png`, new RegExp(`width ${MAX_SIZE + 1} is outside 1 … ${MAX_SIZE}`)],
    [`${centre}/100x0.png`, /height 0 is outside/],
    [`${centre}/100x100.gif`, /size "100x100.gif"/],
    [`0,0,21/100x100.png`, /zoom 21 is outside the zoom range of style "grid": 0-20/],
    [`0,0,25/100x100.png`, /zoom 25 is outside 0 … 24/],
    [`0,91,2/100x100.png`, /latitude 91/],
    [`abc,0,2/100x100.png`, /longitude: expected a number/],
    [`0,0,2,0,30/100x100.png`, /pitch/],
    [`1,1,0,0/100x100.png`, /minlon < maxlon/],
    [`auto/100x100.png`, /auto: give at least one path, marker or GeoJSON feature/],
    [`${centre}/100x100.png?path=0,0|1,1&stroke=bluish`, /stroke: "bluish" is not a colour/],
    [`${centre}/100x100.png?path=stroke:%23ggg|0,0|1,1`, /path 1 stroke: "#ggg" is not a colour/],
    [`${centre}/100x100.png?path=width:0|0,0|1,1`, /path 1 width: 0 is outside/],
    [`${centre}/100x100.png?path=0,0`, /path 1: needs at least 2 points/],
    [`${centre}/100x100.png?path=enc:%7F%7F`, /path 1: malformed encoded polyline/],
    [`${centre}/100x100.png?path=${Array.from({ length: MAX_POINTS + 1 }, (_, i) => `${i / 10},0`).join('|')}`, new RegExp(`more than ${MAX_POINTS} points`)],
    [`${centre}/100x100.png?marker=1,2|label:<svg>`, /marker 1 label/],
    [`${centre}/100x100.png?marker=1,2|size:large`, /marker 1: unknown option/],
    [`${centre}/100x100.png?padding=0.6`, /padding 0.6 is outside/],
  ];
  for (const [path, message] of cases) {
    it(path.slice(0, 80), async () => {
      const r = await get(path);
      expect(r.status, r.body.toString()).toBe(400);
      expect(r.headers['content-type']).toMatch(/^application\/json/);
      expect(r.json().status).toBe(400);
      expect(r.json().error).toMatch(message);
    });
  }

  it('unknown style 404, no token 401, conditional requests 304', async () => {
    const unknown = await request(`${server.url}/styles/nope/static/0,0,1/10x10.png`, { headers: AUTH });
    expect(unknown.status).toBe(404);
    expect((await get(`${centre}/10x10.png`, {})).status).toBe(401);
    const first = await get(`${centre}/10x10.png`);
    const again = await get(`${centre}/10x10.png`, { ...AUTH, 'if-none-match': String(first.headers.etag) });
    expect(again.status).toBe(304);
  });
});

describe('metrics', () => {
  it('an image asked again, however its URL is spelled, comes from the static image cache, counted on its own', async () => {
    const hits = async () => {
      const text = (await request(`${server.url}/metrics`, { headers: AUTH })).body.toString();
      return Number(/tilebake_cache_hits_total\{cache="static-images"\} (\d+)/.exec(text)?.[1] ?? 0);
    };
    const path = `${lonLatAt(2, 420, 333)},2.37/120x90.png?path=stroke:red|width:3|${lonLatAt(2, 400, 320)}|${lonLatAt(2, 440, 350)}`;
    const first = await get(path);
    expect(first.status).toBe(200);
    const before = await hits();
    const again = await get(path.replace('stroke:red', 'stroke:%23ff0000'));
    expect(again.status).toBe(200);
    expect(again.body.equals(first.body)).toBe(true);
    expect(again.headers.etag).toBe(first.headers.etag);
    expect(again.headers['x-tilebake-source-zoom']).toBe(first.headers['x-tilebake-source-zoom']);
    expect(await hits()).toBe(before + 1);
    // A different view is composed, not a hit.
    expect((await get(path.replace(',2.37/', ',2.38/'))).status).toBe(200);
    expect(await hits()).toBe(before + 1);
  });

  it('counts static images under their own route kind', async () => {
    expect((await get('0,0,1/20x20.png')).status).toBe(200);
    const text = (await request(`${server.url}/metrics`, { headers: AUTH })).body.toString();
    expect(text).toMatch(/tilebake_http_requests_total\{kind="static-map",status="200"\} [1-9]/);
  });
});

describe('units', () => {
  it('overlays drawn over their box only equal the whole-image SVG composited by sharp, also where they leave the image', async () => {
    const cam: Camera = { cx: 0.5, cy: 0.5, zoom: 2, bearing: 0, width: 600, height: 400, scale: 2 };
    // z2, 300x200 logical px around the world centre: world px 362-662 x 412-612 at 1x.
    const pt = (x: number, y: number) => lonLatAt(2, x, y);
    const query = {
      path: [`stroke:%23e0245ed0|width:5|${pt(380, 430)}|${pt(500, 470)}|${pt(700, 520)}`, `fill:%2300ff0060|stroke:blue|${pt(420, 560)}|${pt(480, 560)}|${pt(450, 640)}`].map(decodeURIComponent),
      marker: [`${pt(600, 450)}|label:AB`, `${pt(370, 600)}|color:%23ffcc00`].map(decodeURIComponent),
    };
    const req = parseStaticMapRequest(`${pt(512, 512)},2`, '300x200@2x.png', query, DEFAULT_STATIC_MAP_LIMITS);
    const box = overlaySvg(cam, req.paths, req.markers)!;
    expect(box.width * box.height).toBeLessThan(cam.width * cam.height);
    const whole = Buffer.from(box.input.toString().replace(/^<svg [^>]*>/, `<svg xmlns="http://www.w3.org/2000/svg" width="${cam.width}" height="${cam.height}" viewBox="0 0 ${cam.width} ${cam.height}">`));
    for (const channels of [3, 4] as const) {
      const base = Buffer.alloc(cam.width * cam.height * channels);
      for (let i = 0; i < base.length; i++) base[i] = channels === 4 && i % 4 === 3 ? (i < base.length / 2 ? 255 : 90) : (i * 31) % 256;
      const raw = { raw: { width: cam.width, height: cam.height, channels } };
      const want = await sharp(await sharp(base, raw).composite([{ input: whole }]).png().toBuffer()).ensureAlpha().raw().toBuffer();
      const got = await sharp(await encodeImage({ data: base, width: cam.width, height: cam.height, channels }, [box], 'png')).ensureAlpha().raw().toBuffer();
      let worst = 0;
      for (let i = 0; i < want.length; i += 4) for (let c = 0; c < channels; c++) worst = Math.max(worst, Math.abs(got[i + c] - want[i + c]));
      // Over a translucent base (alpha 90) 8-bit premultiplied colours are up to ~1.5 units off before blending.
      expect(worst, `${channels} channels`).toBeLessThanOrEqual(channels === 3 ? 2 : 4);
      expect(got.equals(await sharp(base, raw).ensureAlpha().raw().toBuffer())).toBe(false);
    }
  });

  it('colours parse into #rrggbb and an opacity, nothing else passes', () => {
    expect(parseColour('f00')).toEqual({ hex: '#ff0000', opacity: 1 });
    expect(parseColour('#00ff0080')).toEqual({ hex: '#00ff00', opacity: 128 / 255 });
    expect(parseColour('rgba(1,2,3,0.5)')).toEqual({ hex: '#010203', opacity: 0.5 });
    expect(parseColour('Blue')).toEqual({ hex: '#0000ff', opacity: 1 });
    for (const bad of ['rgb(256,0,0)', 'rgb(1,2,3,0.5)', '#12345', 'red"/><script>', 'url(#x)', '']) expect(parseColour(bad), bad).toBeUndefined();
  });

  it('limits come from the environment, and a bad value names the variable', () => {
    expect(staticMapLimitsFromEnv({})).toEqual(DEFAULT_STATIC_MAP_LIMITS);
    expect(staticMapLimitsFromEnv({ TILEBAKE_STATIC_MAX_SIZE: '4096', TILEBAKE_STATIC_QUEUE: '8' })).toMatchObject({ maxSize: 4096, queue: 8, concurrency: 2 });
    expect(() => staticMapLimitsFromEnv({ TILEBAKE_STATIC_MAX_SIZE: 'abc' })).toThrow(/TILEBAKE_STATIC_MAX_SIZE: expected a positive integer/);
  });
});

describe('load', () => {
  it('beyond one image composing and two waiting, requests (GET and POST) get 503 with Retry-After at once; the rest are served', async () => {
    const n = 24;
    const t0 = Date.now();
    // Every other one a POSTed GeoJSON body: the same queue.
    const body = (i: number) => JSON.stringify({ type: 'Feature', properties: {}, geometry: { type: 'Point', coordinates: [i * 7, i] } });
    const posted = (i: number) => request(`${server.url}/styles/${GRID_STYLE}/static/1000x800@2x.png?center=${i * 7},${i},2.${i + 10}`, { method: 'POST', headers: { ...AUTH, 'content-type': 'application/geo+json' }, body: body(i) });
    const answers = await Promise.all(Array.from({ length: n }, (_, i) => (i % 2 ? posted(i) : get(`${i * 7},${i},2.${i + 10}/1000x800@2x.png`))));
    const ok = answers.filter((r) => r.status === 200);
    const busy = answers.filter((r) => r.status === 503);
    expect(ok.length + busy.length).toBe(n);
    expect(ok.length).toBeGreaterThanOrEqual(1 + QUEUE);
    expect(busy.length).toBeGreaterThan(0);
    // At most three are admitted: POSTs were refused too.
    expect(answers.filter((r, i) => i % 2 === 1 && r.status === 503).length).toBeGreaterThan(0);
    for (const r of busy) {
      expect(r.headers['retry-after']).toBe('1');
      expect(r.json()).toMatchObject({ status: 503 });
      expect(r.json().error).toMatch(/too many static images in progress/);
    }
    expect(Date.now() - t0).toBeLessThan(60_000);
    // Afterwards the server composes again.
    expect((await get('0,0,2/100x100.png')).status).toBe(200);
  }, 90_000);
});

/** Google's encoded polyline, precision 5. */
function encodePolyline(points: { lon: number; lat: number }[]): string {
  let out = '', plat = 0, plon = 0;
  const enc = (v: number) => {
    let n = v < 0 ? ~(v << 1) : v << 1;
    while (n >= 0x20) {
      out += String.fromCharCode((0x20 | (n & 0x1f)) + 63);
      n >>= 5;
    }
    out += String.fromCharCode(n + 63);
  };
  for (const p of points) {
    const lat = Math.round(p.lat * 1e5), lon = Math.round(p.lon * 1e5);
    enc(lat - plat);
    enc(lon - plon);
    plat = lat;
    plon = lon;
  }
  return out;
}
