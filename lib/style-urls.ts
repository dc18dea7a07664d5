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
