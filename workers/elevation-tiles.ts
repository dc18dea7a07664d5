/**
 * Piscina tasks of the elevation stage (one pool runs them all, chosen by `op`): quantise an index
 * block, encode a batch of terrain-RGB tiles, build a batch of contour tiles, sample a batch of
 * tiles' grids for hillshade and colour relief. Tile tasks sample the
 * index themselves (one sampler per worker; decoded blocks are cached across the worker's tasks) and
 * return encoded tiles, so only compressed bytes cross threads.
 */
import { gzipSync } from 'node:zlib';
import { tileIsolines } from '../lib/elevation/isolines.ts';
import { ElevationIndex, type DecodedBlock } from '../lib/elevation/reader.ts';
import { encodeHeightsRgb, type TerrainEncoding } from '../lib/elevation/terrain-rgb.ts';
import { ByteLru } from '../lib/lru.ts';
import { encodeLineTile, MVT_EXTENT } from '../lib/mvt.ts';
import { FileRangeSource } from '../lib/storage.ts';
import { pixelCentreAxes } from '../lib/tile-math.ts';

import quantiseBlock, { type QuantiseTask } from './quantise-block.ts';
import type { EncodedBlock } from '../lib/elevation/codec.ts';

/** sharp, loaded on first use (quantise-only workers skip its start-up). */
let sharpModule: Promise<typeof import('sharp').default> | undefined;
function loadSharp(): Promise<typeof import('sharp').default> {
  sharpModule ??= import('sharp').then((m) => {
    const sharp = m.default;
    // One libvips thread per encode: the pool already runs one task per core.
    sharp.concurrency(1);
    return sharp;
  });
  return sharpModule;
}

/** The index a tile task samples: its path, an id that changes with its content, and the block cache size. */
export interface IndexRef {
  path: string;
  id: string;
  cacheBytes: number;
}

/** An encoded tile. */
export interface TileOut {
  z: number;
  x: number;
  y: number;
  data: Uint8Array;
}

/** A batch of terrain-RGB tiles to encode (`tiles` is flat z, x, y triples). */
export interface TerrainTask {
  index: IndexRef;
  encoding: TerrainEncoding;
  format: 'png' | 'webp';
  /** Pixels per tile side. */
  size: number;
  /** PNG zlib level. */
  pngLevel: number;
  tiles: number[];
}

/** How contour tiles of one zoom are sampled and which levels they draw. */
export interface ContourZoom {
  /** Samples per tile side (and `buffer` more on every side). */
  samples: number;
  buffer: number;
  minor: number;
  major: number;
}

/** A batch of contour tiles to build (`tiles` is flat z, x, y triples). */
export interface ContourTask {
  index: IndexRef;
  layer: string;
  zooms: Record<number, ContourZoom>;
  clipBuffer: number;
  tolerance: number;
  tiles: number[];
}

/** A batch of tiles whose height grids are sampled for the thread that shades them with GDAL (hillshade, relief). */
export interface GridTask {
  index: IndexRef;
  /** Pixels per tile side. */
  size: number;
  /** Pixels sampled beyond the tile on every side. */
  buffer: number;
  tiles: number[];
}

/** A tile's heights on its pixel grid, `buffer` px beyond it on every side (NaN: no data). */
export interface GridOut {
  z: number;
  x: number;
  y: number;
  heights: Float32Array;
}

/** Encodes overlapping with the next tile's sampling, per worker. */
const ENCODES_IN_FLIGHT = 2;
const RGB_CHANNELS = 3;

let shared: { id: string; cache: ByteLru<number, DecodedBlock | DataView> } | undefined;

/** Run `fn` on the index, reopened for this task but with the worker's block cache kept across tasks. */
async function withIndex<T>(ref: IndexRef, fn: (index: ElevationIndex) => Promise<T>): Promise<T> {
  if (!shared || shared.id !== ref.id) shared = { id: ref.id, cache: new ByteLru(ref.cacheBytes) };
  const src = await FileRangeSource.open(ref.path);
  try {
    return await fn(await ElevationIndex.open(src, shared.cache));
  } finally {
    await src.close();
  }
}

