import { endianness } from 'node:os';
import sharp from 'sharp';
import type { RenderConfig } from '../config/render.ts';
import { canvasSize, tileRect, type Metatile } from './metatiles.ts';
import type { JournalTile } from './journal.ts';

/** Raster formats a style is rendered to. */
export type RasterFormat = 'png' | 'jpg';

/** RGBA channels of a rendered canvas. */
export const CHANNELS = 4;

/** A rendered canvas: RGBA rows, top row first, not premultiplied. */
export interface RawImage {
  data: Uint8Array;
  width: number;
  height: number;
  /** Every pixel is known to be opaque (skips the per-tile alpha scan). */
  opaque?: boolean;
}

/** An opaque RGBA pixel read as a little-endian uint32 is ≥ this (alpha is the high byte). */
const OPAQUE_U32 = 0xff000000;
const LITTLE_ENDIAN = endianness() === 'LE';

/** True when every pixel of the RGBA buffer is opaque (one pass over 32-bit words when aligned). */
function allOpaque(pixels: Uint8Array): boolean {
  if (LITTLE_ENDIAN && pixels.byteOffset % Uint32Array.BYTES_PER_ELEMENT === 0) {
    const words = new Uint32Array(pixels.buffer, pixels.byteOffset, pixels.length / CHANNELS);
    for (let i = 0; i < words.length; i++) if (words[i] < OPAQUE_U32) return false;
    return true;
  }
  for (let i = 3; i < pixels.length; i += CHANNELS) if (pixels[i] !== OPAQUE) return false;
  return true;
}
/** Fully opaque alpha. */
const OPAQUE = 255;
/** JPEG has no alpha: transparent pixels are flattened onto white. */
const JPEG_BACKGROUND = '#ffffff';

/** How to slice and encode one metatile image. */
export interface SliceOptions {
  margin: number;
  pixelRatio: number;
  formats: RasterFormat[];
  png: RenderConfig['png'];
  jpeg: RenderConfig['jpeg'];
  /** The style draws an opaque background everywhere: any transparent tile pixel means a partial render. */
  opaqueBackground: boolean;
}

/**
 * The canvas image from WebGL drawing-buffer pixels (gl.readPixels: bottom row first, colour
 * premultiplied by alpha): rows flipped top-first and colour divided by alpha (what PNG stores),
 * in place. Opaque pixels (all of them for a style with an opaque background) are only moved.
 */
export function fromDrawingBuffer(pixels: Uint8Array, width: number, height: number): RawImage {
  const row = width * CHANNELS;
  if (pixels.length !== row * height) throw new Error(`drawing buffer has ${pixels.length} bytes, expected ${row * height} for ${width}×${height}`);
  const tmp = new Uint8Array(row);
  for (let top = 0, bottom = height - 1; top < bottom; top++, bottom--) {
    const a = top * row;
    const b = bottom * row;
    tmp.set(pixels.subarray(a, a + row));
    pixels.copyWithin(a, b, b + row);
    pixels.set(tmp, b);
  }
  const opaque = allOpaque(pixels);
  if (!opaque) {
    for (let i = 3; i < pixels.length; i += CHANNELS) {
      const alpha = pixels[i];
      if (alpha === OPAQUE) continue;
      for (let c = i - 3; c < i; c++) pixels[c] = alpha === 0 ? 0 : Math.min(OPAQUE, Math.round((pixels[c] * OPAQUE) / alpha));
    }
  }
  return { data: pixels, width, height, opaque };
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
 * Cut the tiles of metatile `m` out of its rendered canvas and encode each in every format, all
 * from the same pixels. Throws when the image is blank or partial.
 */
export async function sliceMetatile(image: RawImage, m: Metatile, opts: SliceOptions): Promise<Record<RasterFormat, JournalTile[]>> {
  const raw = image.data;
  const info = image;
  const want = canvasSize(m, opts.margin, opts.pixelRatio);
  if (info.width !== want.width || info.height !== want.height) {
    throw new Error(`metatile ${m.z}/${m.x0}/${m.y0}: canvas is ${info.width}×${info.height}, expected ${want.width}×${want.height}`);
  }
  const out: Record<RasterFormat, JournalTile[]> = { png: [], jpg: [] };
  await Promise.all(
    m.tiles.map(async (t) => {
      const rect = tileRect(m, t, opts.margin, opts.pixelRatio);
      const a = image.opaque ? { opaque: true, transparent: 0 } : alphaStats(raw, info.width, rect);
      if (a.transparent === rect.width * rect.height) throw new Error(`tile ${t.z}/${t.x}/${t.y}: blank (fully transparent) image`);
      if (opts.opaqueBackground && !a.opaque) throw new Error(`tile ${t.z}/${t.x}/${t.y}: partial image (transparent pixels although the style has an opaque background)`);
      const base = () => sharp(raw, { raw: { width: info.width, height: info.height, channels: CHANNELS } }).extract(rect);
      for (const f of opts.formats) {
        let img = base();
        if (f === 'png') {
          if (a.opaque) img = img.removeAlpha();
          img = img.png({ compressionLevel: opts.png.compressionLevel, palette: opts.png.palette, adaptiveFiltering: false });
        } else {
          img = img.flatten({ background: JPEG_BACKGROUND }).jpeg({ quality: opts.jpeg.quality, mozjpeg: false });
        }
        out[f].push({ ...t, data: await img.toBuffer() });
      }
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
