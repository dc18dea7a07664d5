/**
 * Finished static images, keyed by their normalised request (style, archive and every parsed
 * parameter, hashed), so an image embedded in a page is composed once, not on every view of the
 * page. One cache per server context, and a new build version gets a new context, so a rebuild never
 * serves an old image. An LRU bounded in bytes (an eighth of the tile cache's share of `--cache-mb`),
 * metric cache name `static-images`; concurrent requests for one image share one composition.
 */
import { sha256 } from '../../lib/hash.ts';
import { perContextCache } from '../context-cache.ts';
import type { TileBody } from '../tile-response.ts';
import { BoundedCache } from '../../lib/bounded-cache.ts';
import type { StaticMapRequest } from './params.ts';

/** An encoded image and the zoom of the tiles it was made from. */
export interface StaticImage {
  body: TileBody;
  sourceZoom: number;
}

/** Share of the tile cache's budget given to finished static images. */
const IMAGES_SHARE = 1 / 8;
/** Rough per-entry overhead (key, map slot, ETag). */
const ENTRY_OVERHEAD_BYTES = 200;

/** The cache key of an image: the same parsed request gives the same key however its URL was spelled. */
export function staticImageKey(style: string, archive: string, request: StaticMapRequest): string {
  return sha256(JSON.stringify([style, archive, request]), 'base64url');
}

/** Finished static images of one server context. */
export type StaticImages = BoundedCache<StaticImage>;

/** The static image cache of a server context (created on first use). */
export const staticImagesOf = perContextCache(
  'static-images',
  IMAGES_SHARE,
  (bytes): StaticImages => new BoundedCache<StaticImage>(bytes, (image) => image.body.bytes.length + ENTRY_OVERHEAD_BYTES),
  (c) => c.entries,
);
