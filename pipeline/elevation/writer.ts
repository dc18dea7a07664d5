/**
 * The index writer: plans layers from where the sources' posts lie, then streams the layer's blocks
 * chunk by chunk (a square of blocks), loading only the sources a chunk touches through a bounded
 * grid cache. Chunks no source touches are never visited: their directory entries stay zero (empty).
 */
import type { EncodedBlock } from '../../lib/elevation/codec.ts';
import { DEFAULT_BLOCK_SIZE, DIR_ENTRY_BYTES, PREAMBLE_BYTES, blockDims, encodeHeader, type IndexMeta, type LayerMeta } from '../../lib/elevation/format.ts';
import type { Progress } from '../../lib/progress.ts';
import { GridCache, type GridLoader } from './grid-cache.ts';
import { sameLattice, type DemGrid, type DemInfo } from './grid.ts';
import { IndexCheckpoint } from './checkpoint.ts';

/** A source to index with its overlap priority (higher wins). */
export interface PlannedSource {
  dem: DemInfo;
  priority: number;
  /** Position in the source list: among equal priorities, the earlier source wins. Also its cache key. */
  order: number;
}

/** One layer to write: its geometry and the sources painted into it, lowest priority first. */
export interface LayerPlan {
  layer: Omit<LayerMeta, 'directoryOffset'>;
  sources: PlannedSource[];
}

/** Quantises one block (a Piscina pool in the pipeline, `encodeBlock` directly in tests). */
export type BlockEncoder = (heights: Float32Array, rows: number, cols: number, where: string) => Promise<EncodedBlock>;

/** Blocks per chunk side: a chunk of SRTM3 posts is ~1.7°, so a 1° tile touches at most 2×2 chunks. */
export const CHUNK_BLOCKS = 8;
/** Chunks loaded and encoded at once (one assembling while the other encodes). */
const CHUNKS_IN_FLIGHT = 2;
/** Default bound on the DEM grids held in memory while indexing. */
export const DEFAULT_GRID_CACHE_BYTES = 1024 * 1024 * 1024;

/**
 * Group sources whose posts coincide into layers, ordered for lookup: higher priority first, then
 * finer resolution first (so by default the finer source wins where sources overlap).
 */
export function planLayers(sources: PlannedSource[], blockSize = DEFAULT_BLOCK_SIZE): LayerPlan[] {
  const groups: PlannedSource[][] = [];
  for (const s of sources) {
    const group = groups.find((gr) => sameLattice(gr[0].dem, s.dem));
    if (group) group.push(s);
    else groups.push([s]);
  }
  const plans = groups.map((group): LayerPlan => {
    const { stepLat, stepLon } = group[0].dem;
    let originLat = -Infinity, originLon = Infinity, priority = -Infinity;
    for (const { dem, priority: p } of group) {
      originLat = Math.max(originLat, dem.originLat);
      originLon = Math.min(originLon, dem.originLon);
      priority = Math.max(priority, p);
    }
    let rows = 0, cols = 0;
    for (const { dem } of group) {
      rows = Math.max(rows, Math.round((originLat - dem.originLat) / stepLat) + dem.rows);
      cols = Math.max(cols, Math.round((dem.originLon - originLon) / stepLon) + dem.cols);
    }
    return {
      layer: {
        originLat, originLon, stepLat, stepLon, rows, cols, blockSize,
        blockRows: Math.ceil(rows / blockSize), blockCols: Math.ceil(cols / blockSize),
        priority,
        sources: group.map((s) => s.dem.file),
      },
      sources: [...group].sort((a, b) => a.priority - b.priority || b.order - a.order),
    };
  });
  return plans.sort((a, b) => b.layer.priority - a.layer.priority || a.layer.stepLat * a.layer.stepLon - b.layer.stepLat * b.layer.stepLon);
}

/** A source placed in its layer: its first post's row and column there. */
interface Placed {
  src: PlannedSource;
  r0: number;
  c0: number;
}

function place(L: LayerPlan['layer'], src: PlannedSource): Placed {
  return { src, r0: Math.round((L.originLat - src.dem.originLat) / L.stepLat), c0: Math.round((src.dem.originLon - L.originLon) / L.stepLon) };
}

/** Heights of block (br, bc) of a layer: every placed source's valid posts painted in order (lowest priority first). */
export function assembleBlock(L: Omit<LayerMeta, 'directoryOffset'>, placed: { grid: DemGrid; r0: number; c0: number }[], br: number, bc: number): Float32Array {
  const { rows, cols } = blockDims({ ...L, directoryOffset: 0 }, br, bc);
  const r0 = br * L.blockSize, c0 = bc * L.blockSize;
  const out = new Float32Array(rows * cols).fill(NaN);
  for (const { grid, r0: gr0, c0: gc0 } of placed) {
    const rFrom = Math.max(r0, gr0), rTo = Math.min(r0 + rows, gr0 + grid.rows);
    const cFrom = Math.max(c0, gc0), cTo = Math.min(c0 + cols, gc0 + grid.cols);
    for (let r = rFrom; r < rTo; r++) {
      const src = (r - gr0) * grid.cols - gc0, dst = (r - r0) * cols - c0;
      for (let c = cFrom; c < cTo; c++) {
        const v = grid.data[src + c];
        if (v === v) out[dst + c] = v;
      }
    }
  }
  return out;
}

