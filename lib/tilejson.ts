/** TileJSON documents of a build's tilesets, as the server hands them out and the render page reads them. */
import type { TilesetEntry } from './manifest.ts';
import { centerInBounds } from './tile-math.ts';

/** TileJSON version of every TileJSON tilebake writes. */
export const TILEJSON_VERSION = '3.0.0';

/** Build the TileJSON 3.0.0 document of one tileset, with absolute tile URLs under `baseUrl`. */
export function tileJson(id: string, entry: TilesetEntry, baseUrl: string): Record<string, unknown> {
  const doc: Record<string, unknown> = {
    tilejson: TILEJSON_VERSION,
    name: entry.name ?? id,
    ...(entry.description ? { description: entry.description } : {}),
    ...(entry.attribution ? { attribution: entry.attribution } : {}),
    scheme: 'xyz',
    tiles: [`${baseUrl}/data/${encodeURIComponent(id)}/{z}/{x}/{y}.${entry.format}`],
    minzoom: entry.minzoom,
    maxzoom: entry.maxzoom,
    bounds: entry.bounds,
    // Inside the bounds, also for manifests written before the pipeline made sure of it.
    center: centerInBounds(entry.bounds, entry.center, entry.minzoom, entry.maxzoom),
    format: entry.format,
  };
  if (entry.kind === 'vector') doc.vector_layers = entry.vector_layers ?? [];
  if (entry.tileSize) doc.tileSize = entry.tileSize;
  if (entry.kind === 'terrain' && entry.encoding) doc.encoding = entry.encoding;
  return doc;
}

