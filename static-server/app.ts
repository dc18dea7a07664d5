import Fastify, { LogController, type FastifyBaseLogger, type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { pino, type Logger } from 'pino';
import { rewriteAliasUrl } from './aliases.ts';
import { HttpError, type RouteModule, type ServerContext } from './context.ts';
import { clientErrorHandler, errorBody, MAX_HEADER_BYTES, sendError } from './errors.ts';
import { useCheckedJsonParser } from './json-body.ts';
import { registerHeightRoutes } from './routes/height.ts';
import { registerMaplibreRoutes } from './routes/maplibre.ts';
import { registerMetricsRoute } from './routes/metrics.ts';
import { registerPackRoutes } from './routes/packs.ts';
import { isPublicPreviewPath, registerPreviewRoutes } from './routes/preview.ts';
import { routeKind, serverMetrics } from './metrics.ts';
import { registerSearchRoutes } from './routes/search.ts';
import { registerStaticMapRoutes } from './routes/static-map.ts';
import { registerStyleRoutes } from './routes/styles.ts';
import { registerVectorRoutes } from './routes/vector.ts';
import { registerWmtsRoutes } from './routes/wmts.ts';
import { HttpStatus } from '../lib/http-status.ts';
import { dataAge } from './data-age.ts';
import { checkKey, type KeyGate } from './keys/gate.ts';
import { KeyRing } from './keys/key-ring.ts';
import { keysOfTokens } from './keys/keys-file.ts';
import type { KeysRuntime } from './keys/runtime.ts';
import { registerVersionedCaching } from './versioned.ts';

/**
 * Which listener an app is for: `tiles` (--port) serves everything (and the preview page at `/`,
 * /metrics), `routing` only /height.
 */
export type AppRole = 'tiles' | 'routing';

/** What `buildApp` needs besides the context. */
export interface AppOptions {
  role: AppRole;
  /** SHA-256 hashes of the accepted tokens; null serves without auth (--no-auth). */
  tokenHashes: readonly Buffer[] | null;
  /** The server's keys (keys/runtime.ts); when given, used instead of `tokenHashes`. */
  keys?: KeysRuntime | null;
}

/** The key gate of an app: the server's keys, else secret keys made of `tokenHashes`, else none (--no-auth). */
function gateOf(opts: AppOptions): KeyGate | null {
  if (opts.keys !== undefined) return opts.keys?.gate ?? null;
  return opts.tokenHashes === null ? null : { ring: new KeyRing(keysOfTokens(opts.tokenHashes.map((hash) => ({ hash })))) };
}

/** Paths reachable without a token: /health, and the preview page's files (routes/preview.ts). */
export const HEALTH_PATH = '/health';
/** True for /health with or without a query string. */
function isHealth(url: string): boolean {
  return url === HEALTH_PATH || url.startsWith(`${HEALTH_PATH}?`);
}

/** Methods a 405 answer is given for when a path exists under other methods. */
const ALL_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH'] as const;
/** Request headers browsers may send cross-origin. */
const CORS_ALLOW_HEADERS = 'Authorization, Content-Type, If-None-Match';
/** Response headers browsers may read cross-origin. */
const CORS_EXPOSE_HEADERS = 'ETag, Content-Encoding, WWW-Authenticate, X-Tilebake-Source-Zoom, Retry-After, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset';
/** How long browsers may cache a preflight answer, in seconds. */
const CORS_MAX_AGE_S = 86400;
/** Longest path segment routed (longer ones get a JSON 414). */
const MAX_PARAM_LENGTH = 256;
/** pino levels at which per-request lines are written. */
const DEBUG_LEVELS = new Set(['debug', 'trace']);
/** Marker on routes this file adds to answer 405, so they are not counted as real routes. */
const METHOD_NOT_ALLOWED_ROUTE = Symbol('tilebake.405');

/** The server's pino logger (one per process, shared by its listeners); tokens are redacted. */
export function createLogger(level: string, stream?: NodeJS.WritableStream): Logger {
  const opts = { level, redact: { paths: ['req.headers.authorization', 'headers.authorization', 'authorization'], censor: '[redacted]' } };
  return stream ? pino(opts, stream) : pino(opts);
}

/** Per-request log lines at debug level (nothing is built per request unless debug is on); failures at error. */
class DebugRequestLogs extends LogController {
  constructor(private readonly debug: boolean) {
    super();
  }

  override incomingRequest(request: FastifyRequest): void {
    if (this.debug) request.log.debug({ req: request }, 'incoming request');
  }

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (error) reply.log.error({ res: reply, err: error, responseTime: reply.elapsedTime }, 'request errored');
    else if (this.debug) reply.log.debug({ res: reply, responseTime: reply.elapsedTime }, 'request completed');
  }

  override routeNotFound(request: FastifyRequest): void {
    if (this.debug) request.log.debug({ req: request }, 'route not found');
  }
}

