/**
 * Finished static images, keyed by their normalised request (style, archive and every parsed
 * parameter, hashed), so an image embedded in a page is composed once, not on every view of the
 * page. One cache per server context, and a new build version gets a new context, so a rebuild never
 * serves an old image. An LRU bounded in bytes (an eighth of the tile cache's share of `--cache-mb`),
 * metric cache name `static-images`; concurrent requests for one image share one composition.
 *
 * A PNG's bytes come from the encoded-image pool (pixel-pool.ts) and go back to it once the cache has
 * dropped the image and no response is sending it (`lendImage`): new memory for every image made V8
 * run a full mark-compact every ~20 images (docs/static-map-speed.md, seventh round).
 */
import { createHash } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { cacheBudgetBytes, type ServerContext } from '../context.ts';
import { serverMetrics } from '../metrics.ts';
import type { TileBody } from '../tile-response.ts';
import { BoundedCache } from '../../lib/bounded-cache.ts';
import type { StaticMapRequest } from './params.ts';
import { encodedPool } from './pixel-pool.ts';

/** An encoded image and the zoom of the tiles it was made from. */
export interface StaticImage {
  body: TileBody;
  sourceZoom: number;
  /** Responses sending it now. */
  users: number;
  /** Out of the cache (or never in it). */
  dropped: boolean;
}

/** A new image: `body` (bytes from `allocateImage`, or not pooled: JPEG) and the zoom of its tiles. */
export function staticImage(body: TileBody, sourceZoom: number): StaticImage {
  return { body, sourceZoom, users: 0, dropped: false };
}

/** A buffer for an encoded image of `bytes` bytes, from the pool (encodeImage's `allocate`). */
export function allocateImage(bytes: number): Buffer {
  return encodedPool.acquire(bytes);
}

/** Hand the image's bytes back to the pool when nothing holds them any more (foreign buffers are ignored). */
function recycle(image: StaticImage): void {
  if (image.dropped && image.users === 0) encodedPool.release(image.body.bytes);
}

/**
 * Keep `image`'s bytes for `res` until it closes (sent, or the client gone). A response already closed
 * is not counted: its bytes are not sent.
 */
export function lendImage(image: StaticImage, res: ServerResponse): void {
  if (res.closed) return;
  image.users++;
  res.once('close', () => {
    image.users--;
    recycle(image);
  });
}

/**
 * An image left the cache: recycled once the requests waiting on its composition have taken it (their
 * continuations run as microtasks, before this), and no response sends it.
 */
function dropped(image: StaticImage): void {
  image.dropped = true;
  setImmediate(recycle, image);
}

/** Share of the tile cache's budget given to finished static images. */
const IMAGES_SHARE = 1 / 8;
/** Rough per-entry overhead (key, map slot, ETag). */
const ENTRY_OVERHEAD_BYTES = 200;

/** The cache key of an image: the same parsed request gives the same key however its URL was spelled. */
export function staticImageKey(style: string, archive: string, request: StaticMapRequest): string {
  return createHash('sha256').update(JSON.stringify([style, archive, request])).digest('base64url');
}

/** Finished static images of one server context. */
export type StaticImages = BoundedCache<StaticImage>;

const byContext = new WeakMap<ServerContext, StaticImages>();

/** The static image cache of a server context (created on first use). */
export function staticImagesOf(ctx: ServerContext): StaticImages {
  let c = byContext.get(ctx);
  if (!c) {
    // An image costs the memory it holds: its whole (pooled) buffer.
    c = new BoundedCache<StaticImage>(Math.floor(cacheBudgetBytes(ctx, 'tiles') * IMAGES_SHARE), (image) => image.body.bytes.buffer.byteLength + ENTRY_OVERHEAD_BYTES, dropped);
    serverMetrics().watchCache('static-images', c.entries);
    byContext.set(ctx, c);
  }
  return c;
}
