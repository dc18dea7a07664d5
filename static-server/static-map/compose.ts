/**
 * Static map images composed from baked raster tiles with sharp, no browser: the tiles under the view
 * are decoded and copied into one region, resampled when the view's zoom falls between the baked
 * zooms (or above the deepest: upscaled), cropped, rotated for a bearing, overlaid with the paths'
 * and markers' raster and encoded. A view on the tile grid at a baked zoom is the tiles' pixels exactly.
 *
 * Tiles are stitched as RGBA; while every pixel is opaque the alpha band is dropped before
 * resampling, since with alpha libvips premultiplies and unpremultiplies in float around every resize
 * (2.5× the CPU of RGB, docs/static-map-speed.md).
 */
import sharp from 'sharp';
import { worldPixels, type Camera } from './camera.ts';
import type { DecodedTile } from './decoded-tiles.ts';
import { blendOverlay, rasteriseOverlay } from './overlay-raster.ts';
import type { OverlaySvg } from './overlay.ts';

/** Baked raster tiles of one archive. */
export interface RasterSource {
  /** Pixels per tile side (256 or 512). */
  tileSize: number;
  minzoom: number;
  maxzoom: number;
  /** The decoded tile, or null where the build has no tile. */
  tile(z: number, x: number, y: number): Promise<DecodedTile | null>;
}

/** Raw pixels: RGB when every pixel is opaque, else RGBA (straight alpha). */
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

/** Copy a decoded tile into the RGBA region at (left, top), clipped. */
function blit(region: Buffer, rw: number, rh: number, tile: Buffer, size: number, left: number, top: number): void {
  const x0 = Math.max(0, left), x1 = Math.min(rw, left + size);
  if (x1 <= x0) return;
  for (let row = Math.max(0, top); row < Math.min(rh, top + size); row++) {
    const src = ((row - top) * size + (x0 - left)) * 4;
    tile.copy(region, (row * rw + x0) * 4, src, src + (x1 - x0) * 4);
  }
}

/** The plan's rectangle of source pixels from the tiles, RGBA, and whether every pixel is opaque (pixels without a tile are transparent). */
export async function stitchRegion(src: RasterSource, plan: RegionPlan): Promise<{ data: Buffer; width: number; height: number; opaque: boolean }> {
  const { tz, x0, y0, x1, y1 } = plan;
  const T = src.tileSize;
  const n = 2 ** tz;
  const rw = x1 - x0, rh = y1 - y0;
  const data = Buffer.alloc(rw * rh * 4);
  let opaque = true;
  const jobs: Promise<void>[] = [];
  for (let ty = Math.floor(y0 / T); ty <= Math.floor((y1 - 1) / T); ty++) {
    for (let tx = Math.floor(x0 / T); tx <= Math.floor((x1 - 1) / T); tx++) {
      if (ty < 0 || ty >= n) {
        opaque = false;
        continue;
      }
      const wrapped = ((tx % n) + n) % n;
      jobs.push(
        src.tile(tz, wrapped, ty).then((tile) => {
          if (!tile) {
            opaque = false;
            return;
          }
          if (tile.size !== T) throw new Error(`raster tile ${tz}/${wrapped}/${ty} is ${tile.size} px, expected ${T}`);
          if (tile.alpha) opaque = false;
          blit(data, rw, rh, tile.data, T, tx * T - x0, ty * T - y0);
        }),
      );
    }
  }
  await Promise.all(jobs);
  return { data, width: rw, height: rh, opaque };
}

/**
 * Kernels scaling down (between baked zooms) and up (above the deepest). Up: bilinear, as MapLibre
 * draws overzoomed raster tiles; half the CPU of bicubic (libvips upsizes with a non-separable affine)
 * for a mean difference under 0.1 of 255 (docs/static-map-speed.md).
 */
const DOWN_KERNEL = 'lanczos3';
const UP_KERNEL = 'linear';

