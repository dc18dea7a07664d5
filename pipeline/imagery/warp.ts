/**
 * Warping imagery tiles: batches of neighbouring tiles of one zoom, warped from the source images to
 * Web Mercator by GDAL's warper and encoded by the build's encoders (lib/raster-encode.ts).
 *
 * Each lane keeps, per zoom and scale, one warped VRT over the zoom's tile range with blocks of one
 * tile (the arguments of `warpArgs`, gdalwarp's own): reading a tile warps exactly its box, with the
 * transformer and the source datasets set up once, and GDAL reads the sources window by window from
 * the overview that fits the zoom (`-ovr AUTO`); memory is GDAL's block cache and warp buffer, never a
 * whole image. The reads run on libuv's threads (gdal-async's `readAsync`; one dataset at a time per
 * lane, each lane its own datasets) and the encodes on sharp's, so the lanes keep every core busy from
 * this thread: gdal-async is not context-aware, so it cannot be loaded in worker threads. Fully
 * transparent tiles are left out (the server answers 204 there).
 */
import type { Dataset } from 'gdal-async';
import { loadGdal, type Gdal } from '../../lib/gdal.ts';
import { encodeRgba, type EncoderSettings, type RasterFormat } from '../../lib/raster-encode.ts';

/** Half the Web Mercator world's width in metres. */
const HALF_WORLD_M = 20037508.342789244;
/** Pixels per side of a 1x tile. */
const TILE_PX = 256;
/** RGBA. */
const CHANNELS = 4;
/** Warped VRTs a lane keeps open (the zooms and scales of its recent batches). */
const OPEN_WARPS = 2;
/** GDAL's block cache for the process, MB, unless GDAL_CACHEMAX is set (bench/own-data/imagery.ts measures it). */
export const GDAL_CACHE_MB = 64;
/** GDAL's warp buffer per warp, MB. */
const WARP_MEMORY_MB = 64;
/** Encodes a lane keeps in flight while it reads the next tile. */
const ENCODES_IN_FLIGHT = 2;

/** The tile range of one zoom a warped VRT covers: columns x0..x1, rows y0..y1. */
export interface TileExtent {
  z: number;
  x0: number;
  y0: number;
  x1: number;
  y1: number;
}

/** How a tileset's tiles are warped and encoded. */
export interface WarpRecipe {
  /** Datasets GDAL opens (images, VRT mosaics), painted in this order: later ones on top. */
  datasets: string[];
  /** Source value taken as transparent, overriding the datasets' nodata. */
  nodata?: number;
  /** gdalwarp `-r` method. */
  resampling: string;
  /** 1: 256 px tiles, 2: 512 px tiles of the same z/x/y. */
  scale: 1 | 2;
  format: RasterFormat;
  encoders: EncoderSettings;
}

/** A batch of tiles to warp (`tiles`: flat z, x, y triples, all of `extent.z`, inside `extent`). */
export interface WarpTask extends WarpRecipe {
  extent: TileExtent;
  tiles: number[];
}

/** An encoded tile. */
export interface WarpedTile {
  z: number;
  x: number;
  y: number;
  data: Uint8Array;
}

/** Web Mercator bounds of the extent: [minX, minY, maxX, maxY] in metres. */
export function extentMetres(e: TileExtent): [number, number, number, number] {
  const size = (2 * HALF_WORLD_M) / 2 ** e.z;
  return [-HALF_WORLD_M + e.x0 * size, HALF_WORLD_M - (e.y1 + 1) * size, -HALF_WORLD_M + (e.x1 + 1) * size, HALF_WORLD_M - e.y0 * size];
}

/**
 * The gdalwarp arguments for `te` (Web Mercator metres) at `width` × `height` pixels: the one recipe,
 * for the stage's warped VRTs (with `-of VRT` and blocks of one tile) and for a comparison with gdalwarp.
 */
export function warpArgs(r: Pick<WarpRecipe, 'nodata' | 'resampling'>, te: readonly number[], width: number, height: number): string[] {
  return [
    '-t_srs', 'EPSG:3857', '-te', ...te.map(String), '-ts', String(width), String(height), '-r', r.resampling, '-dstalpha', '-wm', String(WARP_MEMORY_MB),
    ...(r.nodata !== undefined ? ['-srcnodata', String(r.nodata)] : []),
  ];
}

/** One warped VRT over a zoom's tile range, with what it reads. */
interface Warp {
  key: string;
  /** The dataset tiles are read from (the warped VRT, or a mosaic of one per source dataset). */
  ds: Dataset;
  /** Everything to close, in opening order. */
  opened: Dataset[];
  /** /vsimem/ files to remove when closed. */
  files: string[];
}

let gdalReady: Promise<Gdal> | undefined;
/** gdal-async with the stage's cache settings (set once per process). */
function gdalOnce(): Promise<Gdal> {
  gdalReady ??= loadGdal().then((gdal) => {
    if (!process.env.GDAL_CACHEMAX) gdal.config.set('GDAL_CACHEMAX', String(GDAL_CACHE_MB));
    return gdal;
  });
  return gdalReady;
}

let serial = 0;

/** One lane: its own datasets, one batch at a time. */
class Lane {
  private readonly warps: Warp[] = [];
  constructor(private readonly gdal: Gdal) {}

