/**
 * Static map images composed from the style's baked raster tiles (static-server/static-map/), up to the
 * style's served maxzoom:
 * - `GET /styles/{style}/static/{view}/{width}x{height}[@2x].{png|jpg|webp}` with the URL's overlays;
 * - `POST` to the same URL, or to `/styles/{style}/static/{width}x{height}[@2x].{fmt}` (the view fits the
 *   overlays, or `?center=`), with a GeoJSON body (a Feature or FeatureCollection with simplestyle
 *   properties, static-map/geojson.ts) of at most `--max-static-body` bytes; `GET` of either URL takes the
 *   same GeoJSON URL-encoded in `?geojson=`.
 * Every composition waits in the one bounded queue (503 with Retry-After when it is full).
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { UserError } from '../../lib/errors.ts';
import { servedMaxzoom, type StyleArchive, type StyleEntry } from '../../lib/manifest.ts';
import { archivesOf } from '../archives.ts';
import { BoundedQueue } from '../bounded-queue.ts';
import { HttpError, type RouteModule, type ServerContext } from '../context.ts';
import { sendError } from '../errors.ts';
import { HttpStatus } from '../../lib/http-status.ts';
import { SOURCE_ZOOM_HEADER } from '../overzoom/policy.ts';
import { styleRasterSource } from '../overzoom/upscale.ts';
import { cameraFor } from '../static-map/camera.ts';
import { composeImage } from '../static-map/compose.ts';
import { decodedTilesOf } from '../static-map/decoded-tiles.ts';
import { staticImageKey, staticImagesOf } from '../static-map/image-cache.ts';
import { overlayLayers } from '../static-map/overlay.ts';
import { DEFAULT_MAX_STATIC_BODY, parseStaticMapRequest, staticMapLimitsFromEnv, type StaticMapLimits } from '../static-map/params.ts';
import { spriteIconsOf } from '../static-map/sprite-icons.ts';
import { bakedVariant } from '../styles/language.ts';
import { sendTile, TILE_CONTENT_TYPES, tileBody } from '../tile-response.ts';

/** Seconds a client refused by the queue is asked to wait. */
const RETRY_AFTER_S = 1;
/** Content types of a POSTed body (parsed by json-body.ts). */
const GEOJSON_TYPE = /^application\/(geo\+)?json\b/i;
/** Answers to POST are not for caches: the body is the request. */
const NO_STORE = 'no-store';

/** The archive an image at `scale` is made from: that scale (PNG before JPEG), else the other scale. */
function archiveFor(entry: StyleEntry, scale: 1 | 2): StyleArchive | undefined {
  const rank = (a: StyleArchive) => (a.scale === scale ? 0 : 2) + (a.format === 'png' ? 0 : 1);
  return Object.values(entry.archives).sort((a, b) => rank(a) - rank(b))[0];
}

/** `--max-static-body`, checked. */
function maxBodyOf(ctx: ServerContext): number {
  const max = ctx.options.maxStaticBody ?? DEFAULT_MAX_STATIC_BODY;
  if (!(Number.isInteger(max) && max >= 1)) throw new UserError(`--max-static-body: expected a whole number of bytes >= 1 (got ${max})`, { exitCode: 2 });
  return max;
}

type Params = { style: string; view?: string; size: string };

