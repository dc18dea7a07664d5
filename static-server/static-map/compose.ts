/**
 * Static map images composed from baked raster tiles by sharp/libvips, no browser: the tiles under
 * the view are copied into one region (rows of decoded pixels, as they are), and one sharp pipeline
 * resamples it when the view's zoom falls between the baked zooms (or above the deepest: upscaled),
 * crops the view, rotates it for a bearing, draws the overlays (static-map/overlay.ts's layers: SVGs
 * drawn by librsvg inside sharp, and sprite icons) and encodes PNG, JPEG or WebP. A view on the tile grid at a baked zoom is the
 * tiles' pixels exactly. Where the build has no tile the image is transparent (white in a JPEG).
 * docs/static-map-speed.md has the design and its figures.
 */
import sharp, { type Sharp } from 'sharp';
import type { RasterFormat } from '../../lib/raster-encode.ts';
import { worldPixels, type Camera } from './camera.ts';
import type { DecodedTile } from './decoded-tiles.ts';
import type { OverlayLayer } from './overlay.ts';
import { pixelPool } from './pixel-pool.ts';

/** Baked raster tiles of one archive. */
export interface RasterSource {
  /** Pixels per tile side (256 or 512). */
  tileSize: number;
  minzoom: number;
  maxzoom: number;
  /** The decoded tile (with an alpha band when `alpha`), or null where the build has no tile. */
  tile(z: number, x: number, y: number, alpha?: boolean): Promise<DecodedTile | null>;
}

/** Raw pixels: `channels` bytes a pixel (RGB, or RGBA with straight alpha), rows top first. */
export interface RawImage {
  data: Buffer;
  width: number;
  height: number;
  channels: 3 | 4;
}

/** Most source pixels stitched for one image (64 MB of RGBA); beyond it a shallower source zoom is read. */
const MAX_REGION_PX = 16 * 1024 * 1024;
/** Zoom differences below this are treated as none (floating point noise). */
const ZOOM_EPSILON = 1e-9;

/** The source zoom whose tiles are read for a view drawn with `worldPx` pixels per world. */
export function sourceZoom(src: Pick<RasterSource, 'tileSize' | 'minzoom' | 'maxzoom'>, worldPx: number): number {
  const z = Math.ceil(Math.log2(worldPx / src.tileSize) - ZOOM_EPSILON);
  return Math.min(src.maxzoom, Math.max(src.minzoom, z));
}

/** Which source pixels a `w`×`h` view around the camera's centre reads, and how they are scaled. */
export interface RegionPlan {
  /** Zoom of the tiles read. */
  tz: number;
  /** Image pixels per source pixel. */
  f: number;
  /** True on the tile grid at a baked zoom: the region is the image, no resampling. */
  exact: boolean;
  /** The stitched rectangle in world source pixels (x1, y1 exclusive). */
  x0: number;
  y0: number;
  x1: number;
  y1: number;
  /** Left/top edge of the view in world source pixels. */
  sxL: number;
  syT: number;
  w: number;
  h: number;
}

export function planRegion(cam: Camera, src: RasterSource, w: number, h: number): RegionPlan {
  const worldPx = worldPixels(cam);
  let tz = sourceZoom(src, worldPx);
  const T = src.tileSize;
  for (;;) {
    const f = worldPx / (T * 2 ** tz);
    if (tz <= src.minzoom || (w / f + 2) * (h / f + 2) <= MAX_REGION_PX) break;
    tz--;
  }
  const n = 2 ** tz;
  const f = worldPx / (T * n);
  const exact = Math.abs(f - 1) < ZOOM_EPSILON;
  const sxL = cam.cx * T * n - w / 2 / f;
  const syT = cam.cy * T * n - h / 2 / f;
  // One pixel of margin for resampling.
  const x0 = exact ? Math.round(sxL) : Math.floor(sxL) - 1;
  const y0 = exact ? Math.round(syT) : Math.floor(syT) - 1;
  const x1 = exact ? x0 + w : Math.ceil(sxL + w / f) + 1;
  const y1 = exact ? y0 + h : Math.ceil(syT + h / f) + 1;
  return { tz, f, exact, x0, y0, x1, y1, sxL, syT, w, h };
}

/**
 * The tiles under the plan's rectangle (only those are read), copied into one image: transparent where
 * the build has none. Its pixels come from the pixel pool: hand them back (`pixelPool.release`) once
 * nothing reads them.
 */
export async function stitchRegion(src: RasterSource, plan: RegionPlan): Promise<RawImage> {
  const { tz, x0, y0, x1, y1 } = plan;
  const T = src.tileSize;
  const n = 2 ** tz;
  const at: { tx: number; ty: number; y: number; x: number }[] = [];
  for (let ty = Math.floor(y0 / T); ty <= Math.floor((y1 - 1) / T); ty++) {
    for (let tx = Math.floor(x0 / T); tx <= Math.floor((x1 - 1) / T); tx++) at.push({ tx, ty, x: ((tx % n) + n) % n, y: ty });
  }
  const read = (t: (typeof at)[number], alpha: boolean) =>
    t.y < 0 || t.y >= n
      ? Promise.resolve(null)
      : src.tile(tz, t.x, t.y, alpha).then((d) => {
          if (d && d.size !== T) throw new Error(`raster tile ${tz}/${t.x}/${t.y} is ${d.size} px, expected ${T}`);
          return d;
        });
  let tiles = await Promise.all(at.map((t) => read(t, false)));
  // Any transparency (a missing tile, a tile with alpha): the region is RGBA, its RGB tiles with an alpha band.
  const channels = tiles.every((t) => t?.channels === 3) ? 3 : 4;
  if (channels === 4) tiles = await Promise.all(tiles.map((t, i) => (t?.channels === 3 ? read(at[i], true) : t)));
  const width = x1 - x0, height = y1 - y0;
  // Every byte is written below: a tile's pixels, or 0 (transparent) where the build has none.
  const data = pixelPool.acquire(width * height * channels);
  tiles.forEach((tile, i) => {
    const left = at[i].tx * T - x0, top = at[i].ty * T - y0;
    const c0 = Math.max(0, left), c1 = Math.min(width, left + T);
    for (let row = Math.max(0, top); row < Math.min(height, top + T); row++) {
      const dst = (row * width + c0) * channels;
      if (tile) tile.data.copy(data, dst, ((row - top) * T + c0 - left) * channels, ((row - top) * T + c1 - left) * channels);
      else data.fill(0, dst, dst + (c1 - c0) * channels);
    }
  });
  return { data, width, height, channels };
}

