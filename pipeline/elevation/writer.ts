import { open } from 'node:fs/promises';
import { produceAtomic } from '../../lib/atomic.ts';
import type { EncodedBlock } from '../../lib/elevation/codec.ts';
import { DEFAULT_BLOCK_SIZE, DIR_ENTRY_BYTES, PREAMBLE_BYTES, blockDims, encodeHeader, writeDirEntry, type DirEntry, type IndexMeta, type LayerMeta } from '../../lib/elevation/format.ts';
import type { Progress } from '../progress.ts';
import { sameLattice, type DemGrid } from './grid.ts';

/** A loaded source with its overlap priority (higher wins). */
export interface PrioritisedGrid {
  grid: DemGrid;
  priority: number;
  /** Position in the source list: among equal priorities, the earlier source wins. */
  order: number;
}

/** One layer to write: its geometry and the sources painted into it, lowest priority first. */
export interface LayerPlan {
  layer: Omit<LayerMeta, 'directoryOffset'>;
  grids: PrioritisedGrid[];
}

/** Quantises one block (a Piscina pool in the pipeline, `encodeBlock` directly in tests). */
export type BlockEncoder = (heights: Float32Array, rows: number, cols: number, where: string) => Promise<EncodedBlock>;

/**
 * Group sources whose posts coincide into layers, ordered for lookup: higher priority first, then
 * finer resolution first (so by default the finer source wins where sources overlap).
 */
export function planLayers(grids: PrioritisedGrid[], blockSize = DEFAULT_BLOCK_SIZE): LayerPlan[] {
  const groups: PrioritisedGrid[][] = [];
  for (const g of grids) {
    const group = groups.find((gr) => sameLattice(gr[0].grid, g.grid));
    if (group) group.push(g);
    else groups.push([g]);
  }
  const plans = groups.map((group): LayerPlan => {
    const ref = group[0].grid;
    const { stepLat, stepLon } = ref;
    const originLat = Math.max(...group.map((g) => g.grid.originLat));
    const originLon = Math.min(...group.map((g) => g.grid.originLon));
    const rows = Math.max(...group.map((g) => Math.round((originLat - g.grid.originLat) / stepLat) + g.grid.rows));
    const cols = Math.max(...group.map((g) => Math.round((g.grid.originLon - originLon) / stepLon) + g.grid.cols));
    const painted = [...group].sort((a, b) => a.priority - b.priority || b.order - a.order);
    return {
      layer: {
        originLat, originLon, stepLat, stepLon, rows, cols, blockSize,
        blockRows: Math.ceil(rows / blockSize), blockCols: Math.ceil(cols / blockSize),
        priority: Math.max(...group.map((g) => g.priority)),
        sources: group.map((g) => g.grid.file),
      },
      grids: painted,
    };
  });
  return plans.sort((a, b) => b.layer.priority - a.layer.priority || a.layer.stepLat * a.layer.stepLon - b.layer.stepLat * b.layer.stepLon);
}

/** Heights of block (br, bc) of a layer: every source's valid posts painted in priority order. */
export function assembleBlock(plan: LayerPlan, br: number, bc: number): Float32Array {
  const L = plan.layer;
  const { rows, cols } = blockDims({ ...L, directoryOffset: 0 }, br, bc);
  const r0 = br * L.blockSize, c0 = bc * L.blockSize;
  const out = new Float32Array(rows * cols).fill(NaN);
  for (const { grid } of plan.grids) {
    const gr0 = Math.round((L.originLat - grid.originLat) / L.stepLat);
    const gc0 = Math.round((grid.originLon - L.originLon) / L.stepLon);
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
  return [Math.min(...boxes.map((b) => b[0])), Math.min(...boxes.map((b) => b[1])), Math.max(...boxes.map((b) => b[2])), Math.max(...boxes.map((b) => b[3]))];
}

/** Blocks quantised concurrently (bounds memory). */
const BLOCKS_IN_FLIGHT = 16;

/**
 * Write the index file atomically: preamble + metadata, each layer's directory, then the blocks.
 * Returns the metadata and the file size.
 */
export async function writeIndex(path: string, plans: LayerPlan[], precision: number, encode: BlockEncoder, progress?: Progress): Promise<{ meta: IndexMeta; bytes: number }> {
  const coverage = plans.flatMap((p) => p.grids.map((g) => g.grid.footprint));
  const metaFor = (headerLen: number): IndexMeta => {
    let at = headerLen;
    const layers = plans.map((p) => {
      const l: LayerMeta = { ...p.layer, directoryOffset: at };
      at += l.blockRows * l.blockCols * DIR_ENTRY_BYTES;
      return l;
    });
    return { precision, layers, coverage, bounds: unionBounds(coverage), generator: 'tilebake' };
  };
  // The header holds the directory offsets, which depend on the header's own length: iterate.
  let headerLen = PREAMBLE_BYTES;
  let header = encodeHeader(metaFor(headerLen));
  while (header.length !== headerLen) {
    headerLen = header.length;
    header = encodeHeader(metaFor(headerLen));
  }
  const meta = metaFor(headerLen);
  progress?.setTotal(meta.layers.reduce((n, l) => n + l.blockRows * l.blockCols, 0));
  let bytes = 0;
  await produceAtomic(path, async (tmp) => {
    const fh = await open(tmp, 'w');
    try {
      await fh.write(header, 0, header.length, 0);
      let at = meta.layers.reduce((end, l) => Math.max(end, l.directoryOffset + l.blockRows * l.blockCols * DIR_ENTRY_BYTES), headerLen);
      for (let li = 0; li < plans.length; li++) {
        const L = meta.layers[li];
        const n = L.blockRows * L.blockCols;
        const dir = new DataView(new ArrayBuffer(n * DIR_ENTRY_BYTES));
        for (let first = 0; first < n; first += BLOCKS_IN_FLIGHT) {
          const ids = Array.from({ length: Math.min(BLOCKS_IN_FLIGHT, n - first) }, (_, k) => first + k);
          const encoded = await Promise.all(ids.map((bi) => {
            const br = Math.floor(bi / L.blockCols), bc = bi % L.blockCols;
            const { rows, cols } = blockDims(L, br, bc);
            return encode(assembleBlock(plans[li], br, bc), rows, cols, `${path}: layer ${li} block ${br},${bc}`);
          }));
          for (let k = 0; k < ids.length; k++) {
            const e = encoded[k];
            const entry: DirEntry = { offset: e.payload.length ? at : 0, length: e.payload.length, base: e.base, width: e.width, compression: e.compression };
            if (e.payload.length) {
              await fh.write(e.payload, 0, e.payload.length, at);
              at += e.payload.length;
            }
            writeDirEntry(dir, ids[k] * DIR_ENTRY_BYTES, entry);
          }
          progress?.tick(ids.length);
        }
        await fh.write(new Uint8Array(dir.buffer), 0, dir.byteLength, L.directoryOffset);
      }
      bytes = at;
      await fh.sync();
    } finally {
      await fh.close();
    }
  });
  return { meta, bytes };
}
