/**
 * Slicing and encoding a rendered metatile (lib/raster-encode.ts): the WebGL drawing buffer is
 * turned the right way up (RGB when opaque, else un-premultiplied RGBA), tiles are cut at the right
 * place, PNG, JPEG and WebP come from the same pixels, and a blank or partial image is refused
 * instead of written.
 */
import sharp from 'sharp';
import { describe, expect, test } from 'vitest';
import { fromDrawingBuffer, sliceMetatile, type SliceOptions } from '../lib/raster-encode.ts';
import { canvasSize, type Metatile } from '../lib/metatiles.ts';

const OPTS: SliceOptions = {
  pixelRatio: 1,
  formats: ['png', 'jpg', 'webp'],
  png: { compressionLevel: 6, palette: false },
  jpeg: { quality: 85 },
  webp: { quality: 90, lossless: false },
  opaqueBackground: true,
};
/** A 2×1 metatile at z1: tiles 1/0/0 and 1/1/0. */
const META: Metatile = { z: 1, x0: 0, y0: 0, size: 2, tiles: [{ z: 1, x: 0, y: 0 }, { z: 1, x: 1, y: 0 }], area: { x: 0, y: 0, w: 2, h: 1 } };

/** An RGBA buffer of w×h filled by `px(x, y)` (top row first). */
function image(w: number, h: number, px: (x: number, y: number) => [number, number, number, number]): Uint8Array {
  const out = new Uint8Array(w * h * 4);
  for (let y = 0; y < h; y++) for (let x = 0; x < w; x++) out.set(px(x, y), (y * w + x) * 4);
  return out;
}

/** The same image with rows in drawing-buffer order (bottom first) and colour premultiplied by alpha. */
function asDrawingBuffer(top: Uint8Array, w: number, h: number): Uint8Array {
  const out = new Uint8Array(top.length);
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w * 4; x += 4) {
      const i = y * w * 4 + x;
      const o = (h - 1 - y) * w * 4 + x;
      const a = top[i + 3];
      for (let c = 0; c < 3; c++) out[o + c] = Math.round((top[i + c] * a) / 255);
      out[o + 3] = a;
    }
  }
  return out;
}

describe('fromDrawingBuffer', () => {
  test('flips rows top-first and un-premultiplies translucent pixels', () => {
    const [w, h] = [3, 4];
    const want = image(w, h, (x, y) => [40 * y, 10 * x, 200, y === 3 && x === 1 ? 128 : y === 2 && x === 0 ? 0 : 255]);
    const got = fromDrawingBuffer(asDrawingBuffer(want, w, h), w, h);
    expect(got.channels).toBe(4);
    for (let i = 0; i < want.length; i += 4) {
      if (want[i + 3] === 0) {
        expect([...got.data.subarray(i, i + 4)]).toEqual([0, 0, 0, 0]);
        continue;
      }
      // Premultiplying to 8 bits loses precision: at alpha 128 a channel comes back within 1.
      for (let c = 0; c < 4; c++) expect(Math.abs(got.data[i + c] - want[i + c])).toBeLessThanOrEqual(want[i + 3] === 255 ? 0 : 1);
    }
  });

  test('an opaque buffer becomes RGB, flipped', () => {
    const [w, h] = [5, 3];
    const want = image(w, h, (x, y) => [x, 10 + y, 20 + x + y, 255]);
    const got = fromDrawingBuffer(asDrawingBuffer(want, w, h), w, h);
    expect(got.channels).toBe(3);
    expect([...got.data]).toEqual([...want].filter((_, i) => i % 4 !== 3));
  });

  test('refuses a buffer of the wrong size', () => {
    expect(() => fromDrawingBuffer(new Uint8Array(10), 2, 2)).toThrow(/10 bytes, expected 16/);
  });
});