export function createStaticMapRoutes(limits: StaticMapLimits): RouteModule {
  return async (app: FastifyInstance, ctx: ServerContext) => {
    const archives = archivesOf(ctx);
    const decoded = decodedTilesOf(ctx);
    const images = staticImagesOf(ctx);
    const sprites = spriteIconsOf(ctx);
    const queue = new BoundedQueue({ concurrency: limits.concurrency, queue: limits.queue, what: 'static images', retryAfterS: RETRY_AFTER_S });
    const maxBody = maxBodyOf(ctx);

    const answer = async (req: FastifyRequest<{ Params: Params }>, reply: FastifyReply, body?: unknown) => {
      const { style: asked, view, size } = req.params;
      if (!ctx.manifest.styles[asked]) throw new HttpError(HttpStatus.NotFound, `unknown style "${asked}"`, { styles: Object.keys(ctx.manifest.styles) });
      const request = parseStaticMapRequest(view, size, req.query as Record<string, unknown>, limits, body);
      // `?language=`: composed from the style's variant baked in it.
      const { id, entry } = request.language === undefined ? { id: asked, entry: ctx.manifest.styles[asked] } : bakedVariant(ctx.manifest.styles, asked, request.language);
      const archive = archiveFor(entry, request.scale);
      if (!archive) throw new HttpError(HttpStatus.NotFound, `style "${id}" has no raster tiles to compose images from`);
      // GeoJSON `marker-symbol`s: icons of the style's sprite, else pin labels, else a 400 naming the feature.
      const icons = await sprites.resolve(id, entry, request.scale, request.markers);
      const cam = cameraFor(request, entry.maxzoom);
      const maxzoom = servedMaxzoom(entry);
      if (cam.zoom < entry.minzoom || cam.zoom > maxzoom) {
        const what = request.view.kind === 'center' ? `zoom ${cam.zoom}` : `the fitted zoom ${cam.zoom.toFixed(2)}`;
        throw new HttpError(HttpStatus.BadRequest, `${what} is outside the zoom range of style "${id}": ${entry.minzoom}-${maxzoom}`, { minzoom: entry.minzoom, maxzoom });
      }
      // A cached image skips the queue: only compositions are bounded.
      const image = await images.getOrLoad(staticImageKey(id, archive.archive, request), () =>
        queue.run(async () => {
          const { bytes, sourceZoom } = await composeImage(cam, styleRasterSource(archives, decoded, entry, archive), overlayLayers(cam, request.paths, request.markers, icons), request.format);
          return { body: tileBody(bytes), sourceZoom };
        }),
      );
      reply.header(SOURCE_ZOOM_HEADER, String(image.sourceZoom));
      const contentType = TILE_CONTENT_TYPES[request.format];
      if (req.method === 'POST') return reply.header('etag', image.body.etag).header('cache-control', NO_STORE).type(contentType).send(image.body.bytes);
      return sendTile(req, reply, image.body, { contentType, gzip: false, cacheControl: ctx.cache.data });
    };

    // A body over the limit is a 413 naming it; fastify's other body errors (not JSON, a charset) keep their status.
    const errorHandler = (err: FastifyError, req: FastifyRequest, reply: FastifyReply) =>
      sendError(ctx, err.statusCode === HttpStatus.PayloadTooLarge ? new HttpError(HttpStatus.PayloadTooLarge, `request body larger than ${maxBody} bytes (this server's --max-static-body)`, { limit: maxBody }) : err, req, reply);
    const post = { bodyLimit: maxBody, errorHandler };
    for (const url of ['/styles/:style/static/:view/:size', '/styles/:style/static/:size']) {
      app.get<{ Params: Params }>(url, (req, reply) => answer(req, reply));
      app.post<{ Params: Params }>(url, post, (req, reply) => {
        if (!GEOJSON_TYPE.test(req.headers['content-type'] ?? '')) {
          throw new HttpError(HttpStatus.UnsupportedMediaType, `expected a GeoJSON body with Content-Type: application/geo+json or application/json (got ${JSON.stringify(req.headers['content-type'] ?? '')})`);
        }
        if (req.body === undefined || req.body === null) throw new HttpError(HttpStatus.BadRequest, 'expected a GeoJSON body (a Feature or FeatureCollection)');
        return answer(req, reply, req.body);
      });
    }
  };
}

/** The static map route module (limits from TILEBAKE_STATIC_* environment variables, else defaults). */
export const registerStaticMapRoutes: RouteModule = (app, ctx) => createStaticMapRoutes(staticMapLimitsFromEnv())(app, ctx);
