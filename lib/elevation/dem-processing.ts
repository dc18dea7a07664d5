/**
 * GDAL's DEM processing (gdaldem `hillshade` and `color-relief`, through gdal-async's `demAsync`) on
 * one tile's grid of heights. The grid becomes an in-memory (MEM) dataset with the tile's EPSG:3857
 * geotransform; the shading and the colour ramp are GDAL's, nothing here computes a shade or blends
 * a colour. gdal-async cannot be loaded in more than one thread of a process, so these run on the
 * thread that loaded it; `demAsync` itself runs on libuv's thread pool, so tiles shade in parallel.
 */
import { createHash } from 'node:crypto';
import { loadGdal, type Gdal } from '../gdal.ts';
import { mercatorGroundScale, tileMercatorGeoTransform } from '../tile-math.ts';

type Dataset = import('gdal-async').Dataset;

/**
 * gdal-async for DEM processing. Its warning about a synchronous call blocking the event loop while
 * another tile's `demAsync` holds a lock is off: these run in a build, where microseconds of
 * blocking cost nothing, and MEM datasets are read synchronously on purpose (`readTile`).
 */
async function gdalForDem(): Promise<Gdal> {
  const gdal = await loadGdal();
  gdal.eventLoopWarning = false;
  return gdal;
}

/** Nodata of the height grids handed to GDAL (NaN heights become it). */
const HEIGHT_NODATA = -32768;
/** Hillshade output value of a pixel without a shade (gdaldem's nodata for Byte output). */
export const SHADE_NODATA = 0;
/** Channels of a colour-relief pixel (`-alpha`: RGBA). */
const RGBA = 4;

/** A tile's heights on its pixel grid, `buffer` px beyond the tile on every side; NaN: no data. */
export interface TileGrid {
  z: number;
  x: number;
  y: number;
  /** Pixels per tile side. */
  size: number;
  buffer: number;
  /** (size + 2·buffer)² heights in metres, rows north first. */
  heights: Float32Array;
}

/** gdaldem's hillshade variants (its `-multidirectional`, `-combined` and `-igor` flags exclude each other). */
export type HillshadeMethod = 'standard' | 'multidirectional' | 'combined' | 'igor';

/** The gdaldem hillshade options tilebake exposes. */
export interface HillshadeOptions {
  /** Light direction, degrees clockwise from north (gdaldem `-az`; not used by `multidirectional`). */
  azimuth: number;
  /** Light altitude above the horizon, degrees (`-alt`). */
  altitude: number;
  /** Vertical exaggeration (`-z`). */
  zfactor: number;
  method: HillshadeMethod;
  /** Slope algorithm (`-alg`). */
  algorithm: 'Horn' | 'ZevenbergenThorne';
}

/** How colour relief picks a colour between ramp entries (gdaldem's default, `-nearest_color_entry`, `-exact_color_entry`). */
export type ReliefMatch = 'interpolate' | 'nearest' | 'exact';

/**
 * gdaldem hillshade arguments for a tile whose EPSG:3857 metres are `groundScale` ground metres each
 * (`-s`: the ratio of vertical units, metres, to horizontal ones).
 */
export function hillshadeArgs(o: HillshadeOptions, groundScale: number): string[] {
  const args = ['-of', 'MEM', '-z', String(o.zfactor), '-s', String(groundScale), '-alt', String(o.altitude), '-alg', o.algorithm];
  if (o.method !== 'multidirectional') args.push('-az', String(o.azimuth));
  if (o.method !== 'standard') args.push(`-${o.method}`);
  return args;
}

/** gdaldem color-relief arguments: RGBA (nodata transparent), the ramp's colours matched as asked. */
export function colorReliefArgs(match: ReliefMatch): string[] {
  const args = ['-of', 'MEM', '-alpha'];
  if (match === 'nearest') args.push('-nearest_color_entry');
  if (match === 'exact') args.push('-exact_color_entry');
  return args;
}

/** A MEM dataset of the grid's heights with the tile's EPSG:3857 geotransform (NaN heights are set to the nodata value in place). */
function heightDataset(gdal: Gdal, grid: TileGrid): Dataset {
  const n = grid.size + 2 * grid.buffer;
  if (grid.heights.length !== n * n) throw new Error(`tile ${grid.z}/${grid.x}/${grid.y}: ${grid.heights.length} heights, expected ${n}×${n}`);
  const ds = gdal.open('', 'w', 'MEM', n, n, 1, gdal.GDT_Float32);
  ds.geoTransform = tileMercatorGeoTransform(grid.z, grid.x, grid.y, grid.size, grid.buffer);
  const band = ds.bands.get(1);
  band.noDataValue = HEIGHT_NODATA;
  const h = grid.heights;
  for (let i = 0; i < h.length; i++) if (h[i] !== h[i]) h[i] = HEIGHT_NODATA;
  band.pixels.write(0, 0, n, n, h);
  return ds;
}

/**
 * Band `b` of `ds` inside the grid's buffer (the tile's own pixels), as bytes. A MEM dataset's read
 * is a copy: synchronous (an async read would hold a libuv thread on the dataset's lock for it).
 */
function readTile(ds: Dataset, b: number, grid: TileGrid): Uint8Array {
  return ds.bands.get(b).pixels.read(grid.buffer, grid.buffer, grid.size, grid.size) as Uint8Array;
}