/** The view's `w`×`h` pixels out of the stitched region: RGB when opaque, resampled by the plan's factor and cropped. */
export async function resampleRegion(region: Awaited<ReturnType<typeof stitchRegion>>, plan: RegionPlan): Promise<RawImage> {
  const { f, w, h } = plan;
  const raw = { raw: { width: region.width, height: region.height, channels: 4 as const } };
  // Dropped in a pipeline of its own: in the resizing one sharp would premultiply first.
  const rgb = region.opaque ? await sharp(region.data, raw).removeAlpha().raw().toBuffer() : undefined;
  const channels = rgb ? 3 : 4;
  if (plan.exact) return { data: rgb ?? region.data, width: w, height: h, channels };
  const sw = Math.round(region.width * f), sh = Math.round(region.height * f);
  const left = Math.min(sw - w, Math.max(0, Math.round((plan.sxL - plan.x0) * f)));
  const top = Math.min(sh - h, Math.max(0, Math.round((plan.syT - plan.y0) * f)));
  const data = await sharp(rgb ?? region.data, { raw: { width: region.width, height: region.height, channels } })
    .resize(sw, sh, { fit: 'fill', kernel: f < 1 ? DOWN_KERNEL : UP_KERNEL })
    .extract({ left, top, width: w, height: h })
    .raw()
    .toBuffer();
  return { data, width: w, height: h, channels };
}

/** The view's pixels, `w`×`h` around the camera's centre, without rotation or overlays, and the zoom of the tiles it was made from. */
async function region(cam: Camera, src: RasterSource, w: number, h: number): Promise<RawImage & { sourceZoom: number }> {
  const plan = planRegion(cam, src, w, h);
  const image = await resampleRegion(await stitchRegion(src, plan), plan);
  return { ...image, sourceZoom: plan.tz };
}

/** The image's base pixels (tiles, resampled, rotated by the bearing), before overlays. */
export async function composeBase(cam: Camera, src: RasterSource): Promise<RawImage & { sourceZoom: number }> {
  if (cam.bearing % 360 === 0) return region(cam, src, cam.width, cam.height);
  // Rotate a square covering the image's diagonal about its centre, then crop the image out of it.
  const d = Math.ceil(Math.hypot(cam.width, cam.height)) + 2;
  const square = await region(cam, src, d, d);
  const rotated = await sharp(square.data, { raw: { width: d, height: d, channels: square.channels } })
    .rotate(-cam.bearing, { background: { r: 0, g: 0, b: 0, alpha: 0 } })
    .raw()
    .toBuffer({ resolveWithObject: true });
  const left = Math.floor((rotated.info.width - cam.width) / 2);
  const top = Math.floor((rotated.info.height - cam.height) / 2);
  const data = await sharp(rotated.data, { raw: { width: rotated.info.width, height: rotated.info.height, channels: square.channels } })
    .extract({ left, top, width: cam.width, height: cam.height })
    .raw()
    .toBuffer();
  return { ...square, data, width: cam.width, height: cam.height };
}

/** JPEG quality of static images. */
const JPEG_QUALITY = 90;
/** zlib level of static images: encoding dominates an image's cost, and level 3 is ~2.5x faster than 6 for a few % more bytes. */
const PNG_COMPRESSION = 3;

/** Encode the base with the overlay rasterised and blended on top (into the base's buffer). */
export async function encodeImage(base: RawImage, overlay: OverlaySvg | undefined, format: 'png' | 'jpg'): Promise<Buffer> {
  if (overlay) blendOverlay(base, await rasteriseOverlay(overlay));
  const img = sharp(base.data, { raw: { width: base.width, height: base.height, channels: base.channels } });
  if (format === 'jpg') return img.flatten({ background: '#ffffff' }).jpeg({ quality: JPEG_QUALITY }).toBuffer();
  return img.png({ compressionLevel: PNG_COMPRESSION }).toBuffer();
}
