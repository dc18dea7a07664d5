/**
 * Canonical re-encoding of the generator's vector tiles, and the per-tile fields it cannot compute.
 *
 * tilemaker 2.2 orders the features of a layer by z-order, then by the memory address of their
 * attribute set, which changes from run to run (threads) and with any edit anywhere in the input.
 * Here every layer's features are sorted by content (the profile's `_zorder` first, so roads keep
 * their drawing order), each feature's tags by key, and the key/value tables rebuilt in first-use
 * order: the same features always give the same bytes, whatever happened elsewhere in the extract.
 * A polygon ring that covers its whole tile is replaced by one canonical rectangle (fill.ts), so a tile
 * of open sea or forest has the same bytes wherever it lies.
 *
 * OpenMapTiles' `rank` of POIs, peaks and small places is a position within a label grid cell
 * (row_number over LabelGrid in its SQL), which needs all of a tile's features at once: the profile
 * gives each such feature an importance (`_rank_order`, lower first) and the rank is computed here.
 * Attributes named `_…` are instructions to this step and are removed.
 */
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { gunzipIfGzipped } from '../../lib/gzip.ts';
import { packagePath } from '../../lib/package-root.ts';
import { PbfReader } from 'pbf';
import { decodeTile, encodeTile, valueKey, type RawFeature, type RawLayer } from '../../lib/mvt.ts';
import { fillFeature } from './fill.ts';

/** Label grid of OpenMapTiles' rank: cell size in pixels and the value added to the position. */
export interface GridRank {
  cellPx: number;
  offset: number;
}

/** Layers whose `rank` is a label grid position (OpenMapTiles' layer SQL). */
export const GRID_RANKS: Record<string, GridRank> = {
  poi: { cellPx: 100, offset: 0 },
  mountain_peak: { cellPx: 100, offset: 0 },
  place: { cellPx: 128, offset: 10 },
};

/** The attribute prefix of instructions to this step. */
const HIDDEN = '_';
const Z_ORDER = '_zorder';
const RANK_ORDER = '_rank_order';
/** Pixels per tile side for the label grid. */
const TILE_PX = 256;

/** The content key features are sorted by (after `_zorder`): type, tags, geometry. */
function tagsKey(f: RawFeature): string {
  return [...f.tags.keys()]
    .filter((k) => k !== Z_ORDER)
    .sort()
    .map((k) => `${k}\u0000${valueKey(f.tags.get(k)!, f.floatKeys?.has(k) ?? false)}`)
    .join('\u0001');
}

function compareFeatures(a: RawFeature & { key: string }, b: RawFeature & { key: string }): number {
  const za = Number(a.tags.get(Z_ORDER) ?? 0);
  const zb = Number(b.tags.get(Z_ORDER) ?? 0);
  if (za !== zb) return za - zb;
  if (a.type !== b.type) return a.type - b.type;
  if (a.key !== b.key) return a.key < b.key ? -1 : 1;
  return Buffer.compare(a.geometry, b.geometry);
}

/** The first point of a geometry command stream (tile coordinates). */
export function firstPoint(geometry: Uint8Array): [number, number] {
  const p = new PbfReader(geometry);
  p.readVarint(); // MoveTo command
  const dx = p.readSVarint();
  const dy = p.readSVarint();
  return [dx, dy];
}

/** Set `rank` on the features carrying `_rank_order`: 1-based position in their label grid cell. */
function gridRanks(layer: RawLayer, grid: GridRank, x: number, y: number): void {
  const cells = new Map<string, RawFeature[]>();
  for (const f of layer.features) {
    if (!f.tags.has(RANK_ORDER)) continue;
    const [px, py] = firstPoint(f.geometry);
    const gx = Math.floor((x * TILE_PX + (px * TILE_PX) / layer.extent) / grid.cellPx);
    const gy = Math.floor((y * TILE_PX + (py * TILE_PX) / layer.extent) / grid.cellPx);
    const key = `${gx},${gy}`;
    const list = cells.get(key);
    if (list) list.push(f);
    else cells.set(key, [f]);
  }
  for (const list of cells.values()) {
    // Stable sort: equal importance keeps the canonical order.
    list.sort((a, b) => Number(a.tags.get(RANK_ORDER)) - Number(b.tags.get(RANK_ORDER)));
    list.forEach((f, i) => f.tags.set('rank', grid.offset + i + 1));
  }
}

/** A layer with its fill rings made canonical and its features sorted by content (`_zorder` first). */
function sortedLayer(l: RawLayer): RawLayer {
  const keyed = l.features.map((f) => Object.assign(fillFeature(f, l.extent), { key: tagsKey(f) }));
  keyed.sort(compareFeatures);
  return { ...l, features: keyed.map(({ key: _key, ...f }) => f) };
}