/** Union of boxes. */
export function unionBounds(boxes: [number, number, number, number][]): [number, number, number, number] {
  const u: [number, number, number, number] = [Infinity, Infinity, -Infinity, -Infinity];
  for (const b of boxes) {
    u[0] = Math.min(u[0], b[0]); u[1] = Math.min(u[1], b[1]);
    u[2] = Math.max(u[2], b[2]); u[3] = Math.max(u[3], b[3]);
  }
  return u;
}

/** One chunk of a layer to write: its block range and the sources it touches (painting order). */
interface Chunk {
  layer: number;
  id: number;
  br0: number;
  br1: number;
  bc0: number;
  bc1: number;
  placed: Placed[];
}

/** The chunks of a layer that some source touches, row-major. */
function layerChunks(li: number, plan: LayerPlan): Chunk[] {
  const L = plan.layer;
  const span = CHUNK_BLOCKS * L.blockSize;
  const chunkCols = Math.ceil(L.blockCols / CHUNK_BLOCKS);
  const byId = new Map<number, Chunk>();
  for (const src of plan.sources) {
    const p = place(L, src);
    const cr0 = Math.floor(p.r0 / span), cr1 = Math.floor((p.r0 + src.dem.rows - 1) / span);
    const cc0 = Math.floor(p.c0 / span), cc1 = Math.floor((p.c0 + src.dem.cols - 1) / span);
    for (let cr = cr0; cr <= cr1; cr++) {
      for (let cc = cc0; cc <= cc1; cc++) {
        const id = cr * chunkCols + cc;
        let ch = byId.get(id);
        if (!ch) {
          ch = {
            layer: li, id, placed: [],
            br0: cr * CHUNK_BLOCKS, br1: Math.min(L.blockRows, (cr + 1) * CHUNK_BLOCKS),
            bc0: cc * CHUNK_BLOCKS, bc1: Math.min(L.blockCols, (cc + 1) * CHUNK_BLOCKS),
          };
          byId.set(id, ch);
        }
        ch.placed.push(p);
      }
    }
  }
  return [...byId.values()].sort((a, b) => a.id - b.id);
}

/** True when source `p` has posts in block (br, bc). */
function touches(L: LayerPlan['layer'], p: Placed, br: number, bc: number): boolean {
  const r0 = br * L.blockSize, c0 = bc * L.blockSize;
  return p.r0 < r0 + L.blockSize && p.r0 + p.src.dem.rows > r0 && p.c0 < c0 + L.blockSize && p.c0 + p.src.dem.cols > c0;
}

/** What `writeIndex` needs besides the plan. */
export interface WriteIndexOptions {
  precision: number;
  encode: BlockEncoder;
  /** Loads a source's heights by its `order`. */
  load: GridLoader;
  /** Bound on the grids held in memory (default 1 GiB). */
  gridCacheBytes?: number;
  /** Counts finished source files. */
  progress?: Progress;
  /** Extra metadata keys (fingerprint, inputs). */
  extra?: Pick<IndexMeta, 'fingerprint' | 'inputs'>;
  /**
   * Resumable: write into this checkpoint's partial file and record finished chunks, so a killed
   * build continues where it stopped. Without it the file is written to a temp path beside `path`.
   */
  checkpoint?: IndexCheckpoint;
}

/** What `writeIndex` did. */
export interface WriteIndexResult {
  meta: IndexMeta;
  bytes: number;
  /** Chunks written by this run and kept from an earlier, killed run. */
  chunks: number;
  resumedChunks: number;
  /** Source grids read (more than the sources when the cache had to drop some). */
  gridLoads: number;
}

/** The metadata with every layer's directory placed after a header of `headerLen` bytes. */
function metaFor(plans: LayerPlan[], precision: number, headerLen: number, extra: WriteIndexOptions['extra']): IndexMeta {
  const coverage = plans.flatMap((p) => p.sources.map((s) => s.dem.footprint));
  let at = headerLen;
  const layers = plans.map((p) => {
    const l: LayerMeta = { ...p.layer, directoryOffset: at };
    at += l.blockRows * l.blockCols * DIR_ENTRY_BYTES;
    return l;
  });
  return { precision, layers, coverage, bounds: unionBounds(coverage), generator: 'tilebake', ...extra };
}

