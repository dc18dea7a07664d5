// Static map composition without HTTP (static-server/static-map/compose.ts) on synthetic tiles whose
// pixels are a smooth function of the world position, so the colour every image pixel must have is
// known without sharp: views between the baked zooms (downsized), above them (upsized), beyond the
// build (transparent; white in a JPEG), over tiles with alpha of their own, rotated, with overlays.
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import type { Camera } from '../static-server/static-map/camera.ts';
import { composeImage, planRegion, stitchRegion, type RasterSource } from '../static-server/static-map/compose.ts';
import type { DecodedTile } from '../static-server/static-map/decoded-tiles.ts';
import { overlayLayers } from '../static-server/static-map/overlay.ts';
import { DEFAULT_STATIC_MAP_LIMITS, parseStaticMapRequest } from '../static-server/static-map/params.ts';

const T = 256;
const Z = 3;
const WORLD = T * 2 ** Z;

/** The straight RGBA of world pixel (wx, wy) at zoom Z: gradients of 1 unit per 8 px; alpha of its own on translucent tiles. */
function worldPixel(wx: number, wy: number, translucent: boolean): [number, number, number, number] {
  return [Math.floor(wx / 8) % 256, Math.floor(wy / 8) % 256, 100, translucent ? 80 + (Math.floor(wy / 16) % 128) : 255];
}

function tilePixels(x: number, y: number, translucent: boolean, alpha: boolean): DecodedTile {
  const channels = translucent || alpha ? 4 : 3;
  const data = Buffer.alloc(T * T * channels);
  for (let j = 0; j < T; j++) {
    for (let i = 0; i < T; i++) {
      const p = worldPixel(x * T + i, y * T + j, translucent);
      for (let c = 0; c < channels; c++) data[(j * T + i) * channels + c] = p[c];
    }
  }
  return { data, channels, size: T };
}

/** Tiles of zoom Z; `missing` and `translucent` name x/y of tiles absent or with alpha of their own. */
function source(missing: string[], translucent: string[] = []): RasterSource {
  return {
    tileSize: T,
    minzoom: 0,
    maxzoom: Z,
    tile: async (z, x, y, alpha = false) => (z !== Z || missing.includes(`${x}/${y}`) ? null : tilePixels(x, y, translucent.includes(`${x}/${y}`), alpha)),
  };
}

/** A camera over world pixel (x, y) of zoom Z at zoom `zoom`. */
function camera(x: number, y: number, zoom: number, width = 300, height = 200): Camera {
  return { cx: x / WORLD, cy: y / WORLD, zoom, bearing: 0, width, height, scale: 1 };
}

/** The image's pixels as RGBA. */
async function rgba(png: Buffer): Promise<{ data: Buffer; channels: number }> {
  const { channels } = await sharp(png).metadata();
  return { data: await sharp(png).ensureAlpha().raw().toBuffer(), channels: channels! };
}

/** The world pixel (zoom Z) under image pixel (i, j). */
function worldAt(cam: Camera, i: number, j: number): [number, number] {
  const f = 2 ** (cam.zoom - Z);
  return [cam.cx * WORLD + (i + 0.5 - cam.width / 2) / f, cam.cy * WORLD + (j + 0.5 - cam.height / 2) / f];
}

/** Counts of transparent, partial and opaque pixels, and the worst colour and alpha errors where a pixel is 3 world px or more from a tile edge. */
async function check(cam: Camera, src: RasterSource, missing: string[], translucent: string[] = []) {
  const { data } = await rgba((await composeImage(cam, src, [], 'png')).bytes);
  const r = { transparent: 0, partial: 0, opaque: 0, colour: 0, alpha: 0 };
  for (let j = 0; j < cam.height; j++) {
    for (let i = 0; i < cam.width; i++) {
      const k = (j * cam.width + i) * 4;
      const a = data[k + 3];
      if (a === 0) r.transparent++;
      else if (a < 255) r.partial++;
      else r.opaque++;
      const [wx, wy] = worldAt(cam, i, j);
      const near = (v: number) => Math.abs(v - Math.round(v / T) * T) < 3 * Math.max(1, 2 ** (Z - cam.zoom));
      if (near(wx) || near(wy) || wy < 0 || wy >= WORLD) continue;
      const key = `${Math.floor(wx / T)}/${Math.floor(wy / T)}`;
      if (missing.includes(key)) {
        r.alpha = Math.max(r.alpha, a);
        continue;
      }
      const want = worldPixel(wx, wy, translucent.includes(key));
      r.alpha = Math.max(r.alpha, Math.abs(a - want[3]));
      for (let c = 0; c < 3; c++) r.colour = Math.max(r.colour, Math.abs(data[k + c] - want[c]));
    }
  }
  return r;
}

