import type { RangeSource } from '../storage.ts';
import { bilinear, locate } from './bilinear.ts';
import { decodeBlock, type DecodedBlock } from './codec.ts';
import { CodeWidth, DIR_ENTRY_BYTES, PREAMBLE_BYTES, blockDims, decodeMeta, decodePreamble, readDirEntry, type DirEntry, type IndexMeta, type LayerMeta } from './format.ts';
import type { LatLon } from '../geo-distance.ts';
import { LoadingCache } from '../shared-work.ts';
import { ByteLru } from '../lru.ts';
import { axisPlan, fillFromLayer } from './grid-sample.ts';

export type { DecodedBlock } from './codec.ts';

const EMPTY: DecodedBlock = { rows: 0, cols: 0, data: new Float32Array(0) };
/** Fixed per-entry overhead counted against the cache bound. */
const ENTRY_OVERHEAD_BYTES = 64;
/** Directory entries read and cached together. */
const DIR_PAGE_ENTRIES = 1024;
/** Blocks fetched at once while answering a request. */
const FETCH_CONCURRENCY = 8;
/** A point within this many posts of a post is on it. */
const POST_SNAP = 1e-9;

interface Layer extends LayerMeta {
  /** First cache key of this layer's blocks. */
  keyBase: number;
  shift: number;
  mask: number;
}

/** Heights for a list of points plus the indexes of points outside every source. */
export interface HeightsResult {
  heights: (number | null)[];
  outside: number[];
}

/**
 * An opened elevation index: positional reads through a RangeSource, decoded blocks (and directory
 * pages) kept in an LRU bounded in bytes.
 */
export class ElevationIndex {
  readonly cache: ByteLru<number, DecodedBlock | DataView>;
  private readonly layers: Layer[];
  /** The cache filled on misses (concurrent misses of one block or directory page share one read). */
  private readonly loads: LoadingCache<number, DecodedBlock | DataView>;
  private readonly dirKeyBase: number;
  private memoKey = -1;
  private memoBlock: DecodedBlock = EMPTY;

  private constructor(private readonly src: RangeSource, readonly meta: IndexMeta, cache: number | ByteLru<number, DecodedBlock | DataView>) {
    this.cache = typeof cache === 'number' ? new ByteLru(cache) : cache;
    this.loads = new LoadingCache(this.cache, (v) => (v instanceof DataView ? v.byteLength : v.data.byteLength) + ENTRY_OVERHEAD_BYTES);
    let keyBase = 0;
    this.layers = meta.layers.map((l) => {
      const shift = Math.log2(l.blockSize);
      if (!Number.isInteger(shift)) throw new Error(`${src.key()}: block size ${l.blockSize} is not a power of two`);
      const layer: Layer = { ...l, keyBase, shift, mask: l.blockSize - 1 };
      keyBase += l.blockRows * l.blockCols;
      return layer;
    });
    this.dirKeyBase = keyBase;
  }

  /**
   * Open an index: reads only the preamble and the metadata. `cache` is a byte bound for a new block
   * cache, or a cache to share with earlier opens of the same file (a worker reopening it per task).
   */
  static async open(src: RangeSource, cache: number | ByteLru<number, DecodedBlock | DataView>): Promise<ElevationIndex> {
    const pre = await src.getBytes(0, PREAMBLE_BYTES);
    const metaLen = decodePreamble(pre, src.key());
    const meta = decodeMeta(await src.getBytes(PREAMBLE_BYTES, metaLen), src.key());
    return new ElevationIndex(src, meta, cache);
  }

  /** Release the underlying source. */
  close(): Promise<void> {
    return this.src.close();
  }

  /** True when (lat, lon) is inside the footprint of at least one source. */
  inCoverage(lat: number, lon: number): boolean {
    for (const [w, s, e, n] of this.meta.coverage) {
      if (lat >= s && lat <= n && lon >= w && lon <= e) return true;
    }
    return false;
  }

  private async dirEntry(layer: Layer, blockIndex: number): Promise<DirEntry> {
    const layerIdx = this.layers.indexOf(layer);
    const page = Math.floor(blockIndex / DIR_PAGE_ENTRIES);
    const key = this.dirKeyBase + layerIdx * 2 ** 26 + page;
    const view = (await this.loads.getOrLoad(key, async () => {
      const total = layer.blockRows * layer.blockCols;
      const count = Math.min(DIR_PAGE_ENTRIES, total - page * DIR_PAGE_ENTRIES);
      const bytes = await this.src.getBytes(layer.directoryOffset + page * DIR_PAGE_ENTRIES * DIR_ENTRY_BYTES, count * DIR_ENTRY_BYTES);
      if (bytes.length !== count * DIR_ENTRY_BYTES) throw new Error(`${this.src.key()}: truncated block directory`);
      return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    })) as DataView;
    return readDirEntry(view, (blockIndex - page * DIR_PAGE_ENTRIES) * DIR_ENTRY_BYTES);
  }