describe('sliceMetatile', () => {
  const { width, height } = canvasSize(META, 0, 1);

  test('cuts each tile at its place and encodes PNG and JPEG from the same pixels (RGB and RGBA images)', async () => {
    // Left tile red, right tile blue, with a green frame one pixel wide on the left tile only.
    const data = image(width, height, (x, y) => (x < 256 ? (x === 0 || y === 0 || x === 255 || y === 255 ? [0, 255, 0, 255] : [255, 0, 0, 255]) : [0, 0, 255, 255]));
    for (const img of [fromDrawingBuffer(asDrawingBuffer(data, width, height), width, height), { data, width, height, channels: 4 as const }]) {
      const tiles = await sliceMetatile(img, META, OPTS);
      expect(tiles.png.map((t) => `${t.x}/${t.y}`)).toEqual(['0/0', '1/0']);
      const left = await sharp(tiles.png[0].data).raw().toBuffer({ resolveWithObject: true });
      expect(left.info).toMatchObject({ width: 256, height: 256, channels: 3 });
      const px = (b: Buffer, x: number, y: number) => [...b.subarray((y * 256 + x) * 3, (y * 256 + x) * 3 + 3)];
      for (const [x, y] of [[0, 0], [255, 0], [0, 255], [255, 255], [0, 128]]) expect(px(left.data, x, y)).toEqual([0, 255, 0]);
      for (const [x, y] of [[1, 1], [254, 254], [128, 128]]) expect(px(left.data, x, y)).toEqual([255, 0, 0]);
    }
  });

  test('PNG and JPEG of a tile decode to the same colours', async () => {
    const data = image(width, height, (x) => (x < 256 ? [255, 0, 0, 255] : [0, 0, 255, 255]));
    const tiles = await sliceMetatile(fromDrawingBuffer(asDrawingBuffer(data, width, height), width, height), META, OPTS);
    expect(tiles.png.map((t) => `${t.x}/${t.y}`)).toEqual(['0/0', '1/0']);
    for (const [i, colour] of [[0, [255, 0, 0]], [1, [0, 0, 255]]] as const) {
      const png = await sharp(tiles.png[i].data).raw().toBuffer({ resolveWithObject: true });
      expect(png.info).toMatchObject({ width: 256, height: 256, channels: 3 });
      // Corners and centre.
      for (const [x, y] of [[0, 0], [255, 0], [0, 255], [255, 255], [128, 128]]) expect([...png.data.subarray((y * 256 + x) * 3, (y * 256 + x) * 3 + 3)]).toEqual(colour);
      const jpg = await sharp(tiles.jpg[i].data).raw().toBuffer({ resolveWithObject: true });
      expect(jpg.info).toMatchObject({ width: 256, height: 256 });
      for (let c = 0; c < 3; c++) expect(Math.abs(jpg.data[(128 * 256 + 128) * 3 + c] - colour[c])).toBeLessThan(8);
    }
  });

  test('WebP decodes to the PNG\'s pixels: exactly when lossless (alpha included), within a few levels when lossy', async () => {
    // Opaque left tile (a gradient with a sharp-edged bar, as road and label edges are), translucent right tile.
    const data = image(width, height, (x, y) => {
      const bar = y >= 100 && y < 108 ? 80 : 0;
      return x < 256 ? [(x + bar) % 256, y, 128 + bar, 255] : [40, 200 - (y % 64), 90, x % 4 === 0 ? 0 : 140];
    });
    const decoded = async (bytes: Uint8Array) => sharp(bytes).ensureAlpha().raw().toBuffer();
    const buffer = () => fromDrawingBuffer(asDrawingBuffer(data, width, height), width, height);
    const lossless = await sliceMetatile(buffer(), META, { ...OPTS, opaqueBackground: false, webp: { quality: 50, lossless: true } });
    for (let i = 0; i < 2; i++) {
      expect((await sharp(lossless.webp[i].data).metadata()).format).toBe('webp');
      expect((await decoded(lossless.webp[i].data)).equals(await decoded(lossless.png[i].data)), `tile ${i}`).toBe(true);
    }
    const lossy = await sliceMetatile(buffer(), META, { ...OPTS, opaqueBackground: false });
    const [png, webp] = [await decoded(lossy.png[0].data), await decoded(lossy.webp[0].data)];
    let sum = 0;
    for (let i = 0; i < png.length; i++) sum += Math.abs(png[i] - webp[i]);
    expect(sum / png.length).toBeLessThan(2);
    expect(sum).toBeGreaterThan(0);
    expect(lossy.webp[0].data.length).toBeLessThan(lossy.png[0].data.length);
  });

  test('refuses a blank tile and a partial one (transparent pixels under an opaque background)', async () => {
    const blankRight = image(width, height, (x) => (x >= 256 ? [0, 0, 0, 0] : [9, 9, 9, 255]));
    await expect(sliceMetatile(fromDrawingBuffer(asDrawingBuffer(blankRight, width, height), width, height), META, OPTS)).rejects.toThrow(/tile 1\/1\/0: blank/);
    const hole = image(width, height, (x, y) => (x === 100 && y === 100 ? [0, 0, 0, 0] : [9, 9, 9, 255]));
    await expect(sliceMetatile(fromDrawingBuffer(asDrawingBuffer(hole, width, height), width, height), META, OPTS)).rejects.toThrow(/tile 1\/0\/0: partial image/);
    // Without an opaque background a translucent tile is fine (kept with its alpha).
    const tiles = await sliceMetatile(fromDrawingBuffer(asDrawingBuffer(hole, width, height), width, height), META, { ...OPTS, opaqueBackground: false });
    expect((await sharp(tiles.png[0].data).metadata()).channels).toBe(4);
    expect((await sharp(tiles.png[1].data).metadata()).channels).toBe(3);
  });

  test('refuses an image of the wrong size', async () => {
    await expect(sliceMetatile({ data: new Uint8Array(16 * 4), width: 4, height: 4, channels: 4 }, META, OPTS)).rejects.toThrow(/image is 4×4, expected 512×256/);
  });
});