/** Encode a batch of terrain tiles; tiles without any height are left out. Pixels without data encode 0 m. */
export async function terrain(task: TerrainTask): Promise<TileOut[]> {
  const { size } = task;
  const n = size * size;
  const heights = new Float64Array(n);
  const spare: Uint8Array[] = [];
  const out: TileOut[] = [];
  const inflight = new Set<Promise<void>>();
  const sharp = await loadSharp();
  await withIndex(task.index, async (index) => {
    for (let k = 0; k < task.tiles.length; k += 3) {
      const z = task.tiles[k], x = task.tiles[k + 1], y = task.tiles[k + 2];
      const { lats, lons } = pixelCentreAxes(z, x, y, size);
      if ((await index.sampleGrid(lats, lons, heights)) === 0) continue;
      const rgb = spare.pop() ?? new Uint8Array(n * RGB_CHANNELS);
      encodeHeightsRgb(task.encoding, heights, rgb);
      const img = sharp(rgb, { raw: { width: size, height: size, channels: RGB_CHANNELS } });
      // Terrain must be lossless: WebP in lossless mode.
      const encoded = (task.format === 'png' ? img.png({ compressionLevel: task.pngLevel }) : img.webp({ lossless: true })).toBuffer();
      const done: Promise<void> = encoded.then((buf) => {
        out.push({ z, x, y, data: new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength) });
        spare.push(rgb);
      }).finally(() => inflight.delete(done));
      inflight.add(done);
      if (inflight.size >= ENCODES_IN_FLIGHT) await Promise.race(inflight);
    }
    await Promise.all(inflight);
  });
  return out;
}

/**
 * The index's surface in the grid coordinates of a tile's contour grid (grid (i, j) is the pixel
 * centre at `axes.lons[i]`, `axes.lats[j]`), interpolated linearly in between: exact for longitude;
 * within nanometres for latitude over one pixel (Mercator curves far slower than that).
 */
function gridSurface(index: ElevationIndex, axes: { lats: Float64Array; lons: Float64Array }): (i: number, j: number) => number {
  const { lats, lons } = axes;
  const at = (v: Float64Array, f: number) => {
    const k = Math.floor(f);
    return f === k ? v[k] : v[k] + (f - k) * (v[k + 1] - v[k]);
  };
  return (i, j) => {
    const h = index.heightAt(at(lats, j), at(lons, i));
    return typeof h === 'number' ? h : NaN;
  };
}

/** Build a batch of contour tiles (gzipped MVT, one layer); tiles without a contour line are left out. */
export async function contours(task: ContourTask): Promise<TileOut[]> {
  const out: TileOut[] = [];
  await withIndex(task.index, async (index) => {
    for (let k = 0; k < task.tiles.length; k += 3) {
      const z = task.tiles[k], x = task.tiles[k + 1], y = task.tiles[k + 2];
      const zc = task.zooms[z];
      const axes = pixelCentreAxes(z, x, y, zc.samples, zc.buffer);
      const heights = new Float64Array(axes.lats.length * axes.lons.length);
      if ((await index.sampleGrid(axes.lats, axes.lons, heights)) === 0) continue;
      // Between samples: the index's own surface (its blocks are cached by now), so vertices lie on it.
      const surface = gridSurface(index, axes);
      const lines = tileIsolines(heights, { ...zc, extent: MVT_EXTENT, clipBuffer: task.clipBuffer, tolerance: task.tolerance, surface });
      if (lines.length === 0) continue;
      const mvt = encodeLineTile([{ name: task.layer, features: lines.map((l) => ({ lines: l.lines, properties: { ele: l.ele, level: l.level } })) }]);
      out.push({ z, x, y, data: gzipSync(mvt) });
    }
  });
  return out;
}

/**
 * Sample a batch of tiles' grids (pixel centres and `buffer` px beyond); tiles whose grid has no
 * height are left out. GDAL shades them on the thread that loaded it (gdal-async loads in one
 * thread of a process only).
 */
export async function grids(task: GridTask): Promise<GridOut[]> {
  const n = task.size + 2 * task.buffer;
  const heights = new Float64Array(n * n);
  const out: GridOut[] = [];
  await withIndex(task.index, async (index) => {
    for (let k = 0; k < task.tiles.length; k += 3) {
      const z = task.tiles[k], x = task.tiles[k + 1], y = task.tiles[k + 2];
      const { lats, lons } = pixelCentreAxes(z, x, y, task.size, task.buffer);
      if ((await index.sampleGrid(lats, lons, heights)) === 0) continue;
      out.push({ z, x, y, heights: Float32Array.from(heights) });
    }
  });
  return out;
}

/** Any task of the elevation pool. */
export type ElevationTask = ({ op: 'quantise' } & QuantiseTask) | ({ op: 'terrain' } & TerrainTask) | ({ op: 'contours' } & ContourTask) | ({ op: 'grids' } & GridTask);

/** Run one task (Piscina loads a module's default export at start, so one entry point dispatches). */
export default function run(task: ElevationTask): EncodedBlock | Promise<TileOut[]> | Promise<GridOut[]> {
  // Terrain tiles usually follow the index: load sharp between quantise tasks, not at the first tile.
  void loadSharp();
  switch (task.op) {
    case 'quantise':
      return quantiseBlock(task);
    case 'terrain':
      return terrain(task);
    case 'contours':
      return contours(task);
    case 'grids':
      return grids(task);
  }
}