/** Bands 1..4 of an RGBA dataset inside the buffer, interleaved. */
function readRgba(ds: Dataset, grid: TileGrid): Uint8Array {
  const bands = [1, 2, 3, 4].map((b) => readTile(ds, b, grid));
  const out = new Uint8Array(grid.size * grid.size * RGBA);
  for (let c = 0; c < RGBA; c++) {
    const src = bands[c];
    for (let i = 0, o = c; i < src.length; i++, o += RGBA) out[o] = src[i];
  }
  return out;
}

/** Run `fn` on a dataset and close it, whatever happens. */
async function closing<T>(ds: Dataset | Promise<Dataset>, fn: (ds: Dataset) => T | Promise<T>): Promise<T> {
  const d = await ds;
  try {
    return await fn(d);
  } finally {
    d.close();
  }
}

/** GDAL's hillshade of the grid's heights (a Byte dataset the size of the grid, `SHADE_NODATA` for none). */
function shade(gdal: Gdal, src: Dataset, grid: TileGrid, opts: HillshadeOptions): Promise<Dataset> {
  return gdal.demAsync('', src, 'hillshade', hillshadeArgs(opts, mercatorGroundScale(grid.z, grid.y)));
}

/**
 * GDAL's hillshade of the tile: size² grey values, `SHADE_NODATA` where it has none (no height
 * there, or a neighbour lacks one). `-s` is the tile's ground scale, so slopes are in ground metres.
 */
export async function hillshadeTile(grid: TileGrid, opts: HillshadeOptions): Promise<Uint8Array> {
  const gdal = await gdalForDem();
  return closing(heightDataset(gdal, grid), (src) => closing(shade(gdal, src, grid, opts), (shaded) => readTile(shaded, 1, grid)));
}

/** The grey value GDAL's hillshade gives flat ground with these options (a flat 3×3 grid shaded once). */
const flatShades = new Map<string, Promise<number>>();
export function flatShade(opts: HillshadeOptions): Promise<number> {
  const key = JSON.stringify(opts);
  let v = flatShades.get(key);
  if (!v) {
    v = (async () => {
      const size = 1;
      const grid: TileGrid = { z: 0, x: 0, y: 0, size, buffer: 1, heights: new Float32Array(9) };
      return (await hillshadeTile(grid, opts))[0];
    })();
    flatShades.set(key, v);
  }
  return v;
}

/**
 * A gdaldem color-relief ramp over hillshade values that leaves flat ground (`flat`) transparent:
 * shadows black and highlights white, their alpha growing to opaque at the darkest and brightest
 * values GDAL writes (1 and 255); GDAL interpolates between these entries.
 */
export function overlayRamp(flat: number): string {
  const lines = ['nv 0 0 0 0', '1 0 0 0 255', `${flat} 0 0 0 0`];
  if (flat < 255) lines.push(`${flat + 1} 255 255 255 0`, '255 255 255 255 255');
  return `${lines.join('\n')}\n`;
}

/** `/vsimem/` copies of ramp texts, by content. */
const ramps = new Map<string, string>();
/** The ramp text as a GDAL `/vsimem/` file (written once per content). */
function rampFile(gdal: Gdal, text: string): string {
  const key = createHash('sha256').update(text).digest('hex').slice(0, 16);
  let path = ramps.get(key);
  if (!path) {
    path = `/vsimem/tilebake-ramp-${key}.txt`;
    gdal.vsimem.set(Buffer.from(text, 'utf8'), path);
    ramps.set(key, path);
  }
  return path;
}

/**
 * GDAL's hillshade of the tile as grey with alpha (size² × 2 bytes): grey is GDAL's shade, alpha
 * opaque wherever there is a shade (transparent where there is none).
 */
export async function hillshadeGreyAlpha(grid: TileGrid, opts: HillshadeOptions): Promise<Uint8Array> {
  const grey = await hillshadeTile(grid, opts);
  const out = new Uint8Array(grey.length * 2);
  for (let i = 0, o = 0; i < grey.length; i++, o += 2) {
    out[o] = grey[i];
    out[o + 1] = grey[i] === SHADE_NODATA ? 0 : 255;
  }
  return out;
}

/**
 * GDAL's hillshade of the tile as an overlay (RGBA): flat ground transparent, shadows black and
 * highlights white with alpha, by GDAL's color-relief over the shade (`overlayRamp`).
 */
export async function hillshadeOverlay(grid: TileGrid, opts: HillshadeOptions): Promise<Uint8Array> {
  const gdal = await gdalForDem();
  const ramp = rampFile(gdal, overlayRamp(await flatShade(opts)));
  return closing(heightDataset(gdal, grid), (src) => closing(shade(gdal, src, grid, opts), (shaded) => {
    shaded.bands.get(1).noDataValue = SHADE_NODATA;
    return closing(gdal.demAsync('', shaded, 'color-relief', colorReliefArgs('interpolate'), ramp), (coloured) => readRgba(coloured, grid));
  }));
}

/** GDAL's colour relief of the tile's heights with the ramp `rampText` (gdaldem's text format): RGBA, nodata transparent. */
export async function colorReliefTile(grid: TileGrid, rampText: string, match: ReliefMatch): Promise<Uint8Array> {
  const gdal = await gdalForDem();
  const ramp = rampFile(gdal, rampText);
  return closing(heightDataset(gdal, grid), (src) => closing(gdal.demAsync('', src, 'color-relief', colorReliefArgs(match), ramp), (coloured) => readRgba(coloured, grid)));
}
