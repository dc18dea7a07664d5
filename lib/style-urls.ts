/** The neutral URL scheme of prepared styles: the build writes `tilebake://…` URLs (see StyleEntry.style), a server rewrites them onto its base URL. */
export const NEUTRAL_PREFIX = 'tilebake://';

/** A style JSON as far as URL rewriting cares (MapLibre style spec v8). */
export interface StyleUrls {
  sources?: Record<string, { url?: unknown; tiles?: unknown; data?: unknown; [k: string]: unknown }>;
  sprite?: unknown;
  glyphs?: unknown;
  [k: string]: unknown;
}

/** `url` with a leading `tilebake://` replaced by `base` (which ends with `/`); other values unchanged. */
function absolute(url: unknown, base: string): unknown {
  return typeof url === 'string' && url.startsWith(NEUTRAL_PREFIX) ? base + url.slice(NEUTRAL_PREFIX.length) : url;
}

/**
 * A copy of a prepared style whose neutral URLs (`tilebake://data/<id>.json`, `tilebake://styles/<id>/sprite`,
 * `tilebake://fonts/{fontstack}/{range}.pbf`) point at `baseUrl` (absolute, no trailing slash).
 * Only URL fields are touched: source `url`/`tiles`/`data`, `sprite` (string or array), `glyphs`.
 */
export function rewriteNeutralUrls<T extends StyleUrls>(style: T, baseUrl: string): T {
  const base = `${baseUrl.replace(/\/+$/, '')}/`;
  const out: StyleUrls = { ...style };
  if (style.sources) {
    out.sources = {};
    for (const [id, src] of Object.entries(style.sources)) {
      const s = { ...src };
      if ('url' in s) s.url = absolute(s.url, base);
      if ('data' in s) s.data = absolute(s.data, base);
      if (Array.isArray(s.tiles)) s.tiles = s.tiles.map((t) => absolute(t, base));
      out.sources[id] = s;
    }
  }
  if (Array.isArray(style.sprite)) {
    out.sprite = style.sprite.map((sp: unknown) =>
      sp !== null && typeof sp === 'object' ? { ...sp, url: absolute((sp as { url?: unknown }).url, base) } : sp,
    );
  } else if ('sprite' in style) {
    out.sprite = absolute(style.sprite, base);
  }
  if ('glyphs' in style) out.glyphs = absolute(style.glyphs, base);
  return out as T;
}

/** A prepared style's source URL of a built tileset: `tilebake://data/<id>.json`. */
const TILESET_SOURCE = new RegExp(`^${NEUTRAL_PREFIX}data/([A-Za-z0-9_-]+)\\.json$`);

/** The tileset a prepared style's source loads (`tilebake://data/<id>.json`), undefined for other sources. */
export function sourceTileset(src: { url?: unknown }): string | undefined {
  return typeof src.url === 'string' ? TILESET_SOURCE.exec(src.url)?.[1] : undefined;
}

/**
 * A copy of a prepared style (neutral URLs) whose vector sources of tilesets `hasMlt` accepts load
 * MapLibre Tiles: their TileJSON URL gets `?encoding=mlt` and the source says `"encoding": "mlt"`.
 * Returns the style and the ids of the tilesets switched (none: the style draws no tileset with MLT).
 */
export function withMltSources<T extends StyleUrls>(style: T, hasMlt: (tileset: string) => boolean): { style: T; switched: string[] } {
  const switched: string[] = [];
  if (!style.sources) return { style, switched };
  const sources: NonNullable<StyleUrls['sources']> = {};
  for (const [id, src] of Object.entries(style.sources)) {
    const tileset = src.type === 'vector' ? sourceTileset(src) : undefined;
    if (tileset !== undefined && hasMlt(tileset)) {
      sources[id] = { ...src, url: `${src.url as string}?encoding=mlt`, encoding: 'mlt' };
      switched.push(tileset);
    } else {
      sources[id] = src;
    }
  }
  return { style: { ...style, sources }, switched: [...new Set(switched)] };
}
