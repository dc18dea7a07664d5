/**
 * Static map images composed from baked raster tiles with sharp, no browser: the tiles under the view
 * are decoded and copied into one region, resampled when the view's zoom falls between the baked
 * zooms (or above the deepest: upscaled), cropped, rotated for a bearing, overlaid with the paths'
 * and markers' raster and encoded. A view on the tile grid at a baked zoom is the tiles' pixels exactly.
 *
 * Pixels are premultiplied RGB and an alpha plane (none while every pixel is opaque); only the RGB is
 * resampled (natively, lib/resample-fast.ts, as libvips would; RGBA made libvips premultiply in float,
 * 2.5× the CPU), and the alpha of missing tiles follows from the tile grid (tile-mask.ts).
 * Pixels without a tile are 0 in both planes. PNG output comes from lib/png-fast.ts, which takes the
 * planes as they are and divides colour by alpha while filtering. docs/static-map-speed.md has the measurements.
 */
import sharp, { type Sharp } from 'sharp';
import { encodePng } from '../../lib/png-fast.ts';
import type { RasterFormat } from '../../lib/raster-encode.ts';
import { resizeLanczos3, resizeLinear } from '../../lib/resample-fast.ts';
import type { KernelAxis } from '../../lib/resample-kernel.ts';
import { worldPixels, type Camera } from './camera.ts';
import type { DecodedTile } from './decoded-tiles.ts';
import { drawOverlay } from './overlay-raster.ts';
import type { OverlaySvg } from './overlay.ts';
import { pixelPool } from './pixel-pool.ts';
import { resampledMask, type MaskKernel, type TileMask } from './tile-mask.ts';

/** Baked raster tiles of one archive. */
export interface RasterSource {
  /** Pixels per tile side (256 or 512). */
  tileSize: number;
  minzoom: number;
  maxzoom: number;
  /** The decoded tile, or null where the build has no tile. */
  tile(z: number, x: number, y: number): Promise<DecodedTile | null>;
}

/** Raw pixels: RGB premultiplied by alpha, and the alpha plane (null when every pixel is opaque). */
export interface RawImage {
  rgb: Buffer;
  alpha: Buffer | null;
  width: number;
  height: number;
}

