/**
 * POST /height and GET /height?json=… (Valhalla's elevation API), answered from the build's
 * elevation index through positional reads and an LRU of decoded blocks bounded by --cache-mb.
 */
import type { FastifyError, FastifyInstance, FastifyReply } from 'fastify';
import { ElevationIndex } from '../../lib/elevation/reader.ts';
import { HttpStatus } from '../../lib/http-status.ts';
import { HeightErrorCode, HeightRequestError, buildHeightResponse, heightLimitsFromEnv, parseHeightRequest, type HeightLimits } from '../../lib/elevation/request.ts';
import { HttpError, cacheBudgetBytes, type RouteModule, type ServerContext } from '../context.ts';
import { sendError } from '../errors.ts';
import { checkJsonDepth } from '../json-body.ts';
import { serverMetrics } from '../metrics.ts';
import { notePoints } from '../keys/usage.ts';
import { asStoreError } from '../../lib/store-read.ts';
import { OpenedFile } from '../opened-file.ts';

const BYTES_PER_MB = 1024 * 1024;
/** Prefix of Valhalla's messages for unreadable requests. */
const PARSE_FAILED = 'Failed to parse json request';

/**
 * This route's errors in Valhalla's form, `{"error", "status", "error_code"}`: request errors with
 * their code; fastify's body errors (not JSON, wrong type or charset, too large) as code 100.
 * Everything else goes to the app's error mapping unchanged.
 */
function heightError(err: FastifyError | Error): Error {
  if (err instanceof HeightRequestError) return new HttpError(err.status, err.message, { error_code: err.code });
  const status = (err as FastifyError).statusCode;
  if (status === HttpStatus.PayloadTooLarge) {
    return new HttpError(status, `request body too large: ${err.message}`, { error_code: HeightErrorCode.BadBody });
  }
  if (status === HttpStatus.UnsupportedMediaType || status === HttpStatus.BadRequest) {
    const what = (err as FastifyError).code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' ? 'expected Content-Type: application/json' : err.message;
    return new HttpError(HttpStatus.BadRequest, `${PARSE_FAILED}: ${what}`, { error_code: HeightErrorCode.BadBody });
  }
  return err;
}

/** Build the /height routes with explicit limits (tests); `registerHeightRoutes` reads them from the environment. */
export function createHeightRoutes(limits: HeightLimits): RouteModule {
  return async (app: FastifyInstance, ctx: ServerContext) => {
    const entry = ctx.manifest.elevation;
    const metrics = serverMetrics();
    const file =
      entry &&
      new OpenedFile(ctx.store, entry.index, async (src) => {
        const idx = await ElevationIndex.open(src, Math.max(BYTES_PER_MB, cacheBudgetBytes(ctx, 'elevation')));
        metrics.watchCache('elevation-blocks', idx.cache);
        return idx;
      });
    const index = () => {
      if (!file) throw new HttpError(HttpStatus.NotFound, 'this build has no elevation index (add an "elevation" section to the config, or run `tilebake elevation`)');
      return file.ready ?? file.get();
    };
    const answer = async (body: unknown, reply: FastifyReply) => {
      const idx = await index();
      const req = parseHeightRequest(body, limits);
      const { heights, outside } = await idx.heights(req.points).catch((e: unknown) => {
        throw asStoreError(file!.path, e);
      });
      reply.header('cache-control', ctx.cache.data);
      metrics.heights(heights.length);
      notePoints(reply.request, heights.length);
      reply.type('application/json; charset=utf-8').send(JSON.stringify(buildHeightResponse(req, heights, outside)));
    };
    const errorHandler = (err: FastifyError, req: Parameters<typeof sendError>[2], reply: FastifyReply) => sendError(ctx, heightError(err), req, reply);
    app.post('/height', { bodyLimit: limits.bodyLimitBytes, errorHandler }, async (req, reply) => {
      const type = req.headers['content-type'] ?? '';
      if (!/^application\/json\b/i.test(type)) {
        throw new HeightRequestError(HeightErrorCode.BadBody, `${PARSE_FAILED}: expected Content-Type: application/json (got ${JSON.stringify(type)})`);
      }
      await answer(req.body, reply);
    });
    app.get('/height', { errorHandler }, async (req, reply) => {
      const json = (req.query as Record<string, unknown>).json;
      if (typeof json !== 'string') throw new HeightRequestError(HeightErrorCode.BadBody, `${PARSE_FAILED}: expected the request in the "json" query parameter`);
      let body: unknown;
      try {
        checkJsonDepth(json);
        body = JSON.parse(json);
      } catch (e) {
        throw new HeightRequestError(HeightErrorCode.BadBody, `${PARSE_FAILED}: ${(e as Error).message}`);
      }
      await answer(body, reply);
    });
    app.addHook('onClose', async () => {
      await file?.close();
    });
  };
}

/** The /height route module (limits from TILEBAKE_HEIGHT_* environment variables, else defaults). */
export const registerHeightRoutes: RouteModule = (app, ctx) => createHeightRoutes(heightLimitsFromEnv())(app, ctx);
