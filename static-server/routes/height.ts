/**
 * POST /height and GET /height?json=… (Valhalla's elevation API), answered from the build's
 * elevation index through positional reads and an LRU of decoded blocks bounded by --cache-mb.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ElevationIndex } from '../../lib/elevation/reader.ts';
import { HeightErrorCode, HeightRequestError, buildHeightResponse, heightLimitsFromEnv, parseHeightRequest, type HeightLimits } from '../../lib/elevation/request.ts';
import { HttpError, cacheBudgetBytes, type RouteModule, type ServerContext } from '../context.ts';

const BYTES_PER_MB = 1024 * 1024;
const HTTP_BAD_REQUEST = 400;
const HTTP_NOT_FOUND = 404;
const HTTP_PAYLOAD_TOO_LARGE = 413;
const HTTP_UNSUPPORTED_MEDIA = 415;

/** Turn any error on this route into the JSON body `{"error", "status", "error_code"?}`. */
function sendError(err: FastifyError | Error, req: FastifyRequest, reply: FastifyReply): void {
  if (err instanceof HeightRequestError) {
    reply.code(err.status).send({ error: err.message, status: err.status, error_code: err.code });
    return;
  }
  if (err instanceof HttpError || err.name === 'HttpError') {
    const e = err as HttpError;
    reply.headers(e.headers).code(e.status).send({ error: e.message, status: e.status, ...e.extra });
    return;
  }
  const status = (err as FastifyError).statusCode;
  if (status === HTTP_PAYLOAD_TOO_LARGE) {
    reply.code(status).send({ error: `request body too large: ${err.message}`, status, error_code: HeightErrorCode.BadBody });
    return;
  }
  if (status === HTTP_UNSUPPORTED_MEDIA || status === HTTP_BAD_REQUEST) {
    const what = status === HTTP_UNSUPPORTED_MEDIA ? 'expected Content-Type: application/json' : err.message;
    reply.code(HTTP_BAD_REQUEST).send({ error: `Failed to parse json request: ${what}`, status: HTTP_BAD_REQUEST, error_code: HeightErrorCode.BadBody });
    return;
  }
  if (status !== undefined && status > HTTP_BAD_REQUEST && status < 500) {
    reply.code(status).send({ error: err.message, status });
    return;
  }
  req.log.error({ err }, 'height request failed');
  reply.code(500).send({ error: 'internal server error', status: 500 });
}

/** Build the /height routes with explicit limits (tests); `registerHeightRoutes` reads them from the environment. */
export function createHeightRoutes(limits: HeightLimits): RouteModule {
  return async (app: FastifyInstance, ctx: ServerContext) => {
    const entry = ctx.manifest.elevation;
    let opened: Promise<ElevationIndex> | undefined;
    const index = () => {
      if (!entry) throw new HttpError(HTTP_NOT_FOUND, 'this build has no elevation index (add an "elevation" section to the config, or run `tilebake elevation`)');
      opened ??= ctx.store.openRange(entry.index).then((src) => ElevationIndex.open(src, Math.max(BYTES_PER_MB, cacheBudgetBytes(ctx, 'elevation'))));
      opened.catch(() => { opened = undefined; });
      return opened;
    };
    const answer = async (body: unknown, reply: FastifyReply) => {
      const idx = await index();
      const req = parseHeightRequest(body, limits);
      const { heights, outside } = await idx.heights(req.points);
      reply.type('application/json; charset=utf-8').send(JSON.stringify(buildHeightResponse(req, heights, outside)));
    };
    app.post('/height', { bodyLimit: limits.bodyLimitBytes, errorHandler: sendError }, async (req, reply) => {
      const type = req.headers['content-type'] ?? '';
      if (!/^application\/json\b/i.test(type)) {
        throw new HeightRequestError(HeightErrorCode.BadBody, `Failed to parse json request: expected Content-Type: application/json (got ${JSON.stringify(type)})`);
      }
      await answer(req.body, reply);
    });
    app.get('/height', { errorHandler: sendError }, async (req, reply) => {
      const json = (req.query as Record<string, unknown>).json;
      if (typeof json !== 'string') throw new HeightRequestError(HeightErrorCode.BadBody, 'Failed to parse json request: expected the request in the "json" query parameter');
      let body: unknown;
      try {
        body = JSON.parse(json);
      } catch (e) {
        throw new HeightRequestError(HeightErrorCode.BadBody, `Failed to parse json request: ${(e as Error).message}`);
      }
      await answer(body, reply);
    });
    app.addHook('onClose', async () => {
      if (opened) await (await opened.catch(() => undefined))?.close();
    });
  };
}

/** The /height route module (limits from TILEBAKE_HEIGHT_* environment variables, else defaults). */
export const registerHeightRoutes: RouteModule = (app, ctx) => createHeightRoutes(heightLimitsFromEnv())(app, ctx);