/** A stitched region: its pixels, which tiles are present, and whether a present tile has alpha of its own. */
export interface StitchedRegion extends RawImage {
  mask: TileMask;
  translucentTiles: boolean;
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

/** Copy a decoded tile into the region at (left, top), clipped; no tile (null) clears its pixels to transparent. */
function blit(region: RawImage, tile: DecodedTile | null, size: number, left: number, top: number): void {
  const { width: rw, height: rh } = region;
  const x0 = Math.max(0, left), x1 = Math.min(rw, left + size);
  if (x1 <= x0) return;
  for (let row = Math.max(0, top); row < Math.min(rh, top + size); row++) {
    const src = (row - top) * size + (x0 - left);
    const dst = row * rw + x0;
    if (tile) tile.rgb.copy(region.rgb, dst * 3, src * 3, (src + x1 - x0) * 3);
    else region.rgb.fill(0, dst * 3, (dst + x1 - x0) * 3);
    if (!region.alpha) continue;
    if (tile?.alpha) tile.alpha.copy(region.alpha, dst, src, src + x1 - x0);
    else region.alpha.fill(tile ? 255 : 0, dst, dst + x1 - x0);
  }
}

/** Region-relative edges of the tiles spanning source pixels a … b (tile size T), clipped to the region. */
function edges(a: number, b: number, T: number): number[] {
  const out = [0];
  for (let t = (Math.floor(a / T) + 1) * T; t < b; t += T) out.push(t - a);
  out.push(b - a);
  return out;
}

/** The tiles under a plan's rectangle (row-major, `cols` a row; null where the build has none), read but not copied. */
export interface TileRegion {
  tiles: (DecodedTile | null)[];
  cols: number;
  /** Tile size, and where the rectangle starts in the first tile. */
  tileSize: number;
  left: number;
  top: number;
  width: number;
  height: number;
  mask: TileMask;
  /** Every pixel is opaque: every tile is present and has no alpha of its own. */
  opaque: boolean;
  translucentTiles: boolean;
}

/** The tiles under the plan's rectangle of source pixels. */
export async function regionTiles(src: RasterSource, plan: RegionPlan): Promise<TileRegion> {
  const { tz, x0, y0, x1, y1 } = plan;
  const T = src.tileSize;
  const n = 2 ** tz;
  const jobs: Promise<DecodedTile | null>[] = [];
  const tx0 = Math.floor(x0 / T), ty0 = Math.floor(y0 / T);
  const cols = Math.floor((x1 - 1) / T) - tx0 + 1;
  for (let ty = ty0; ty <= Math.floor((y1 - 1) / T); ty++) {
    for (let tx = tx0; tx < tx0 + cols; tx++) {
      const wrapped = ((tx % n) + n) % n;
      jobs.push(
        ty < 0 || ty >= n
          ? Promise.resolve(null)
          : src.tile(tz, wrapped, ty).then((t) => {
              if (t && t.size !== T) throw new Error(`raster tile ${tz}/${wrapped}/${ty} is ${t.size} px, expected ${T}`);
              return t;
            }),
      );
    }
  }
  const tiles = await Promise.all(jobs);
  return {
    tiles,
    cols,
    tileSize: T,
    left: x0 - tx0 * T,
    top: y0 - ty0 * T,
    width: x1 - x0,
    height: y1 - y0,
    mask: { colEdges: edges(x0, x1, T), rowEdges: edges(y0, y1, T), present: tiles.map((t) => t !== null) },
    opaque: tiles.every((t) => t && !t.alpha),
    translucentTiles: tiles.some((t) => t?.alpha),
  };
}

/** The region's pixels copied into one image (transparent where the build has no tile). */
export function stitch(r: TileRegion): StitchedRegion {
  const { width: rw, height: rh, tileSize: T } = r;
  // Every pixel is written: copied from its tile, or 0 (transparent) where the build has none.
  const region: StitchedRegion = {
    rgb: pixelPool.acquire(rw * rh * 3),
    alpha: r.opaque ? null : pixelPool.acquire(rw * rh),
    width: rw,
    height: rh,
    mask: r.mask,
    translucentTiles: r.translucentTiles,
  };
  r.tiles.forEach((t, i) => blit(region, t, T, (i % r.cols) * T - r.left, Math.floor(i / r.cols) * T - r.top));
  return region;
}

/** The plan's rectangle of source pixels from the tiles, stitched (transparent where the build has none). */
export async function stitchRegion(src: RasterSource, plan: RegionPlan): Promise<StitchedRegion> {
  return stitch(await regionTiles(src, plan));
}

/** Hand an image's planes back to the pixel pool: nothing may read them afterwards. */
function releaseImage(img: RawImage): void {
  pixelPool.release(img.rgb);
  pixelPool.release(img.alpha);
}

/** Run one sharp pipeline over both planes of an image (alpha as a one-band image, which sharp would otherwise output as sRGB); `img`'s planes are released. */
async function perPlane(img: RawImage, op: (s: Sharp) => Sharp): Promise<RawImage> {
  const run = (data: Buffer, channels: 1 | 3) => {
    const s = op(sharp(data, { raw: { width: img.width, height: img.height, channels } }));
    return (channels === 1 ? s.toColourspace('b-w') : s).raw().toBuffer({ resolveWithObject: true });
  };
  const [rgb, alpha] = await Promise.all([run(img.rgb, 3), img.alpha ? run(img.alpha, 1) : null]);
  releaseImage(img);
  return { rgb: rgb.data, alpha: alpha?.data ?? null, width: rgb.info.width, height: rgb.info.height };
}

/**
 * Kernels scaling down (between baked zooms) and up (above the deepest). Up: bilinear, as MapLibre
 * draws overzoomed raster tiles; half the CPU of bicubic (libvips upsizes with a non-separable affine)
 * for a mean difference under 1 of 255, slightly softer hard edges (docs/static-map-speed.md).
 */
const DOWN_KERNEL: MaskKernel = 'lanczos3';
const UP_KERNEL: MaskKernel = 'linear';

/** How a region is resampled for a plan: scaled to `sw`×`sh` (as sharp's resize would), the view cropped at (left, top); per axis. */
export function resampling(region: { width: number; height: number }, plan: RegionPlan): { sw: number; sh: number; left: number; top: number; x: KernelAxis; y: KernelAxis } {
  const { f, w, h } = plan;
  const sw = Math.round(region.width * f), sh = Math.round(region.height * f);
  const left = Math.min(sw - w, Math.max(0, Math.round((plan.sxL - plan.x0) * f)));
  const top = Math.min(sh - h, Math.max(0, Math.round((plan.syT - plan.y0) * f)));
  return { sw, sh, left, top, x: { n: region.width, scale: sw / region.width, offset: left, m: w }, y: { n: region.height, scale: sh / region.height, offset: top, m: h } };
}

/**
 * The view's `w`×`h` pixels out of the region's tiles: resampled by the plan's factor and cropped. The
 * native resamplers read the tiles in place; the rest (exact views, sharp's resampling, tiles with alpha
 * of their own) stitch them first. The stitched planes are released (or become the image's, when exact).
 */
export async function resampleRegion(tiles: TileRegion, plan: RegionPlan): Promise<RawImage> {
  const { f, w, h } = plan;
  if (plan.exact) {
    const region = stitch(tiles);
    return { rgb: region.rgb, alpha: region.alpha, width: w, height: h };
  }
  const { sw, sh, left, top, x, y } = resampling(tiles, plan);
  const kernel = f < 1 ? DOWN_KERNEL : UP_KERNEL;
  // Natively: bilinear up (libvips' within 1 unit, a tenth of its CPU) and lanczos3 down (libvips' reduce
  // exactly where it is a plain reduce: scales above a third; below, libvips box-shrinks first, so sharp does it).
  const native = kernel === 'linear' ? resizeLinear : x.scale > 1 / 3 && y.scale > 1 / 3 ? resizeLanczos3 : null;
  if (native && !tiles.translucentTiles) {
    // The alpha of missing tiles follows from the tile grid.
    const rgb = pixelPool.acquire(w * h * 3);
    const grid = { tiles: tiles.tiles.map((t) => t?.rgb ?? null), cols: tiles.cols, tileSize: tiles.tileSize, left: tiles.left, top: tiles.top };
    await native(grid, tiles.width, tiles.height, 3, rgb, w, h, x, y);
    return { rgb, alpha: tiles.opaque ? null : resampledMask(tiles.mask, x, y, kernel), width: w, height: h };
  }
  const region = stitch(tiles);
  if (native) {
    const run = (src: Buffer, channels: 1 | 3) => {
      const out = pixelPool.acquire(w * h * channels);
      return native(src, region.width, region.height, channels, out, w, h, x, y).then(() => out);
    };
    const [rgb, alpha] = await Promise.all([run(region.rgb, 3), region.alpha ? run(region.alpha, 1) : null]);
    releaseImage(region);
    return { rgb, alpha, width: w, height: h };
  }
  const resize = (s: Sharp) => s.resize(sw, sh, { fit: 'fill', kernel }).extract({ left, top, width: w, height: h });
  if (!region.alpha || region.translucentTiles) return perPlane(region, resize);
  const rgb = await resize(sharp(region.rgb, { raw: { width: region.width, height: region.height, channels: 3 } })).raw().toBuffer();
  releaseImage(region);
  const alpha = resampledMask(region.mask, x, y, kernel);
  return { rgb, alpha, width: w, height: h };
}

/** The view's pixels, `w`×`h` around the camera's centre, without rotation or overlays, and the zoom of the tiles it was made from. */
async function region(cam: Camera, src: RasterSource, w: number, h: number): Promise<RawImage & { sourceZoom: number }> {
  const plan = planRegion(cam, src, w, h);
  const image = await resampleRegion(await regionTiles(src, plan), plan);
  return { ...image, sourceZoom: plan.tz };
}

/** The image's base pixels (tiles, resampled, rotated by the bearing), before overlays. */
export async function composeBase(cam: Camera, src: RasterSource): Promise<RawImage & { sourceZoom: number }> {
  if (cam.bearing % 360 === 0) return region(cam, src, cam.width, cam.height);
  // Rotate a square covering the image's diagonal about its centre, then crop the image out of it.
  // The corners the rotation uncovers are 0 in both planes: transparent.
  const d = Math.ceil(Math.hypot(cam.width, cam.height)) + 2;
  const square = await region(cam, src, d, d);
  const rotated = await perPlane(square, (s) => s.rotate(-cam.bearing, { background: { r: 0, g: 0, b: 0 } }));
  const left = Math.floor((rotated.width - cam.width) / 2);
  const top = Math.floor((rotated.height - cam.height) / 2);
  const image = await perPlane(rotated, (s) => s.extract({ left, top, width: cam.width, height: cam.height }));
  return { ...image, sourceZoom: square.sourceZoom };
}

/** JPEG quality of static images. */
const JPEG_QUALITY = 90;
/** WebP quality of static images and upscaled tiles (lossy, like their JPEG). */
const WEBP_QUALITY = 90;

/** Flatten premultiplied RGB onto white in place (JPEG has no alpha): colour + (255 − alpha). */
function flattenOnWhite(rgb: Buffer, alpha: Buffer): void {
  // Four alpha bytes at a time: nearly all are opaque (transparent only beyond the data).
  const words = alpha.byteOffset % 4 === 0 ? new Uint32Array(alpha.buffer, alpha.byteOffset, alpha.length >> 2) : new Uint32Array(0);
  for (let w = 0; w < words.length; w++) {
    if (words[w] === 0xffffffff) continue;
    for (let k = w * 4; k < w * 4 + 4; k++) flattenPixel(rgb, alpha, k);
  }
  for (let k = words.length * 4; k < alpha.length; k++) flattenPixel(rgb, alpha, k);
}

function flattenPixel(rgb: Buffer, alpha: Buffer, k: number): void {
  const clear = 255 - alpha[k];
  if (clear === 0) return;
  const j = k * 3;
  rgb[j] = Math.min(255, rgb[j] + clear);
  rgb[j + 1] = Math.min(255, rgb[j + 1] + clear);
  rgb[j + 2] = Math.min(255, rgb[j + 2] + clear);
}

/**
 * Encode the base with the overlay drawn on top (the base's buffers are changed, then released to the
 * pixel pool). PNG by lib/png-fast.ts straight from the premultiplied planes (it divides colour by alpha
 * while filtering): a third of sharp's CPU at zlib level 3 (docs/static-map-speed.md), into
 * `allocate(size)` when given (a pooled buffer). JPEG by sharp, flattened onto white here; WebP by sharp.
 */
export async function encodeImage(base: RawImage, overlay: OverlaySvg | undefined, format: RasterFormat, allocate?: (bytes: number) => Buffer): Promise<Buffer> {
  if (overlay) await drawOverlay(base, overlay);
  let encoded: Buffer;
  if (format === 'png') {
    encoded = await encodePng(base.rgb, base.width, base.height, 3, { alpha: base.alpha, premultiplied: true, allocate });
  } else if (format === 'webp') {
    // WebP keeps alpha: the planes joined by sharp, then read as premultiplied RGBA (sharp divides).
    const raw = { width: base.width, height: base.height };
    const rgba = base.alpha && (await sharp(base.rgb, { raw: { ...raw, channels: 3 } }).joinChannel(base.alpha, { raw: { ...raw, channels: 1 } }).raw().toBuffer());
    const img = rgba ? sharp(rgba, { raw: { ...raw, channels: 4, premultiplied: true } }) : sharp(base.rgb, { raw: { ...raw, channels: 3 } });
    encoded = await img.webp({ quality: WEBP_QUALITY }).toBuffer();
  } else {
    if (base.alpha) flattenOnWhite(base.rgb, base.alpha);
    encoded = await sharp(base.rgb, { raw: { width: base.width, height: base.height, channels: 3 } }).jpeg({ quality: JPEG_QUALITY }).toBuffer();
  }
  releaseImage(base);
  return encoded;
}
