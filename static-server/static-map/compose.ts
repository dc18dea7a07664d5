/**
 * Static map images composed from baked raster tiles with sharp, no browser: the tiles under the view
 * are decoded and copied into one region, resampled when the view's zoom falls between the baked
 * zooms (or above the deepest: upscaled), cropped, rotated for a bearing, overlaid with the paths'
 * and markers' SVG and encoded. A view on the tile grid at a baked zoom is the tiles' pixels exactly.
 */
import sharp from 'sharp';
import { worldPixels, type Camera } from './camera.ts';
import type { DecodedTile } from './decoded-tiles.ts';

/** Baked raster tiles of one archive. */
export interface RasterSource {
  /** Pixels per tile side (256 or 512). */
  tileSize: number;
  minzoom: number;
  maxzoom: number;
  /** The decoded tile, or null where the build has no tile. */
  tile(z: number, x: number, y: number): Promise<DecodedTile | null>;
}

/** Raw RGBA pixels. */
export interface RawImage {
  data: Buffer;
  width: number;
  height: number;
  /** False when every pixel is opaque (every tile present and without alpha). */
  alpha: boolean;
}

/** Most source pixels stitched for one image (64 MB of RGBA); beyond it a shallower source zoom is read. */
const MAX_REGION_PX = 16 * 1024 * 1024;
/** Zoom differences below this are treated as none (floating point noise). */
const ZOOM_EPSILON = 1e-9;
const RGBA = 4;

/** The source zoom whose tiles are read for a view drawn with `worldPx` pixels per world. */
export function sourceZoom(src: Pick<RasterSource, 'tileSize' | 'minzoom' | 'maxzoom'>, worldPx: number): number {
  const z = Math.ceil(Math.log2(worldPx / src.tileSize) - ZOOM_EPSILON);
  return Math.min(src.maxzoom, Math.max(src.minzoom, z));
}

/** Copy a decoded tile into the region at (left, top), clipped. */
function blit(region: Buffer, rw: number, rh: number, tile: Buffer, size: number, left: number, top: number): void {
  const x0 = Math.max(0, left), x1 = Math.min(rw, left + size);
  if (x1 <= x0) return;
  for (let row = Math.max(0, top); row < Math.min(rh, top + size); row++) {
    const src = ((row - top) * size + (x0 - left)) * RGBA;
    tile.copy(region, (row * rw + x0) * RGBA, src, src + (x1 - x0) * RGBA);
  }
}

/**
 * The view's pixels, `w`×`h` around the camera's centre, without rotation or overlays, and the zoom
 * of the tiles it was made from.
 */
async function region(cam: Camera, src: RasterSource, w: number, h: number): Promise<RawImage & { sourceZoom: number }> {
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
  // Left/top edge of the view in source pixels; one pixel of margin for resampling.
  const sxL = cam.cx * T * n - w / 2 / f;
  const syT = cam.cy * T * n - h / 2 / f;
  const x0 = exact ? Math.round(sxL) : Math.floor(sxL) - 1;
  const y0 = exact ? Math.round(syT) : Math.floor(syT) - 1;
  const x1 = exact ? x0 + w : Math.ceil(sxL + w / f) + 1;
  const y1 = exact ? y0 + h : Math.ceil(syT + h / f) + 1;
  const rw = x1 - x0, rh = y1 - y0;
  const data = Buffer.alloc(rw * rh * RGBA);
  let alpha = false;
  const jobs: Promise<void>[] = [];
  for (let ty = Math.floor(y0 / T); ty <= Math.floor((y1 - 1) / T); ty++) {
    for (let tx = Math.floor(x0 / T); tx <= Math.floor((x1 - 1) / T); tx++) {
      if (ty < 0 || ty >= n) {
        alpha = true;
        continue;
      }
      const wrapped = ((tx % n) + n) % n;
      jobs.push(
        (async () => {
          const tile = await src.tile(tz, wrapped, ty);
          if (!tile) {
            alpha = true;
            return;
          }
          if (tile.size !== T) throw new Error(`raster tile ${tz}/${wrapped}/${ty} is ${tile.size} px, expected ${T}`);
          if (tile.alpha) alpha = true;
          blit(data, rw, rh, tile.data, T, tx * T - x0, ty * T - y0);
        })(),
      );
    }
  }
  await Promise.all(jobs);
  if (exact) return { data, width: w, height: h, alpha, sourceZoom: tz };
  const sw = Math.round(rw * f), sh = Math.round(rh * f);
  const left = Math.min(sw - w, Math.max(0, Math.round((sxL - x0) * f)));
  const top = Math.min(sh - h, Math.max(0, Math.round((syT - y0) * f)));
  const out = await sharp(data, { raw: { width: rw, height: rh, channels: RGBA } })
    .resize(sw, sh, { fit: 'fill', kernel: f < 1 ? 'lanczos3' : 'cubic' })
    .extract({ left, top, width: w, height: h })
    .raw()
    .toBuffer();
  return { data: out, width: w, height: h, alpha, sourceZoom: tz };
}

/** The image's base pixels (tiles, resampled, rotated by the bearing), before overlays. */
export async function composeBase(cam: Camera, src: RasterSource): Promise<RawImage & { sourceZoom: number }> {
  if (cam.bearing % 360 === 0) return region(cam, src, cam.width, cam.height);
  // Rotate a square covering the image's diagonal about its centre, then crop the image out of it.
  const d = Math.ceil(Math.hypot(cam.width, cam.height)) + 2;
  const square = await region(cam, src, d, d);
  const rotated = await sharp(square.data, { raw: { width: d, height: d, channels: RGBA } })
    .rotate(-cam.bearing, { background: { r: 0, g: 0, b: 0, alpha: 0 } })
    .raw()
    .toBuffer({ resolveWithObject: true });
  const left = Math.floor((rotated.info.width - cam.width) / 2);
  const top = Math.floor((rotated.info.height - cam.height) / 2);
  const data = await sharp(rotated.data, { raw: { width: rotated.info.width, height: rotated.info.height, channels: RGBA } })
    .extract({ left, top, width: cam.width, height: cam.height })
    .raw()
    .toBuffer();
  return { ...square, data, width: cam.width, height: cam.height };
}

/** JPEG quality of static images. */
const JPEG_QUALITY = 90;
/** zlib level of static images: encoding dominates an image's cost, and level 3 is ~2.5x faster than 6 for a few % more bytes. */
const PNG_COMPRESSION = 3;

/** Encode the base with the overlay SVG on top. */
export function encodeImage(base: RawImage, overlay: Buffer | undefined, format: 'png' | 'jpg'): Promise<Buffer> {
  let img = sharp(base.data, { raw: { width: base.width, height: base.height, channels: RGBA } });
  if (overlay) img = img.composite([{ input: overlay, left: 0, top: 0 }]);
  if (format === 'jpg') return img.flatten({ background: '#ffffff' }).jpeg({ quality: JPEG_QUALITY }).toBuffer();
  return (base.alpha ? img : img.removeAlpha()).png({ compressionLevel: PNG_COMPRESSION }).toBuffer();
}