describe('static images composed by sharp', () => {
  // Tiles 4/3, 3/4 and 4/4 missing: the views straddle their edges and the corner between them.
  const missing = ['4/3', '3/4', '4/4'];
  const src = source(missing);
  for (const zoom of [2.3, 2.76, 3.4, 5.1]) {
    it(`zoom ${zoom} (${zoom < Z ? 'downsized' : 'upsized'}): the tiles' colours, transparent beyond the build`, async () => {
      const r = await check(camera(1024 + 7.3, 1024 - 3.1, zoom), src, missing);
      expect(r.transparent).toBeGreaterThan(1000);
      expect(r.opaque).toBeGreaterThan(1000);
      expect(r.partial).toBeGreaterThan(0);
      expect(r.alpha).toBe(0);
      expect(r.colour).toBeLessThanOrEqual(2);
    });
  }

  it('tiles with alpha of their own keep it, next to opaque and missing tiles', async () => {
    const translucent = ['3/3', '4/3'];
    for (const zoom of [2.7, 3.6]) {
      const r = await check(camera(1024 + 100, 1024 - 50, zoom), source(['4/4'], translucent), ['4/4'], translucent);
      expect(r.partial).toBeGreaterThan(10_000);
      expect(r.alpha).toBeLessThanOrEqual(1);
      expect(r.colour).toBeLessThanOrEqual(3);
    }
  });

  it('the world\'s top edge is transparent above it', async () => {
    const r = await check(camera(300, 20, 2.6), source([]), []);
    expect(r.transparent).toBeGreaterThan(300 * 20);
    expect(r.colour).toBeLessThanOrEqual(2);
  });

  it('on the tile grid the region is the tiles\' pixels, 0 where tiles are missing', async () => {
    const src = source(['4/4']);
    const plan = planRegion(camera(1024, 1024, Z, 2 * T, 2 * T), src, 2 * T, 2 * T);
    expect(plan.exact).toBe(true);
    const region = await stitchRegion(src, plan);
    expect(region.channels).toBe(4);
    for (let row = 0; row < 2 * T; row += 17) {
      for (let col = 0; col < 2 * T; col += 13) {
        const k = (row * 2 * T + col) * 4;
        const want = row >= T && col >= T ? [0, 0, 0, 0] : worldPixel(3 * T + col, 3 * T + row, false);
        expect([...region.data.subarray(k, k + 4)]).toEqual(want);
      }
    }
    // All tiles present and opaque: RGB.
    expect((await stitchRegion(source([]), plan)).channels).toBe(3);
  });

  it('a rotated view keeps the missing tiles transparent and the rest opaque', async () => {
    const cam = { ...camera(1024, 1024, 2.5, 200, 200), bearing: 45 };
    const { data } = await rgba((await composeImage(cam, source(['4/4']), [], 'png')).bytes);
    // Bearing 45: north-east is up, so the missing south-east tile 4/4 is right of the centre, tile 3/3 left.
    expect(data[(100 * 200 + 140) * 4 + 3]).toBe(0);
    expect(data[(100 * 200 + 60) * 4 + 3]).toBe(255);
    expect(data[(60 * 200 + 100) * 4 + 3]).toBe(255);
  });

  it('a JPEG is white beyond the build', async () => {
    const cam = camera(1024 + 7.3, 1024 - 3.1, 2.76);
    const jpg = (await composeImage(cam, source(missing), [], 'jpg')).bytes;
    const { data, info } = await sharp(jpg).raw().toBuffer({ resolveWithObject: true });
    expect(info.channels).toBe(3);
    // Image pixel (280, 190) is world pixel (1185, 1128): inside the missing tile 4/4.
    const k = (190 * cam.width + 280) * 3;
    expect([...data.subarray(k, k + 3)].every((v) => v >= 250)).toBe(true);
  });

  it('overlays keep an opaque image RGB and a translucent one RGBA, and draw the path and pin', async () => {
    const at = (wx: number, wy: number) => {
      const lon = (wx / WORLD) * 360 - 180;
      const lat = (Math.atan(Math.sinh(Math.PI * (1 - (2 * wy) / WORLD))) * 180) / Math.PI;
      return `${lon},${lat}`;
    };
    const req = parseStaticMapRequest(`${at(1024, 1024)},3`, '300x200.png', { path: [`stroke:%23ff0000|width:6|${at(900, 1000)}|${at(1000, 1000)}`].map(decodeURIComponent), marker: [at(1100, 1060)] }, DEFAULT_STATIC_MAP_LIMITS);
    const cam = camera(1024, 1024, 3);
    const overlay = overlayLayers(cam, req.paths, req.markers);
    for (const [src, channels] of [[source([]), 3], [source(['4/4']), 4]] as const) {
      const { data, channels: got } = await rgba((await composeImage(cam, src, overlay, 'png')).bytes);
      expect(got).toBe(channels);
      // The path's middle: image pixel (150 - 74, 100 - 24) is world (950, 1000).
      const k = ((100 - 24) * 300 + 150 - 74) * 4;
      expect([...data.subarray(k, k + 4)]).toEqual([255, 0, 0, 255]);
      // The pin's head, 20 px above its tip at world (1100, 1060): the marker's default colour, opaque.
      const p = ((100 + 36 - 27) * 300 + 150 + 76) * 4;
      expect(data[p + 3]).toBe(255);
      expect([...data.subarray(p, p + 3)]).not.toEqual(worldPixel(1100, 1060 - 27, false).slice(0, 3));
    }
  });
});
