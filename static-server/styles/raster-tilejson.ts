import { servedMaxzoom, type StyleArchive, type StyleEntry } from '../../lib/manifest.ts';
import { TILE_SIZE } from '../../lib/metatiles.ts';
import { TILEJSON_VERSION } from '../../lib/tilejson.ts';

/** Order in which formats are preferred for the main `tiles` URL (and listed in WMTS). */
export const FORMAT_PREFERENCE: readonly StyleArchive['format'][] = ['png', 'jpg', 'webp'];

/** The archive keys of a style (`1x.png`, `2x.jpg`, `1x.webp` ...), sorted: scale, then format. */
export function builtKeys(entry: StyleEntry): string[] {
  return Object.keys(entry.archives).sort();
}

/** The format and scale the main `tiles` URL uses: 1x of the first built format (png before jpg), else 2x. */
function primary(entry: StyleEntry): { format: string; scale: 1 | 2 } | undefined {
  const archives = Object.values(entry.archives);
  for (const scale of [1, 2] as const) {
    for (const format of FORMAT_PREFERENCE) if (archives.some((a) => a.format === format && a.scale === scale)) return { format, scale };
    const any = archives.find((a) => a.scale === scale);
    if (any) return { format: any.format, scale };
  }
  return undefined;
}

/**
 * Raster TileJSON 3.0.0 of a rendered style, absolute URLs under `baseUrl`. `tiles` is the 1x URL of
 * the first built format; `tiles_2x` (extension) is its `@2x` variant when built, and the description says how
 * to ask for every built scale and format.
 */
export function rasterTileJson(id: string, entry: StyleEntry, baseUrl: string): Record<string, unknown> {
  const root = `${baseUrl}/styles/${encodeURIComponent(id)}/{z}/{x}/{y}`;
  const main = primary(entry);
  const built = builtKeys(entry);
  const has = (scale: number, format: string) => entry.archives[`${scale}x.${format}`] !== undefined;
  const doc: Record<string, unknown> = {
    tilejson: TILEJSON_VERSION,
    name: entry.name ?? id,
    description:
      `Raster tiles of style "${id}": /styles/${id}/{z}/{x}/{y}.{format} are ${TILE_SIZE} px tiles, ` +
      `/styles/${id}/{z}/{x}/{y}@2x.{format} are ${TILE_SIZE * 2} px high-DPI tiles (tiles_2x). ` +
      `Built (scale.format): ${built.join(', ') || 'none'}.` +
      (servedMaxzoom(entry) > entry.maxzoom
        ? ` Baked to zoom ${entry.maxzoom}; zooms ${entry.maxzoom + 1}-${servedMaxzoom(entry)} are ${entry.overzoom === 'render' ? 'rendered on demand' : 'upscaled from it'}.`
        : ''),
    ...(entry.attribution ? { attribution: entry.attribution } : {}),
    scheme: 'xyz',
    tiles: main ? [`${root}${main.scale === 2 ? '@2x' : ''}.${main.format}`] : [],
    minzoom: entry.minzoom,
    maxzoom: entry.maxzoom,
    // Extensions: the deepest zoom this server answers, and how tiles above `maxzoom` are made.
    maxzoom_served: servedMaxzoom(entry),
    ...(servedMaxzoom(entry) > entry.maxzoom ? { overzoom: entry.overzoom ?? 'upscale' } : {}),
    bounds: entry.bounds,
    center: entry.center,
    tileSize: main?.scale === 2 ? TILE_SIZE * 2 : TILE_SIZE,
    ...(main ? { format: main.format } : {}),
    built,
  };
  if (main && main.scale === 1 && has(2, main.format)) doc.tiles_2x = [`${root}@2x.${main.format}`];
  return doc;
}