  /** The decoded block with cache key `key` (loading it if needed). */
  async block(key: number): Promise<DecodedBlock> {
    return (await this.loads.getOrLoad(key, async () => {
      const layer = this.layerOfKey(key);
      const bi = key - layer.keyBase;
      const br = Math.floor(bi / layer.blockCols), bc = bi % layer.blockCols;
      const e = await this.dirEntry(layer, bi);
      if (e.width === CodeWidth.Empty) return EMPTY;
      const payload = await this.src.getBytes(e.offset, e.length);
      const { rows, cols } = blockDims(layer, br, bc);
      return { rows, cols, data: decodeBlock(payload, e.base, e.width, rows, cols, this.meta.precision) };
    })) as DecodedBlock;
  }

  private layerOfKey(key: number): Layer {
    for (let i = this.layers.length - 1; i >= 0; i--) if (key >= this.layers[i].keyBase) return this.layers[i];
    throw new Error(`bad block key ${key}`);
  }

  /** Cache keys of the blocks holding the four posts around (lat, lon), for every layer containing it. */
  private keysFor(lat: number, lon: number, into: Set<number>): void {
    for (const L of this.layers) {
      const cell = locate(lat, lon, L.originLat, L.originLon, L.stepLat, L.stepLon, L.rows, L.cols);
      if (!cell) continue;
      const r1 = Math.min(cell.r0 + 1, L.rows - 1), c1 = Math.min(cell.c0 + 1, L.cols - 1);
      for (const r of [cell.r0, r1]) for (const c of [cell.c0, c1]) into.add(L.keyBase + (r >> L.shift) * L.blockCols + (c >> L.shift));
    }
  }

  /** Load every block needed for `points` into the cache (the bench's warm-up). */
  async preload(points: readonly LatLon[]): Promise<Map<number, DecodedBlock>> {
    const keys = new Set<number>();
    for (const p of points) this.keysFor(p.lat, p.lon, keys);
    const out = new Map<number, DecodedBlock>();
    const list = [...keys];
    for (let i = 0; i < list.length; i += FETCH_CONCURRENCY) {
      const got = await Promise.all(list.slice(i, i + FETCH_CONCURRENCY).map((k) => this.block(k)));
      got.forEach((b, j) => out.set(list[i + j], b));
    }
    return out;
  }

  private post(L: Layer, r: number, c: number, get: (key: number) => DecodedBlock | undefined): number {
    if (r < 0 || c < 0 || r >= L.rows || c >= L.cols) return NaN;
    const key = L.keyBase + (r >> L.shift) * L.blockCols + (c >> L.shift);
    let b: DecodedBlock | undefined;
    if (key === this.memoKey) b = this.memoBlock;
    else {
      b = get(key);
      if (!b) throw new NotLoaded(key);
      this.memoKey = key;
      this.memoBlock = b;
    }
    if (b.data.length === 0) return NaN;
    return b.data[(r & L.mask) * b.cols + (c & L.mask)];
  }

  private lookup(lat: number, lon: number, get: (key: number) => DecodedBlock | undefined): number {
    for (const L of this.layers) {
      const cell = locate(lat, lon, L.originLat, L.originLon, L.stepLat, L.stepLon, L.rows, L.cols);
      if (!cell) continue;
      const { r0, c0 } = cell;
      const h = bilinear(this.post(L, r0, c0, get), this.post(L, r0, c0 + 1, get), this.post(L, r0 + 1, c0, get), this.post(L, r0 + 1, c0 + 1, get), cell.dx, cell.dy);
      if (h === h) return h;
    }
    return NaN;
  }

  /**
   * Height at (lat, lon) from cached blocks only: a number, null (no data), or undefined when a
   * needed block is not in the cache yet (call `preload` or `heights`).
   */
  heightAt(lat: number, lon: number): number | null | undefined {
    // Fast path, no allocation: the four posts in one cached block of the first layer holding the point.
    for (const L of this.layers) {
      let fy = (L.originLat - lat) / L.stepLat;
      let fx = (lon - L.originLon) / L.stepLon;
      if (!(fy >= 0 && fx >= 0 && fy < L.rows - 1 && fx < L.cols - 1)) break;
      const ry = Math.round(fy), rx = Math.round(fx);
      if (Math.abs(fy - ry) < POST_SNAP) fy = ry;
      if (Math.abs(fx - rx) < POST_SNAP) fx = rx;
      const r0 = Math.floor(fy), c0 = Math.floor(fx);
      const rr = r0 & L.mask, cc = c0 & L.mask;
      if (rr === L.mask || cc === L.mask || fy > L.rows - 1 || fx > L.cols - 1) break;
      const key = L.keyBase + (r0 >> L.shift) * L.blockCols + (c0 >> L.shift);
      let b: DecodedBlock | undefined;
      if (key === this.memoKey) b = this.memoBlock;
      else {
        b = this.cache.peek(key) as DecodedBlock | undefined;
        if (!b) return undefined;
        this.memoKey = key;
        this.memoBlock = b;
      }
      if (b.data.length === 0) break;
      const d = b.data, i = rr * b.cols + cc;
      const h = bilinear(d[i], d[i + 1], d[i + b.cols], d[i + b.cols + 1], fx - c0, fy - r0);
      if (h === h) return h;
      break;
    }
    try {
      const h = this.lookup(lat, lon, (k) => this.cache.peek(k) as DecodedBlock | undefined);
      return h === h ? h : null;
    } catch (e) {
      if (e instanceof NotLoaded) return undefined;
      throw e;
    }
  }

