/**
 * Rendered metatiles to tiles: the WebGL drawing buffer the render page uploads, sliced into the
 * metatile's tiles and encoded as PNG, JPEG and WebP (sharp). The build bakes with it and `serve` renders on demand
 * with it, so both give the same bytes for the same pixels and settings; imagery tiles (workers/imagery-tiles.ts)
 * are encoded by the same encoders (`encodeRgba`).
 */
import { endianness } from 'node:os';
import sharp, { type Sharp } from 'sharp';
import { canvasSize, tileRect, type Metatile, type TileId } from './metatiles.ts';

/** Raster formats a style is rendered to. */
export type RasterFormat = 'png' | 'jpg' | 'webp';

/** RGBA channels of a rendered canvas. */
export const CHANNELS = 4;

/** A rendered metatile: rows top first, RGB when every pixel is opaque, else RGBA not premultiplied. */
export interface RawImage {
  data: Uint8Array;
  width: number;
  height: number;
  /** 3: RGB, every pixel opaque (no per-tile alpha checks, nothing to flatten); 4: RGBA. */
  channels: 3 | 4;
}

/** An opaque RGBA pixel read as a little-endian uint32 is ≥ this (alpha is the high byte). */
const OPAQUE_U32 = 0xff000000;
const LITTLE_ENDIAN = endianness() === 'LE';
/** Fully opaque alpha. */
const OPAQUE = 255;
/** JPEG has no alpha: transparent pixels are flattened onto white. */
const JPEG_BACKGROUND = '#ffffff';

/**
 * The canvas's pixels as RGB, rows flipped top first, or undefined when a pixel is not opaque. One
 * pass reading each RGBA pixel as a uint32 (alpha the high byte on little-endian machines).
 */
function opaqueRgb(pixels: Uint8Array, width: number, height: number): Uint8Array | undefined {
  if (!LITTLE_ENDIAN || pixels.byteOffset % Uint32Array.BYTES_PER_ELEMENT !== 0) return undefined;
  const words = new Uint32Array(pixels.buffer, pixels.byteOffset, width * height);
  const rgb = Buffer.allocUnsafe(width * height * 3);
  let o = 0;
  for (let y = height - 1; y >= 0; y--) {
    const end = (y + 1) * width;
    for (let i = y * width; i < end; i++) {
      const v = words[i];
      if (v < OPAQUE_U32) return undefined;
      rgb[o++] = v & 0xff;
      rgb[o++] = (v >>> 8) & 0xff;
      rgb[o++] = (v >>> 16) & 0xff;
    }
  }
  return rgb;
}

/** PNG encoder settings (the build config's `render.png`). */
export interface PngSettings {
  compressionLevel: number;
  palette: boolean;
}

/** JPEG encoder settings (the build config's `render.jpeg`). */
export interface JpegSettings {
  quality: number;
}

/** WebP encoder settings (the build config's `render.webp`). */
export interface WebpSettings {
  quality: number;
  lossless: boolean;
}

/** One encoded tile. */
export interface EncodedTile extends TileId {
  data: Uint8Array;
}

/** How to slice and encode one metatile image. */
export interface SliceOptions {
  pixelRatio: number;
  formats: RasterFormat[];
  png: PngSettings;
  jpeg: JpegSettings;
  webp: WebpSettings;
  /** The style draws an opaque background everywhere: any transparent tile pixel means a partial render. */
  opaqueBackground: boolean;
}

/**
 * The image from WebGL drawing-buffer pixels (gl.readPixels: bottom row first, colour premultiplied
 * by alpha), rows top first: RGB when every pixel is opaque (all of them for a style with an opaque
 * background), else RGBA with colour divided by alpha (what PNG stores), in place.
 */
export function fromDrawingBuffer(pixels: Uint8Array, width: number, height: number): RawImage {
  const row = width * CHANNELS;
  if (pixels.length !== row * height) throw new Error(`drawing buffer has ${pixels.length} bytes, expected ${row * height} for ${width}×${height}`);
  const rgb = opaqueRgb(pixels, width, height);
  if (rgb) return { data: rgb, width, height, channels: 3 };
  const tmp = new Uint8Array(row);
  for (let top = 0, bottom = height - 1; top < bottom; top++, bottom--) {
    const a = top * row;
    const b = bottom * row;
    tmp.set(pixels.subarray(a, a + row));
    pixels.copyWithin(a, b, b + row);
    pixels.set(tmp, b);
  }
  for (let i = 3; i < pixels.length; i += CHANNELS) {
    const alpha = pixels[i];
    if (alpha === OPAQUE) continue;
    for (let c = i - 3; c < i; c++) pixels[c] = alpha === 0 ? 0 : Math.min(OPAQUE, Math.round((pixels[c] * OPAQUE) / alpha));
  }
  return { data: pixels, width, height, channels: 4 };
}

/** RGB of an RGBA buffer. */
function dropAlpha(rgba: Uint8Array): Buffer {
  const rgb = Buffer.allocUnsafe((rgba.length / CHANNELS) * 3);
  for (let i = 0, o = 0; i < rgba.length; i += CHANNELS) {
    rgb[o++] = rgba[i];
    rgb[o++] = rgba[i + 1];
    rgb[o++] = rgba[i + 2];
  }
  return rgb;
}

/** The pixels of `r` as a buffer of their own (rows copied; sharp encodes it faster than an extract). */
function cut(image: RawImage, r: { left: number; top: number; width: number; height: number }): Buffer {
  const { channels } = image;
  const rowBytes = r.width * channels;
  const out = Buffer.allocUnsafe(rowBytes * r.height);
  for (let y = 0; y < r.height; y++) {
    const from = ((r.top + y) * image.width + r.left) * channels;
    out.set(image.data.subarray(from, from + rowBytes), y * rowBytes);
  }
  return out;
}