/**
 * Write the index file atomically: preamble + metadata, each layer's directory, then the blocks of
 * every chunk some source touches. Returns the metadata and the file size.
 */
export async function writeIndex(path: string, plans: LayerPlan[], opts: WriteIndexOptions): Promise<WriteIndexResult> {
  // The header holds the directory offsets, which depend on the header's own length: iterate.
  let headerLen = PREAMBLE_BYTES;
  let header = encodeHeader(metaFor(plans, opts.precision, headerLen, opts.extra));
  while (header.length !== headerLen) {
    headerLen = header.length;
    header = encodeHeader(metaFor(plans, opts.precision, headerLen, opts.extra));
  }
  const meta = metaFor(plans, opts.precision, headerLen, opts.extra);
  const dirEnd = meta.layers.reduce((end, l) => Math.max(end, l.directoryOffset + l.blockRows * l.blockCols * DIR_ENTRY_BYTES), headerLen);
  const chunks = plans.flatMap((p, li) => layerChunks(li, p));
  const checkpoint = opts.checkpoint ?? (await IndexCheckpoint.temporary(path));
  const state = await checkpoint.start(header, dirEnd);
  const remaining = new Map<number, number>();
  for (const ch of chunks) for (const p of ch.placed) remaining.set(p.src.order, (remaining.get(p.src.order) ?? 0) + 1);
  const finished = (ch: Chunk) => {
    for (const p of ch.placed) {
      const left = remaining.get(p.src.order)! - 1;
      remaining.set(p.src.order, left);
      if (left === 0) opts.progress?.tick();
    }
  };
  const todo: Chunk[] = [];
  let resumedChunks = 0;
  for (const ch of chunks) {
    if (state.done.has(`${ch.layer}:${ch.id}`)) {
      resumedChunks++;
      finished(ch);
    } else todo.push(ch);
  }
  const cache = new GridCache(opts.gridCacheBytes ?? DEFAULT_GRID_CACHE_BYTES, opts.load);
  // Chunks are written in order, so the file does not depend on which encode finished first and a
  // resumed file is byte-identical to one written in one go (the chunks done form a prefix).
  const written: (() => void)[] = [];
  const turns = todo.map((_, k) => new Promise<void>((resolve) => (written[k] = resolve)));
  let failed = false;
  const runChunk = async (k: number) => {
    const ch = todo[k];
    const L = meta.layers[ch.layer];
    const keys = ch.placed.map((p) => p.src.order);
    try {
      const encoded: { br: number; bc: number; block: Promise<EncodedBlock> }[] = [];
      try {
        const grids = await Promise.all(keys.map((key) => cache.acquire(key)));
        const placed = ch.placed.map((p, i) => ({ grid: grids[i], r0: p.r0, c0: p.c0, p }));
        for (let br = ch.br0; br < ch.br1; br++) {
          for (let bc = ch.bc0; bc < ch.bc1; bc++) {
            const here = placed.filter((q) => touches(L, q.p, br, bc));
            if (here.length === 0) continue;
            const { rows, cols } = blockDims(L, br, bc);
            encoded.push({ br, bc, block: opts.encode(assembleBlock(L, here, br, bc), rows, cols, `${path}: layer ${ch.layer} block ${br},${bc}`) });
          }
        }
      } finally {
        for (const key of keys) cache.release(key);
      }
      const blocks = await Promise.all(encoded.map((e) => e.block));
      if (k > 0) await turns[k - 1];
      if (failed) return;
      await checkpoint.writeChunk(`${ch.layer}:${ch.id}`, encoded.map((e, i) => ({ ...blockEntry(L, e.br, e.bc), block: blocks[i] })));
      finished(ch);
    } catch (e) {
      failed = true;
      throw e;
    } finally {
      written[k]();
    }
  };
  let next = 0;
  const lane = async () => {
    while (next < todo.length && !failed) await runChunk(next++);
  };
  const lanes = await Promise.allSettled(Array.from({ length: Math.min(CHUNKS_IN_FLIGHT, todo.length) }, lane));
  const error = lanes.find((l) => l.status === 'rejected');
  if (error) {
    await checkpoint.stop();
    throw error.reason;
  }
  let bytes: number;
  try {
    bytes = await checkpoint.finish(path);
  } catch (e) {
    await checkpoint.stop();
    throw e;
  }
  return { meta, bytes, chunks: chunks.length - resumedChunks, resumedChunks, gridLoads: cache.loads };
}

/** Where block (br, bc)'s directory entry goes. */
function blockEntry(L: LayerMeta, br: number, bc: number): { dirOffset: number } {
  return { dirOffset: L.directoryOffset + (br * L.blockCols + bc) * DIR_ENTRY_BYTES };
}