  /**
   * Heights on a grid whose rows share a latitude and whose columns share a longitude (a tile's pixel
   * centres): `out[r * lons.length + c]` for (lats[r], lons[c]), NaN where no layer has data. Each
   * point gets exactly the answer `heights` gives it. Returns how many points have a height.
   */
  async sampleGrid(lats: Float64Array, lons: Float64Array, out: Float64Array): Promise<number> {
    const nr = lats.length, nc = lons.length;
    out.fill(NaN, 0, nr * nc);
    let filled = 0;
    for (const L of this.layers) {
      const rows = axisPlan(lats, (lat) => (L.originLat - lat) / L.stepLat, L.rows, L.shift, L.mask);
      if (!rows) continue;
      const cols = axisPlan(lons, (lon) => (lon - L.originLon) / L.stepLon, L.cols, L.shift, L.mask);
      if (!cols) continue;
      const nbc = cols.blocks.length;
      const keys: number[] = [];
      for (const br of rows.blocks) for (const bc of cols.blocks) keys.push(L.keyBase + br * L.blockCols + bc);
      const blocks: DecodedBlock[] = new Array(keys.length);
      for (let i = 0; i < keys.length; i += FETCH_CONCURRENCY) {
        const got = await Promise.all(keys.slice(i, i + FETCH_CONCURRENCY).map((k) => this.block(k)));
        for (let j = 0; j < got.length; j++) blocks[i + j] = got[j];
      }
      filled += fillFromLayer(rows, cols, nbc, blocks, out, nc, filled === 0);
    }
    return filled;
  }

  /**
   * Boxes [west, south, east, north] around every block that holds data, each grown by one post on
   * every side (the interpolated surface reaches halfway into a neighbouring empty block's cell).
   */
  async dataBoxes(): Promise<[number, number, number, number][]> {
    const out: [number, number, number, number][] = [];
    for (const L of this.layers) {
      const total = L.blockRows * L.blockCols;
      for (let first = 0; first < total; first += DIR_PAGE_ENTRIES) {
        const count = Math.min(DIR_PAGE_ENTRIES, total - first);
        const bytes = await this.src.getBytes(L.directoryOffset + first * DIR_ENTRY_BYTES, count * DIR_ENTRY_BYTES);
        if (bytes.length !== count * DIR_ENTRY_BYTES) throw new Error(`${this.src.key()}: truncated block directory`);
        const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
        for (let k = 0; k < count; k++) {
          if (readDirEntry(view, k * DIR_ENTRY_BYTES).width === CodeWidth.Empty) continue;
          const bi = first + k, br = Math.floor(bi / L.blockCols), bc = bi % L.blockCols;
          const r0 = Math.max(0, br * L.blockSize - 1), r1 = Math.min(L.rows - 1, (br + 1) * L.blockSize);
          const c0 = Math.max(0, bc * L.blockSize - 1), c1 = Math.min(L.cols - 1, (bc + 1) * L.blockSize);
          out.push([L.originLon + c0 * L.stepLon, L.originLat - r1 * L.stepLat, L.originLon + c1 * L.stepLon, L.originLat - r0 * L.stepLat]);
        }
      }
    }
    return out;
  }

  /** Heights for `points` (loading blocks as needed), and which points lie outside every source. */
  async heights(points: readonly LatLon[]): Promise<HeightsResult> {
    const blocks = await this.preload(points);
    this.memoKey = -1;
    const get = (k: number) => blocks.get(k);
    const heights = new Array<number | null>(points.length);
    const outside: number[] = [];
    for (let i = 0; i < points.length; i++) {
      const { lat, lon } = points[i];
      const h = this.lookup(lat, lon, get);
      if (h === h) heights[i] = h;
      else {
        heights[i] = null;
        if (!this.inCoverage(lat, lon)) outside.push(i);
      }
    }
    this.memoKey = -1;
    return { heights, outside };
  }
}

/** Internal: a lookup needed a block that is not cached. */
class NotLoaded extends Error {
  constructor(readonly key: number) {
    super(`block ${key} not loaded`);
  }
}