/** Route modules per listener role: the tile host serves everything, the routing host only /height. */
const ROUTES: Readonly<Record<AppRole, readonly RouteModule[]>> = {
  tiles: [registerVectorRoutes, registerStyleRoutes, registerHeightRoutes, registerPreviewRoutes, registerMaplibreRoutes, registerMetricsRoute, registerWmtsRoutes, registerStaticMapRoutes, registerPackRoutes, registerSearchRoutes],
  routing: [registerHeightRoutes],
};

/** The 404 for a request no route matches. */
function notFound(req: FastifyRequest): HttpError {
  return new HttpError(HttpStatus.NotFound, `no route for ${req.method} ${req.url.split('?')[0]}`);
}

/**
 * Build the fastify app for one listener: JSON errors (static-server/errors.ts), 404 and 405 answers,
 * CORS with preflight, bearer auth on everything but GET /health, the preview page and OPTIONS, limits on headers and
 * JSON bodies, /health with the store's state, and the route modules of its role.
 */
export async function buildApp(ctx: ServerContext, opts: AppOptions): Promise<FastifyInstance> {
  const { options } = ctx;
  const cors = options.cors;
  const app = Fastify({
    loggerInstance: ctx.log as FastifyBaseLogger,
    logController: new DebugRequestLogs(DEBUG_LEVELS.has(options.logLevel)),
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    // The hosted API's URL forms answered by tilebake's routes (static-server/aliases.ts).
    rewriteUrl: (req) => rewriteAliasUrl(req.url ?? '/'),
    http: { maxHeaderSize: MAX_HEADER_BYTES },
    clientErrorHandler: clientErrorHandler(cors),
    // Malformed URLs and over-long path segments: the same JSON error body as everything else.
    frameworkErrors: (err: FastifyError, _req: FastifyRequest, reply: FastifyReply) => {
      const status = (err as FastifyError).statusCode ?? HttpStatus.BadRequest;
      if (cors !== '') reply.header('access-control-allow-origin', cors);
      const message =
        err.code === 'FST_ERR_BAD_URL'
          ? 'malformed URL'
          : err.code === 'FST_ERR_MAX_PARAM_LENGTH'
            ? `path segment longer than ${MAX_PARAM_LENGTH} characters`
            : err.message;
      reply.header('cache-control', 'no-store').code(status).send(errorBody(status, message));
    },
    // Answered by the onRequest hook below, in the JSON error shape.
    return503OnClosing: false,
  });
  const gate = gateOf(opts);
  let closing = false;
  app.addHook('preClose', (done) => {
    closing = true;
    done();
  });
  useCheckedJsonParser(app);

  // One onRequest hook for CORS and auth: the hot path pays for a single hook.
  app.addHook('onRequest', (req, reply, done) => {
    if (cors !== '') {
      reply.header('access-control-allow-origin', cors);
      reply.header('access-control-expose-headers', CORS_EXPOSE_HEADERS);
      if (cors !== '*') reply.header('vary', 'Origin');
    }
    if (closing) {
      // Requests still arriving on kept-alive connections while the server drains.
      done(new HttpError(HttpStatus.Unavailable, 'server is shutting down', {}, { connection: 'close' }));
      return;
    }
    const open =
      req.method === 'OPTIONS' || ((req.method === 'GET' || req.method === 'HEAD') && (isHealth(req.url) || (opts.role === 'tiles' && isPublicPreviewPath(req.url))));
    // Unknown routes are answered here, before any request body is parsed (a bad body must not turn 404 into 400).
    const next = (e?: Error) => done(e ?? (req.is404 ? notFound(req) : undefined));
    const refused = open || gate === null ? undefined : checkKey(gate, req, reply, routeKind(req, ctx.manifest));
    if (refused instanceof Promise) refused.then(next, next);
    else next(refused);
  });
  registerVersionedCaching(app, ctx);
  // Requests by route kind and status, latency and bytes (static-server/metrics.ts).
  const metrics = serverMetrics();
  app.addHook('onResponse', (req, reply, done) => {
    const kind = routeKind(req, ctx.manifest);
    metrics.request(kind, reply);
    opts.keys?.record(req, reply, kind);
    done();
  });
  app.setErrorHandler((err: FastifyError, req, reply) => sendError(ctx, err, req, reply));
  app.setNotFoundHandler((req) => {
    throw notFound(req);
  });

  // Record every route's methods, to answer 405 with Allow for the other methods afterwards.
  const methodsByUrl = new Map<string, Set<string>>();
  app.addHook('onRoute', (route) => {
    if ((route.config as Record<symbol, unknown> | undefined)?.[METHOD_NOT_ALLOWED_ROUTE]) return;
    if (route.url.includes('*')) return;
    const set = methodsByUrl.get(route.url) ?? new Set<string>();
    for (const m of [route.method].flat()) set.add(m);
    methodsByUrl.set(route.url, set);
  });

  // For load balancers: 503 while the store's last reads failed (timeouts, connection errors, 5xx).
  app.get(HEALTH_PATH, async (_req, reply) => {
    reply.header('cache-control', 'no-store');
    const state = ctx.health.state();
    const limits = opts.keys?.status();
    if (state.ok) return { status: 'ok', store: 'ok', ...dataAge(ctx.manifest), ...(limits ? { limits } : {}) };
    reply.code(HttpStatus.Unavailable);
    return errorBody(HttpStatus.Unavailable, `the build's storage is failing (${state.failure ?? 'unknown'})`, { store: 'failing' });
  });
  for (const register of ROUTES[opts.role]) await register(app, ctx);

  // CORS preflight (and plain OPTIONS) on any path.
  app.options('*', (req, reply) => {
    if (cors !== '') {
      reply.header('access-control-allow-methods', 'GET, HEAD, POST, OPTIONS');
      reply.header('access-control-allow-headers', CORS_ALLOW_HEADERS);
      reply.header('access-control-max-age', String(CORS_MAX_AGE_S));
    }
    reply.header('allow', 'GET, HEAD, POST, OPTIONS');
    reply.code(HttpStatus.NoContent).send();
  });

  // After all route modules (including ones registered as plugins): 405 for the other methods.
  app.register(async (scope) => {
    for (const [url, methods] of methodsByUrl) {
      const others = ALL_METHODS.filter((m) => !methods.has(m));
      if (others.length === 0) continue;
      const allow = [...methods, 'OPTIONS'].join(', ');
      scope.route({
        method: others,
        url,
        config: { [METHOD_NOT_ALLOWED_ROUTE]: true },
        // Answer in onRequest (after auth), before any body is parsed: a bad body must not turn 405 into 400/415.
        onRequest: async (req) => {
          throw new HttpError(HttpStatus.MethodNotAllowed, `method ${req.method} not allowed on ${req.url.split('?')[0]}`, { allow: [...methods] }, { allow });
        },
        handler: async () => undefined,
      });
    }
  });
  await app.ready();
  return app;
}