/**
 * Kernels scaling down (between baked zooms) and up (above the deepest). Up: bilinear, as MapLibre
 * draws overzoomed raster tiles.
 */
const DOWN_KERNEL = 'lanczos3';
const UP_KERNEL = 'linear';

/** The view's `plan.w`×`plan.h` pixels of the stitched region, as a sharp pipeline (resampled by the plan's factor and cropped). */
export function regionView(region: RawImage, plan: RegionPlan): Sharp {
  const s = sharp(region.data, { raw: { width: region.width, height: region.height, channels: region.channels } });
  if (plan.exact) return s;
  const { f, w, h } = plan;
  const sw = Math.round(region.width * f), sh = Math.round(region.height * f);
  const left = Math.min(sw - w, Math.max(0, Math.round((plan.sxL - plan.x0) * f)));
  const top = Math.min(sh - h, Math.max(0, Math.round((plan.syT - plan.y0) * f)));
  return s.resize(sw, sh, { fit: 'fill', kernel: f < 1 ? DOWN_KERNEL : UP_KERNEL }).extract({ left, top, width: w, height: h });
}

/** JPEG quality of static images. */
const JPEG_QUALITY = 90;
/** WebP quality of static images and upscaled tiles (lossy, like their JPEG; alpha kept). */
const WEBP_QUALITY = 90;
/** zlib level of static PNGs (docs/static-map-speed.md: level against CPU and bytes). */
export const PNG_LEVEL = 3;
/** JPEG has no alpha: transparent parts are flattened onto white. */
const JPEG_BACKGROUND = '#ffffff';

/**
 * The rest of an image's pipeline: the overlay layers drawn over it in order (SVGs by librsvg, icons
 * as they are, each at its box's place), then encoded. sharp flattens a JPEG's transparency before the
 * overlays, which is the same as after them ("over" white composes with "over" the image).
 */
function finish(s: Sharp, channels: 3 | 4, overlays: readonly OverlayLayer[], format: RasterFormat): Promise<Buffer> {
  if (format === 'jpg' && channels === 4) s = s.flatten({ background: JPEG_BACKGROUND });
  if (overlays.length > 0) {
    s = s.composite(overlays.map((o) => ({ input: o.input, left: o.left, top: o.top, ...(o.raw ? { raw: o.raw } : {}) })));
    // Compositing adds an alpha band; an opaque image keeps none.
    if (channels === 3 || format === 'jpg') s = s.removeAlpha();
  }
  return (format === 'png' ? s.png({ compressionLevel: PNG_LEVEL }) : format === 'webp' ? s.webp({ quality: WEBP_QUALITY }) : s.jpeg({ quality: JPEG_QUALITY })).toBuffer();
}

/** Encode raw pixels with the overlay layers drawn on top. */
export function encodeImage(image: RawImage, overlays: readonly OverlayLayer[], format: RasterFormat): Promise<Buffer> {
  return finish(sharp(image.data, { raw: { width: image.width, height: image.height, channels: image.channels } }), image.channels, overlays, format);
}

/** An encoded image and the zoom of the tiles it was made from. */
export interface ComposedImage {
  bytes: Buffer;
  sourceZoom: number;
}

/** The image of a camera over the source's tiles, with the overlay layers (image pixels) drawn on top, encoded. */
export async function composeImage(cam: Camera, src: RasterSource, overlays: readonly OverlayLayer[], format: RasterFormat): Promise<ComposedImage> {
  if (cam.bearing % 360 === 0) {
    const plan = planRegion(cam, src, cam.width, cam.height);
    const region = await stitchRegion(src, plan);
    try {
      return { bytes: await finish(regionView(region, plan), region.channels, overlays, format), sourceZoom: plan.tz };
    } finally {
      pixelPool.release(region.data);
    }
  }
  // Rotate a square covering the image's diagonal about its centre, then crop the image out of it.
  // The corners the rotation uncovers are transparent (white in a JPEG).
  const d = Math.ceil(Math.hypot(cam.width, cam.height)) + 2;
  const plan = planRegion(cam, src, d, d);
  const region = await stitchRegion(src, plan);
  const square = await regionView(region, plan)
    .ensureAlpha()
    .raw()
    .toBuffer()
    .finally(() => pixelPool.release(region.data));
  const rotated = sharp(square, { raw: { width: d, height: d, channels: 4 } }).rotate(-cam.bearing, { background: { r: 0, g: 0, b: 0, alpha: 0 } });
  const { data, info } = await rotated.raw().toBuffer({ resolveWithObject: true });
  const left = Math.floor((info.width - cam.width) / 2);
  const top = Math.floor((info.height - cam.height) / 2);
  const image = sharp(data, { raw: { width: info.width, height: info.height, channels: 4 } }).extract({ left, top, width: cam.width, height: cam.height });
  return { bytes: await finish(image, 4, overlays, format), sourceZoom: plan.tz };
}
