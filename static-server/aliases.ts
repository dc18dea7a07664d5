/**
 * The hosted API's other URL forms, answered as aliases of tilebake's own routes: the request's URL
 * is rewritten before routing (fastify `rewriteUrl`), so an alias gets exactly the same handler,
 * auth, headers, bytes and errors as the route it stands for.
 *
 * - `/tiles/{style}/{z}/{x}/{y}[@2x].{png|jpg|webp}` → `/styles/{style}/{z}/{x}/{y}[@2x].{png|jpg|webp}`
 * - `/styles/{style}.json` → `/styles/{style}/style.json` (the style; the raster TileJSON is `/styles/{style}/rendered.json`)
 * - `/elevation/v1` → `/height` (POST, and GET with `?json=`)
 */

/** One alias: a path pattern and the canonical path it stands for. */
interface Alias {
  pattern: RegExp;
  target: (m: RegExpExecArray) => string;
}

/** Path segment: anything but `/` and `?`. */
const SEG = '([^/?]+)';

const ALIASES: readonly Alias[] = [
  { pattern: new RegExp(`^/tiles/${SEG}/${SEG}/${SEG}/${SEG}$`), target: (m) => `/styles/${m[1]}/${m[2]}/${m[3]}/${m[4]}` },
  { pattern: new RegExp(`^/styles/${SEG}\\.json$`), target: (m) => `/styles/${m[1]}/style.json` },
  { pattern: /^\/elevation\/v1$/, target: () => '/height' },
];

/** The canonical URL of an alias URL (query string kept), or the URL unchanged. */
export function rewriteAliasUrl(url: string): string {
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  // The hot path (tiles under /styles and /data) pays for three string tests.
  if (!path.startsWith('/tiles/') && !path.startsWith('/elevation/') && !path.endsWith('.json')) return url;
  for (const a of ALIASES) {
    const m = a.pattern.exec(path);
    if (m) return a.target(m) + (q < 0 ? '' : url.slice(q));
  }
  return url;
}
