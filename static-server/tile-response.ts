import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { isGzip } from '../lib/gzip.ts';
import { HttpStatus } from '../lib/http-status.ts';

/** Stored tile bytes with their strong ETag, computed once when the tile enters the cache. */
export interface TileBody {
  /** The bytes as stored in the archive (gzip for most vector tiles). */
  bytes: Buffer;
  /** Strong ETag of the stored representation, quoted. */
  etag: string;
}

/** How `sendTile` answers. */
export interface TileSendOptions {
  /** Content-Type of the (decompressed) tile, e.g. `application/x-protobuf`, `image/png`. */
  contentType: string;
  /** True when the archive stores tiles gzip-compressed (PMTiles tile compression gzip). */
  gzip: boolean;
  /** Cache-Control header value (`--cache-control`). */
  cacheControl: string;
  /** The decompressed representation of a gzip tile, for clients without gzip (required when `gzip`). */
  decompress?: (tile: TileBody) => Promise<TileBody>;
  /** Request headers the response also varies by (e.g. `Host` for documents with absolute URLs). */
  vary?: string;
}

/** Bytes of the ETag hash kept (128 bits of SHA-256, base64url). */
const ETAG_HASH_BYTES = 16;
/** Suffix that makes the ETag of the decompressed representation differ from the gzip one. */
const IDENTITY_ETAG_SUFFIX = '-identity';

/** Content types by tile extension (`mlt`: the media type the MLT specification names, which MapLibre sends as `Accept`). */
export const TILE_CONTENT_TYPES: Readonly<Record<string, string>> = Object.freeze({
  pbf: 'application/x-protobuf',
  mvt: 'application/vnd.mapbox-vector-tile',
  mlt: 'application/vnd.maplibre-tile',
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  webp: 'image/webp',
});

/** Wrap stored bytes with their strong ETag: a hash of the bytes (node:crypto's SHA-256, shortened). */
export function tileBody(bytes: Uint8Array): TileBody {
  const buf = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const hash = createHash('sha256').update(buf).digest().subarray(0, ETAG_HASH_BYTES).toString('base64url');
  return { bytes: buf, etag: `"${hash}"` };
}

/** The ETag of a gzip tile's decompressed representation (differs from the stored one's). */
export function identityEtag(etag: string): string {
  return etag.slice(0, -1) + IDENTITY_ETAG_SUFFIX + '"';
}

/** Add `value` to the response's Vary header (after what CORS or another step put there). */
export function appendVary(reply: FastifyReply, value: string): void {
  const vary = reply.getHeader('vary');
  reply.header('vary', vary ? `${String(vary)}, ${value}` : value);
}

/** The quality (`q`, default 1) an Accept or Accept-Encoding header gives each listed name, lower-cased. */
function acceptQualities(header: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const part of header.split(',')) {
    const [name, ...params] = part.trim().toLowerCase().split(';');
    let q = 1;
    for (const p of params) {
      const m = /^\s*q\s*=\s*([0-9.]+)\s*$/.exec(p);
      if (m) q = Number(m[1]);
    }
    if (!out.has(name.trim())) out.set(name.trim(), q);
  }
  return out;
}

/**
 * Whether an Accept-Encoding header allows gzip: `gzip` or `*` listed without `q=0`
 * (an explicit `gzip;q=0` wins over `*`).
 */
export function acceptsGzip(header: string | undefined): boolean {
  if (!header) return false;
  if (header === 'gzip' || (header.indexOf(';') < 0 && /(^|[\s,])gzip($|[\s,])/i.test(header))) return true;
  const q = acceptQualities(header);
  return (q.get('gzip') ?? q.get('*') ?? 0) > 0;
}

/**
 * Whether an Accept header asks for MLT rather than MVT: it lists the MLT media type with q > 0 and
 * no MVT type (`application/x-protobuf`, `application/vnd.mapbox-vector-tile`) with a higher q.
 */
export function prefersMlt(header: string | undefined): boolean {
  if (!header || header.indexOf(TILE_CONTENT_TYPES.mlt) < 0) return false;
  const q = acceptQualities(header);
  const mlt = q.get(TILE_CONTENT_TYPES.mlt) ?? 0;
  return mlt > 0 && mlt >= Math.max(q.get(TILE_CONTENT_TYPES.pbf) ?? 0, q.get(TILE_CONTENT_TYPES.mvt) ?? 0);
}

/** Whether an If-None-Match header matches `etag` (weak comparison, `*` matches anything). */
export function etagMatches(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  if (header === etag) return true;
  for (const part of header.split(',')) {
    const tag = part.trim();
    if (tag === '*' || tag === etag || (tag.startsWith('W/') && tag.slice(2) === etag)) return true;
  }
  return false;
}

/**
 * Send a stored tile: strong ETag and If-None-Match → 304, Cache-Control, `Vary: Accept-Encoding`,
 * gzip negotiation (stored gzip bytes with `Content-Encoding: gzip` when the client accepts gzip,
 * else the decompressed bytes under their own ETag, from `opts.decompress`). Shared by the vector and
 * raster routes and the small files (styles, sprites, glyphs).
 */
export function sendTile(req: FastifyRequest, reply: FastifyReply, tile: TileBody, opts: TileSendOptions): FastifyReply | Promise<FastifyReply> {
  const gzipped = opts.gzip && isGzip(tile.bytes);
  const asGzip = gzipped && acceptsGzip(req.headers['accept-encoding']);
  const etag = gzipped && !asGzip ? identityEtag(tile.etag) : tile.etag;
  reply.header('etag', etag);
  reply.header('cache-control', opts.cacheControl);
  appendVary(reply, opts.vary ? `Accept-Encoding, ${opts.vary}` : 'Accept-Encoding');
  if (etagMatches(req.headers['if-none-match'], etag)) {
    return reply.code(HttpStatus.NotModified).send();
  }
  reply.header('content-type', opts.contentType);
  if (asGzip) {
    reply.header('content-encoding', 'gzip');
    return reply.send(tile.bytes);
  }
  if (!gzipped) return reply.send(tile.bytes);
  return opts.decompress!(tile).then((plain) => reply.send(plain.bytes));
}
