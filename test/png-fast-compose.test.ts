// Static map images as the server composes them (static-server/static-map/compose.ts) from real map
// pixels (docs/preview-desktop.png: MapLibre's drawing of the sample, cut into tiles): at grid-aligned,
// down- and upsampled, rotated views reaching beyond the tiles (so with transparent and partly
// transparent pixels), with a path and a marker blended in. The PNG from the native encoder must decode
// (zlib + unfiltering, and sharp) to exactly the composed pixels with colour divided by alpha; JPEG is
// flattened onto white.
import { resolve } from 'node:path';
import sharp from 'sharp';
import { beforeAll, describe, expect, it } from 'vitest';
import { worldToLonLat } from '../lib/tile-math.ts';
import { cameraFor, type Camera } from '../static-server/static-map/camera.ts';
import { composeBase, encodeImage, type RasterSource, type RawImage } from '../static-server/static-map/compose.ts';
import type { DecodedTile } from '../static-server/static-map/decoded-tiles.ts';
import { drawOverlay } from '../static-server/static-map/overlay-raster.ts';
import { overlaySvg } from '../static-server/static-map/overlay.ts';
import { DEFAULT_STATIC_MAP_LIMITS, parseStaticMapRequest } from '../static-server/static-map/params.ts';
import { checkPng, unpremultiplied } from './fixtures/png-check.ts';

const SCREENSHOT = resolve(import.meta.dirname, '../docs/preview-desktop.png');
const T = 256;
const Z = 5;
/** The map's tiles: 3 × 2 tiles of the screenshot's map area from tile (X0, Y0) of zoom Z. */
const X0 = 10, Y0 = 12, COLS = 3, ROWS = 2;

let tiles: Map<string, DecodedTile>;
const src: RasterSource = {
  tileSize: T,
  minzoom: Z,
  maxzoom: Z,
  tile: async (z, x, y) => (z === Z ? (tiles.get(`${x}/${y}`) ?? null) : null),
};

beforeAll(async () => {
  const { data, info } = await sharp(SCREENSHOT).extract({ left: 0, top: 0, width: COLS * T, height: ROWS * T }).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  tiles = new Map();
  for (let ty = 0; ty < ROWS; ty++) {
    for (let tx = 0; tx < COLS; tx++) {
      const rgb = Buffer.alloc(T * T * 3);
      for (let row = 0; row < T; row++) data.copy(rgb, row * T * 3, ((ty * T + row) * info.width + tx * T) * 3, ((ty * T + row) * info.width + tx * T + T) * 3);
      tiles.set(`${X0 + tx}/${Y0 + ty}`, { rgb, alpha: null, size: T });
    }
  }
});

/** A request over world pixel (x, y) of zoom Z (at the tiles' top-left corner + x, y) at `zoom`, 640×480@2x, with a path and a marker. */
function request(x: number, y: number, zoom: number, bearing = 0, format: 'png' | 'jpg' = 'png') {
  const world = T * 2 ** Z;
  const at = (dx: number, dy: number) => worldToLonLat((X0 * T + x + dx) / world, (Y0 * T + y + dy) / world);
  const c = at(0, 0);
  const pts = [at(-150, -90), at(-40, 60), at(70, -20), at(160, 100)].map((p) => `${p.lon.toFixed(6)},${p.lat.toFixed(6)}`);
  const view = `${c.lon},${c.lat},${zoom}${bearing ? `,${bearing}` : ''}`;
  const req = parseStaticMapRequest(view, `640x480@2x.${format}`, { path: [`stroke:#e0245e|width:4|${pts.join('|')}`], marker: [`${c.lon},${c.lat}`] }, DEFAULT_STATIC_MAP_LIMITS);
  return { req, cam: cameraFor(req, Z) };
}

/** The base with its overlay blended, as encodeImage does, on a copy (encodeImage changes and releases the base). */
async function composed(cam: Camera, overlay: ReturnType<typeof overlaySvg>): Promise<{ base: RawImage; blended: RawImage }> {
  const base = await composeBase(cam, src);
  const blended = { ...base, rgb: Buffer.from(base.rgb), alpha: base.alpha && Buffer.from(base.alpha) };
  if (overlay) await drawOverlay(blended, overlay);
  return { base, blended };
}

describe('static map PNGs from the native encoder', () => {
  const views: [string, number, number, number, number][] = [
    // name, x, y (world px of zoom Z from the tiles' corner), zoom, bearing
    ['on the tile grid, reaching beyond the tiles', 300, 200, Z, 0],
    ['downsampled (lanczos3), beyond the tiles', 500.3, 300.7, Z - 0.45, 0],
    ['upsampled (bilinear), inside the tiles', 380.2, 250.6, Z + 0.7, 0],
    ['upsampled at the edge of the tiles', 700.5, 450.5, Z + 0.3, 0],
    ['rotated', 384, 256, Z - 0.2, 33],
  ];
  for (const [name, x, y, zoom, bearing] of views) {
    it(`${name}: decodes to the composed pixels exactly`, async () => {
      const { req, cam } = request(x, y, zoom, bearing);
      const overlay = overlaySvg(cam, req.paths, req.markers);
      expect(overlay).toBeDefined();
      const { base, blended } = await composed(cam, overlay);
      const png = await checkPng(await encodeImage(base, overlay, 'png'));
      expect([png.width, png.height]).toEqual([1280, 960]);
      const opaque = !blended.alpha || blended.alpha.every((a) => a === 255);
      expect(png.channels).toBe(opaque ? 3 : 4);
      expect(png.pixels.equals(unpremultiplied(blended.rgb, opaque ? null : blended.alpha, true))).toBe(true);
      if (name.includes('beyond') || name === 'rotated') {
        expect(png.channels).toBe(4);
        const alpha = blended.alpha!;
        expect(alpha.some((a) => a === 0)).toBe(true);
        expect(alpha.some((a) => a > 0 && a < 255)).toBe(true);
      }
    });
  }

  it('the files are no larger than sharp/libvips\' at zlib level 1', async () => {
    const { req, cam } = request(384, 256, Z + 0.2);
    const { base, blended } = await composed(cam, overlaySvg(cam, req.paths, req.markers));
    const ours = await encodeImage(base, undefined, 'png');
    const raw = { raw: { width: 1280, height: 960, channels: 3 as const } };
    const level1 = await sharp(blended.rgb, raw).png({ compressionLevel: 1 }).toBuffer();
    // Between level 3's and level 1's size on the bench's images, smaller than both on this upscaled view
    // (libvips filters no rows); a broken run or Huffman coder would be far larger.
    expect(ours.length).toBeLessThan(level1.length * 1.15);
  });

  it('JPEG: transparent parts are flattened onto white', async () => {
    const { cam } = request(700.5, 450.5, Z + 0.3, 0, 'jpg');
    const { base, blended } = await composed(cam, undefined);
    const jpg = await sharp(await encodeImage(base, undefined, 'jpg')).raw().toBuffer();
    const alpha = blended.alpha!;
    let diff = 0;
    for (let k = 0; k < 1280 * 960; k++) {
      for (let c = 0; c < 3; c++) diff += Math.abs(jpg[k * 3 + c] - Math.min(255, blended.rgb[k * 3 + c] + 255 - alpha[k]));
    }
    expect(diff / (1280 * 960 * 3)).toBeLessThan(2);
    // The bottom-right corner is beyond the tiles: white.
    expect([...jpg.subarray(jpg.length - 3)]).toEqual([255, 255, 255]);
  });
});