/** Canonical layers: features sorted by content, label grid ranks set, `_…` attributes removed. */
export function canonicalLayers(layers: RawLayer[], x: number, y: number, grids: Record<string, GridRank> = GRID_RANKS): RawLayer[] {
  return layers.map((l) => {
    const layer = sortedLayer(l);
    const grid = grids[l.name];
    if (grid) gridRanks(layer, grid, x, y);
    for (const f of layer.features) {
      for (const k of [...f.tags.keys()]) if (k.startsWith(HIDDEN)) f.tags.delete(k);
      if (f.floatKeys) for (const k of f.floatKeys) if (!f.tags.has(k)) f.floatKeys.delete(k);
    }
    return layer;
  });
}

/** gzip level of the written tiles (fixed, so equal tiles give equal bytes). */
const GZIP_LEVEL = 6;

let layerOrder: Map<string, number> | undefined;
/** The profile's layers in the order tilemaker writes them (openmaptiles.json), read once. */
function profileOrder(): Map<string, number> {
  layerOrder ??= new Map(Object.keys((JSON.parse(readFileSync(packagePath('pipeline', 'osm', 'openmaptiles.json'), 'utf8')) as { layers: object }).layers).map((n, i) => [n, i]));
  return layerOrder;
}

/**
 * The layers of several tiles of one place as one tile: features of layers with the same name together,
 * layers in the profile's order (whichever part brought them: the extract's run, the ocean, the world).
 */
export function mergeLayers(tiles: RawLayer[][]): RawLayer[] {
  const byName = new Map<string, RawLayer>();
  for (const layers of tiles) {
    for (const l of layers) {
      const have = byName.get(l.name);
      if (!have) byName.set(l.name, { ...l, features: [...l.features] });
      else if (have.extent === l.extent) have.features.push(...l.features);
      else throw new Error(`layer ${l.name}: tiles with extents ${have.extent} and ${l.extent} cannot be merged`);
    }
  }
  const order = profileOrder();
  const rank = (name: string) => order.get(name) ?? order.size;
  return [...byName.values()].sort((a, b) => rank(a.name) - rank(b.name) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** Decode a stored tile (gzip or plain). */
export const decodeStored = (data: Uint8Array): RawLayer[] => decodeTile(gunzipIfGzipped(data));

/** The layers of several tiles of one place as one canonical tile, gzipped; undefined when no layer has a feature. */
export function canonicalEncode(parts: RawLayer[][], x: number, y: number): Uint8Array | undefined {
  const layers = mergeLayers(parts).filter((l) => l.features.length > 0);
  return layers.length > 0 ? gzipSync(encodeTile(canonicalLayers(layers, x, y)), { level: GZIP_LEVEL }) : undefined;
}

/** Re-encode one stored tile (gzip or plain, with more tiles of the same place merged in) canonically; the result is gzipped. */
export function canonicalTile(data: Uint8Array, x: number, y: number, ...more: Uint8Array[]): Uint8Array {
  const layers = mergeLayers([data, ...more].map(decodeStored));
  return gzipSync(encodeTile(canonicalLayers(layers, x, y)), { level: GZIP_LEVEL });
}

/**
 * The generator's features of one tile in canonical order with the `_…` instructions kept (no ranks
 * computed): equal bytes for equal features, so two runs over different data can be compared tile by
 * tile, instructions that change other features' ranks included (see pipeline/osm/changed-tiles.ts).
 */
export function comparableTile(data: Uint8Array): Uint8Array {
  return encodeTile(decodeTile(gunzipIfGzipped(data)).filter((l) => l.features.length > 0).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)).map(sortedLayer));
}

/**
 * Remove `_…` fields from TileJSON `vector_layers` (and list `rank` where it is computed here, and the
 * `extra` fields per layer that runs other than the extract's write, e.g. Natural Earth's).
 */
export function publicVectorLayers(layers: unknown[] | undefined, extra: Record<string, Record<string, string>> = {}): unknown[] | undefined {
  return layers?.map((l) => {
    if (typeof l !== 'object' || l === null) return l;
    const layer = l as { id?: string; fields?: Record<string, unknown> };
    if (!layer.fields) return l;
    const fields: Record<string, unknown> = { ...(layer.id ? extra[layer.id] : undefined) };
    for (const [k, v] of Object.entries(layer.fields)) if (!k.startsWith(HIDDEN)) fields[k] = v;
    if (RANK_ORDER in layer.fields && layer.id && GRID_RANKS[layer.id]) fields.rank = 'Number';
    return { ...layer, fields: Object.fromEntries(Object.entries(fields).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) };
  });
}