/** True when every pixel of rect in the RGBA buffer is opaque; also counts fully transparent pixels. */
function alphaStats(raw: Uint8Array, width: number, r: { left: number; top: number; width: number; height: number }): { opaque: boolean; transparent: number } {
  let opaque = true;
  let transparent = 0;
  for (let y = r.top; y < r.top + r.height; y++) {
    let i = (y * width + r.left) * CHANNELS + 3;
    for (let x = 0; x < r.width; x++, i += CHANNELS) {
      const a = raw[i];
      if (a !== OPAQUE) {
        opaque = false;
        if (a === 0) transparent++;
      }
    }
  }
  return { opaque, transparent };
}

/**
 * The encoder of format `f` on an image of `channels` channels. PNG and WebP keep alpha (WebP lossless
 * with `exact`: colour under transparent pixels kept, so it decodes to the PNG's pixels); JPEG flattens
 * it onto white.
 */
export function encoder(f: RasterFormat, img: Sharp, channels: number, opts: EncoderSettings): Sharp {
  switch (f) {
    case 'png':
      return img.png({ compressionLevel: opts.png.compressionLevel, palette: opts.png.palette, adaptiveFiltering: false });
    case 'jpg':
      return (channels === CHANNELS ? img.flatten({ background: JPEG_BACKGROUND }) : img).jpeg({ quality: opts.jpeg.quality, mozjpeg: false });
    case 'webp':
      return img.webp({ quality: opts.webp.quality, lossless: opts.webp.lossless, exact: opts.webp.lossless });
  }
}

/** The encoders' settings (the build config's `render.png`, `render.jpeg`, `render.webp`). */
export type EncoderSettings = Pick<SliceOptions, 'png' | 'jpeg' | 'webp'>;

/**
 * Encode one RGBA image (rows top first, colour not premultiplied) in `format` as the rendered tiles
 * are: RGB when every pixel is opaque, JPEG flattened onto white. Undefined when every pixel is fully
 * transparent (nothing to store: a raster tileset's server answers 204 there). `rgba` is not kept.
 */
export async function encodeRgba(rgba: Uint8Array, width: number, height: number, format: RasterFormat, settings: EncoderSettings): Promise<Buffer | undefined> {
  const a = alphaStats(rgba, width, { left: 0, top: 0, width, height });
  if (a.transparent === width * height) return undefined;
  const channels = a.opaque ? 3 : CHANNELS;
  const pixels = a.opaque ? dropAlpha(rgba) : rgba;
  return encoder(format, sharp(pixels, { raw: { width, height, channels } }), channels, settings).toBuffer();
}

/**
 * Cut the tiles of metatile `m` out of its image (the metatile's tiles, margin already cropped) and
 * encode each in every format, all from the same pixels. Throws when the image is blank or partial.
 */
export async function sliceMetatile(image: RawImage, m: Metatile, opts: SliceOptions): Promise<Record<RasterFormat, EncodedTile[]>> {
  const want = canvasSize(m, 0, opts.pixelRatio);
  if (image.width !== want.width || image.height !== want.height) {
    throw new Error(`metatile ${m.z}/${m.x0}/${m.y0}: image is ${image.width}×${image.height}, expected ${want.width}×${want.height}`);
  }
  const out: Record<RasterFormat, EncodedTile[]> = { png: [], jpg: [], webp: [] };
  await Promise.all(
    m.tiles.map(async (t) => {
      const rect = tileRect(m, t, 0, opts.pixelRatio);
      let channels = image.channels;
      let pixels = cut(image, rect);
      if (channels === CHANNELS) {
        const a = alphaStats(pixels, rect.width, { left: 0, top: 0, width: rect.width, height: rect.height });
        if (a.transparent === rect.width * rect.height) throw new Error(`tile ${t.z}/${t.x}/${t.y}: blank (fully transparent) image`);
        if (opts.opaqueBackground && !a.opaque) throw new Error(`tile ${t.z}/${t.x}/${t.y}: partial image (transparent pixels although the style has an opaque background)`);
        if (a.opaque) {
          pixels = dropAlpha(pixels);
          channels = 3;
        }
      }
      const raw = { raw: { width: rect.width, height: rect.height, channels } };
      for (const f of opts.formats) out[f].push({ ...t, data: await encoder(f, sharp(pixels, raw), channels, opts).toBuffer() });
    }),
  );
  // Keep a deterministic order (row-major as enumerated).
  const order = new Map(m.tiles.map((t, i) => [`${t.x}/${t.y}`, i]));
  for (const f of opts.formats) out[f].sort((p, q) => order.get(`${p.x}/${p.y}`)! - order.get(`${q.x}/${q.y}`)!);
  return out;
}

/** True when the style's background layer paints every pixel opaquely (then transparency means a broken render). */
export function hasOpaqueBackground(style: { layers: Record<string, unknown>[] }): boolean {
  return style.layers.some((l) => {
    if (l.type !== 'background') return false;
    const layout = (l.layout ?? {}) as Record<string, unknown>;
    const paint = (l.paint ?? {}) as Record<string, unknown>;
    if (layout.visibility === 'none' || paint['background-pattern'] !== undefined) return false;
    const op = paint['background-opacity'];
    const color = paint['background-color'];
    const opaqueColor = color === undefined || (typeof color === 'string' && !/rgba|hsla|transparent/i.test(color));
    return (op === undefined || op === 1) && opaqueColor && (l.minzoom === undefined || l.minzoom === 0) && l.maxzoom === undefined;
  });
}