  /** The warped VRT of `task`'s zoom and scale, made on first use (the oldest closed beyond OPEN_WARPS). */
  private async warpFor(task: WarpTask): Promise<Warp> {
    const { gdal } = this;
    const key = JSON.stringify([task.datasets, task.nodata, task.resampling, task.scale, task.extent]);
    const found = this.warps.find((w) => w.key === key);
    if (found) return found;
    while (this.warps.length >= OPEN_WARPS) closeWarp(gdal, this.warps.shift()!);
    const e = task.extent;
    const size = TILE_PX * task.scale;
    const w: Warp = { key, ds: undefined as unknown as Dataset, opened: [], files: [] };
    try {
      const parts: Dataset[] = [];
      for (const path of task.datasets) {
        const src = await gdal.openAsync(path);
        w.opened.push(src);
        const file = `/vsimem/tilebake-imagery-${process.pid}-${serial++}.vrt`;
        const args = [...warpArgs(task, extentMetres(e), (e.x1 - e.x0 + 1) * size, (e.y1 - e.y0 + 1) * size), '-of', 'VRT', '-co', `BLOCKXSIZE=${size}`, '-co', `BLOCKYSIZE=${size}`];
        const warped = await gdal.warpAsync(file, null, [src], args);
        // Written out: a mosaic of several opens its parts by name.
        warped.flush();
        w.files.push(file);
        w.opened.push(warped);
        parts.push(warped);
      }
      if (parts.length === 1) w.ds = parts[0];
      else {
        const file = `/vsimem/tilebake-imagery-${process.pid}-${serial++}.vrt`;
        w.ds = await gdal.buildVRTAsync(file, parts);
        w.files.push(file);
        w.opened.push(w.ds);
      }
    } catch (err) {
      closeWarp(gdal, w);
      throw err;
    }
    this.warps.push(w);
    return w;
  }

  /** Warp and encode a batch; tiles with no visible pixel are left out. */
  async run(task: WarpTask): Promise<WarpedTile[]> {
    const w = await this.warpFor(task);
    const size = TILE_PX * task.scale;
    const bands = w.ds.bands.count();
    const out: WarpedTile[] = [];
    const inflight = new Set<Promise<void>>();
    for (let k = 0; k < task.tiles.length; k += 3) {
      const z = task.tiles[k], x = task.tiles[k + 1], y = task.tiles[k + 2];
      if (z !== task.extent.z || x < task.extent.x0 || x > task.extent.x1 || y < task.extent.y0 || y > task.extent.y1) {
        throw new Error(`imagery: tile ${z}/${x}/${y} is outside its warp's extent ${JSON.stringify(task.extent)}`);
      }
      const rgba = new Uint8Array(size * size * CHANNELS);
      const left = (x - task.extent.x0) * size, top = (y - task.extent.y0) * size;
      // R, G, B and alpha (every dataset is RGB or RGBA: pipeline/imagery/sources.ts; the warp adds alpha).
      for (let b = 1; b <= bands; b++) {
        await w.ds.bands.get(b).pixels.readAsync(left, top, size, size, rgba, { buffer_width: size, buffer_height: size, pixel_space: CHANNELS, line_space: size * CHANNELS, offset: b - 1 });
      }
      const done: Promise<void> = encodeRgba(rgba, size, size, task.format, task.encoders)
        .then((data) => void (data && out.push({ z, x, y, data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength) })))
        .finally(() => inflight.delete(done));
      inflight.add(done);
      if (inflight.size >= ENCODES_IN_FLIGHT) await Promise.race(inflight);
    }
    await Promise.all(inflight);
    // In enumeration order, whatever encode finished first.
    const n = 2 ** task.extent.z;
    return out.sort((a, b) => a.y * n + a.x - (b.y * n + b.x));
  }

  close(): void {
    for (const w of this.warps.splice(0)) closeWarp(this.gdal, w);
  }
}

function closeWarp(gdal: Gdal, w: Warp): void {
  for (const d of w.opened.reverse()) d.close();
  for (const f of w.files) {
    try {
      gdal.vsimem.release(f);
    } catch {
      // Never written (the warp failed).
    }
  }
}

/** Lanes warping batches, as many at once as there are lanes. */
export class TileWarper {
  private readonly free: Lane[] = [];
  private readonly waiting: ((lane: Lane) => void)[] = [];
  private readonly all: Lane[] = [];

  private constructor(gdal: Gdal, lanes: number) {
    for (let i = 0; i < lanes; i++) this.all.push(new Lane(gdal));
    this.free.push(...this.all);
  }

  /** A warper with `lanes` lanes (one per core). */
  static async create(lanes: number): Promise<TileWarper> {
    return new TileWarper(await gdalOnce(), Math.max(1, lanes));
  }

  /** Warp one batch on the next free lane. */
  async run(task: WarpTask): Promise<WarpedTile[]> {
    const lane = this.free.pop() ?? (await new Promise<Lane>((resolve) => this.waiting.push(resolve)));
    try {
      return await lane.run(task);
    } finally {
      const next = this.waiting.shift();
      if (next) next(lane);
      else this.free.push(lane);
    }
  }

  /** Close every lane's datasets. */
  close(): void {
    for (const lane of this.all) lane.close();
  }
}
