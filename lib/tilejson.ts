/** TileJSON documents of a build's tilesets, as the server hands them out and the render page reads them. */
import type { TilesetEntry } from './manifest.ts';
import { centerInBounds } from './tile-math.ts';

/** TileJSON version of every TileJSON tilebake writes. */
export const TILEJSON_VERSION = '3.0.0';

/**
 * Build the TileJSON 3.0.0 document of one tileset, with absolute tile URLs under `baseUrl`. With
 * `encoding: 'mlt'` (a vector tileset with an MLT archive) its tiles are the `.mlt` ones and it says
 * `"encoding": "mlt"`, which MapLibre GL JS reads as the source's encoding. A raster tileset with @2x
 * tiles adds `tiles_2x` and `maxzoom_2x` (extensions, as the styles' raster TileJSON has `tiles_2x`):
 * 512 px images of the same tiles, to be drawn at `tileSize` 256 on high-DPI screens.
 */
export function tileJson(id: string, entry: TilesetEntry, baseUrl: string, opts: { encoding?: 'mvt' | 'mlt' } = {}): Record<string, unknown> {
  const mlt = opts.encoding === 'mlt' && entry.kind === 'vector';
  const ext = mlt ? 'mlt' : entry.format;
  const doc: Record<string, unknown> = {
    tilejson: TILEJSON_VERSION,
    name: entry.name ?? id,
    ...(entry.description ? { description: entry.description } : {}),
    ...(entry.attribution ? { attribution: entry.attribution } : {}),
    scheme: 'xyz',
    tiles: [`${baseUrl}/data/${encodeURIComponent(id)}/{z}/{x}/{y}.${ext}`],
    minzoom: entry.minzoom,
    maxzoom: entry.maxzoom,
    bounds: entry.bounds,
    // Inside the bounds, also for manifests written before the pipeline made sure of it.
    center: centerInBounds(entry.bounds, entry.center, entry.minzoom, entry.maxzoom),
    format: ext,
  };
  if (entry.kind === 'vector') doc.vector_layers = entry.vector_layers ?? [];
  if (entry.tileSize) doc.tileSize = entry.tileSize;
  if (entry.kind === 'raster' && entry.hidpi) {
    doc.tiles_2x = [`${baseUrl}/data/${encodeURIComponent(id)}/{z}/{x}/{y}@2x.${ext}`];
    doc.maxzoom_2x = entry.hidpi.maxzoom;
  }
  if (entry.kind === 'terrain' && entry.encoding) doc.encoding = entry.encoding;
  if (mlt) doc.encoding = 'mlt';
  return doc;
}

