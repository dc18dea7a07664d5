import type { FastifyInstance, FastifyRequest } from 'fastify';
import { HttpError, type ServerContext } from '../context.ts';
import type { RenderSession } from '../render-session.ts';
import { StaticFolder } from '../static-files.ts';
import { HttpStatus } from '../http-status.ts';
import { UPLOAD_PREFIX } from '../../lib/upload-receipt.ts';

// The page's path and upload URLs are the contract between the page, this server and the renderer (lib/upload-receipt.ts).
export { RENDER_PAGE_PATH, uploadUrl } from '../../lib/upload-receipt.ts';

/** The render page's files: `/page/render.html` and the modules and worker scripts it loads. */
const PAGE_PREFIX = '/page/';
/** Where the page sends requests for URLs that are not on this server: `GET /__blocked?url=`. */
const BLOCKED_PATH = '/__blocked';
/** Content type of uploads. */
const UPLOAD_TYPE = 'application/octet-stream';
/** Largest upload body accepted at all (each upload is further limited to the size its slot expects). */
const MAX_UPLOAD_BYTES = 1024 * 1024 * 1024;

/** A positive integer query parameter, or a 400 naming it. */
function dimension(query: Record<string, string | undefined>, name: string): number {
  const v = Number(query[name]);
  if (!Number.isInteger(v) || v < 1) throw new HttpError(HttpStatus.BadRequest, `upload: ${name} must be a positive integer (got "${query[name] ?? ''}")`);
  return v;
}

/** What a failed request of the page asked for: the refused URL for /__blocked, else this server's URL, decoded. */
function requestedUrl(req: FastifyRequest, base: string): string {
  const u = new URL(req.url, 'http://x');
  if (u.pathname === BLOCKED_PATH) return u.searchParams.get('url') ?? req.url;
  try {
    return base + decodeURIComponent(req.url);
  } catch {
    return base + req.url;
  }
}

/** The `error` of a JSON error body, else the body as text. */
function errorOf(payload: unknown): string {
  const text = typeof payload === 'string' ? payload : Buffer.isBuffer(payload) ? payload.toString('utf8') : '';
  try {
    const e = (JSON.parse(text) as { error?: unknown }).error;
    return typeof e === 'string' ? e : text;
  } catch {
    return text;
  }
}

/** The session of the render role; the app cannot serve the render page without one. */
function sessionOf(ctx: ServerContext): RenderSession {
  if (!ctx.render) throw new Error('the render role needs a RenderSession (ServerContext.render)');
  return ctx.render;
}

/**
 * The render page's routes (the `render` role, loopback only): `GET /page/{file}` (the page),
 * `POST /__upload/{id}` (its pixels, into the session's upload slots, answered with a receipt),
 * `GET /__blocked?url=` (404 naming a URL the page may not load), `GET /favicon.ico` (204). Every
 * other request of the page that fails (404 for a glyph range, a sprite, a tile…) is recorded in
 * the session, so that the build fails naming it.
 */
export async function registerRenderPageRoutes(app: FastifyInstance, ctx: ServerContext): Promise<void> {
  const session = sessionOf(ctx);
  const page = new StaticFolder(session.pageDir);
  const cacheControl = ctx.cache.data;

  // The cause of a 500 (its body says only "internal server error"; this app logs nothing).
  const causes = new WeakMap<FastifyRequest, string>();
  app.addHook('onError', async (req, _reply, err) => {
    causes.set(req, err.message);
  });
  app.addHook('onSend', async (req, reply, payload) => {
    if (reply.statusCode >= HttpStatus.BadRequest && !req.url.startsWith(UPLOAD_PREFIX)) {
      session.requestFailed({ url: requestedUrl(req, ctx.baseUrl(req)), status: reply.statusCode, error: causes.get(req) ?? errorOf(payload) });
    }
    return payload;
  });

  app.get<{ Params: { file: string } }>(`${PAGE_PREFIX}:file`, (req, reply) => page.send(req, reply, req.params.file, 'the render page', cacheControl));
  app.get('/favicon.ico', (_req, reply) => reply.code(HttpStatus.NoContent).send());
  app.get<{ Querystring: { url?: string } }>(BLOCKED_PATH, async (req) => {
    throw new HttpError(HttpStatus.NotFound, `not available locally: ${req.query.url ?? '(no url)'}`);
  });

  // Uploads in a scope of their own: the raw body parser and its size limit apply to them alone.
  app.register(async (scope) => {
    scope.addContentTypeParser(UPLOAD_TYPE, { parseAs: 'buffer', bodyLimit: MAX_UPLOAD_BYTES }, (_req, body, done) => done(null, body));
    scope.post<{ Params: { id: string }; Querystring: Record<string, string | undefined> }>(
      `${UPLOAD_PREFIX}:id`,
      {
        bodyLimit: MAX_UPLOAD_BYTES,
        // Refused before the body is read: an unexpected upload, or one larger than its slot.
        onRequest: async (req) => {
          const max = session.uploads.limit(req.params.id);
          const length = Number(req.headers['content-length'] ?? 0);
          if (length > max) throw new HttpError(HttpStatus.PayloadTooLarge, `upload ${req.params.id} is larger than ${max} bytes`);
        },
      },
      async (req) => {
        const width = dimension(req.query, 'width');
        const height = dimension(req.query, 'height');
        if (!Buffer.isBuffer(req.body)) throw new HttpError(HttpStatus.BadRequest, `upload: expected a ${UPLOAD_TYPE} body`);
        return session.uploads.receive(req.params.id, req.body, width, height);
      },
    );
  });
}
