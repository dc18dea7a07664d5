/**
 * Static map images: `GET /styles/{style}/static/{view}/{width}x{height}[@2x].{png|jpg|webp}` composed
 * from the style's baked raster tiles (static-server/static-map/), up to the style's served maxzoom.
 */
import type { FastifyInstance } from 'fastify';
import { servedMaxzoom, type StyleArchive, type StyleEntry } from '../../lib/manifest.ts';
import { archivesOf } from '../archives.ts';
import { BoundedQueue } from '../bounded-queue.ts';
import { HttpError, type RouteModule, type ServerContext } from '../context.ts';
import { HttpStatus } from '../../lib/http-status.ts';
import { SOURCE_ZOOM_HEADER } from '../overzoom/policy.ts';
import { styleRasterSource } from '../overzoom/upscale.ts';
import { cameraFor } from '../static-map/camera.ts';
import { composeImage } from '../static-map/compose.ts';
import { decodedTilesOf } from '../static-map/decoded-tiles.ts';
import { staticImageKey, staticImagesOf } from '../static-map/image-cache.ts';
import { overlaySvg } from '../static-map/overlay.ts';
import { parseStaticMapRequest, staticMapLimitsFromEnv, type StaticMapLimits } from '../static-map/params.ts';
import { bakedVariant } from '../styles/language.ts';
import { sendTile, TILE_CONTENT_TYPES, tileBody } from '../tile-response.ts';

/** Seconds a client refused by the queue is asked to wait. */
const RETRY_AFTER_S = 1;

/** The archive an image at `scale` is made from: that scale (PNG before JPEG), else the other scale. */
function archiveFor(entry: StyleEntry, scale: 1 | 2): StyleArchive | undefined {
  const rank = (a: StyleArchive) => (a.scale === scale ? 0 : 2) + (a.format === 'png' ? 0 : 1);
  return Object.values(entry.archives).sort((a, b) => rank(a) - rank(b))[0];
}

export function createStaticMapRoutes(limits: StaticMapLimits): RouteModule {
  return async (app: FastifyInstance, ctx: ServerContext) => {
    const archives = archivesOf(ctx);
    const decoded = decodedTilesOf(ctx);
    const images = staticImagesOf(ctx);
    const queue = new BoundedQueue({ concurrency: limits.concurrency, queue: limits.queue, what: 'static images', retryAfterS: RETRY_AFTER_S });
    app.get<{ Params: { style: string; view: string; size: string } }>('/styles/:style/static/:view/:size', async (req, reply) => {
      const { style: asked, view, size } = req.params;
      if (!ctx.manifest.styles[asked]) throw new HttpError(HttpStatus.NotFound, `unknown style "${asked}"`, { styles: Object.keys(ctx.manifest.styles) });
      const request = parseStaticMapRequest(view, size, req.query as Record<string, unknown>, limits);
      // `?language=`: composed from the style's variant baked in it.
      const { id, entry } = request.language === undefined ? { id: asked, entry: ctx.manifest.styles[asked] } : bakedVariant(ctx.manifest.styles, asked, request.language);
      const archive = archiveFor(entry, request.scale);
      if (!archive) throw new HttpError(HttpStatus.NotFound, `style "${id}" has no raster tiles to compose images from`);
      const cam = cameraFor(request, entry.maxzoom);
      const maxzoom = servedMaxzoom(entry);
      if (cam.zoom < entry.minzoom || cam.zoom > maxzoom) {
        const what = request.view.kind === 'center' ? `zoom ${cam.zoom}` : `the fitted zoom ${cam.zoom.toFixed(2)}`;
        throw new HttpError(HttpStatus.BadRequest, `${what} is outside the zoom range of style "${id}": ${entry.minzoom}-${maxzoom}`, { minzoom: entry.minzoom, maxzoom });
      }
      // A cached image skips the queue: only compositions are bounded.
      const image = await images.getOrLoad(staticImageKey(id, archive.archive, request), () =>
        queue.run(async () => {
          const { bytes, sourceZoom } = await composeImage(cam, styleRasterSource(archives, decoded, entry, archive), overlaySvg(cam, request.paths, request.markers), request.format);
          return { body: tileBody(bytes), sourceZoom };
        }),
      );
      reply.header(SOURCE_ZOOM_HEADER, String(image.sourceZoom));
      return sendTile(req, reply, image.body, { contentType: TILE_CONTENT_TYPES[request.format], gzip: false, cacheControl: ctx.cache.data });
    });
  };
}

/** The static map route module (limits from TILEBAKE_STATIC_* environment variables, else defaults). */
export const registerStaticMapRoutes: RouteModule = (app, ctx) => createStaticMapRoutes(staticMapLimitsFromEnv())(app, ctx);
