/**
 * The render host: what the render page's browsers load, on 127.0.0.1 only and without auth. The
 * build's render stage and the server's on-demand renders start it alike (the browsers are driven by
 * workers/metatile-renderer.ts); it serves the page, maplibre-gl and the pixel uploads, and a build's
 * tiles, TileJSON, prepared styles, sprites and glyphs with the same bytes as `tilebake serve` gives
 * clients (the same lib/ code makes them: lib/tilejson.ts, lib/style-urls.ts, lib/glyphs/), styles always
 * in Web Mercator (lib/style-projection.ts: a style's own `"projection"` is for clients, not for the bake).
 * Every request of the page that fails is recorded, so that the build fails naming it.
 */
import { readFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import { Compression } from 'pmtiles';
import { Memo } from '../../lib/shared-work.ts';
import { FontService } from '../../lib/glyphs/font-stacks.ts';
import { errorBody, HttpError } from '../../lib/http-error.ts';
import { HttpStatus } from '../../lib/http-status.ts';
import type { Manifest } from '../../lib/manifest.ts';
import { packageRequire } from '../../lib/package-root.ts';
import { openArchive, type ArchiveReader } from '../../lib/pmtiles/index.ts';
import { storeErrorMessage, storeErrorStatus } from '../../lib/store-answer.ts';
import { asStoreError, isStoreError, StoreBadAnswerError, StoreCorruptError, toStoreError } from '../../lib/store-read.ts';
import type { Store } from '../../lib/storage.ts';
import { withProjection } from '../../lib/style-projection.ts';
import { rewriteNeutralUrls, type StyleUrls } from '../../lib/style-urls.ts';
import { checkZoom, parseTileCoord, splitTileFile } from '../../lib/tile-coords.ts';
import { tileJson } from '../../lib/tilejson.ts';
import { UPLOAD_PREFIX } from '../../lib/upload-receipt.ts';
import { RenderSession } from './session.ts';
import { CONTENT_TYPES, contentType, PLAIN_NAME } from '../../lib/content-types.ts';

/** Loopback address the host listens on: only the build's own browsers reach it. */
const LOOPBACK = '127.0.0.1';
/** Memory for cached glyph files and combined font stacks, MB. */
const DEFAULT_CACHE_MB = 64;
const MB = 1024 * 1024;
/** The render page's files: `/page/render.html` and the modules and worker scripts it loads. */
const PAGE_PREFIX = '/page/';
/** maplibre-gl's files: `/maplibre/maplibre-gl.mjs` and the modules it loads beside it. */
const MAPLIBRE_PREFIX = '/maplibre/';
/** maplibre-gl's `dist` folder (the version pinned in package.json). */
const MAPLIBRE_DIST = dirname(packageRequire.resolve('maplibre-gl/dist/maplibre-gl.mjs'));
/** Where the page sends requests for URLs that are not on this host: `GET /__blocked?url=`. */
const BLOCKED_PATH = '/__blocked';
/** Content type of uploads. */
const UPLOAD_TYPE = 'application/octet-stream';
/** Largest upload body accepted at all (each upload is further limited to the size its slot expects). */
const MAX_UPLOAD_BYTES = 1024 * 1024 * 1024;
/** Nothing this host serves may be cached by the browsers: a rebuild changes it under the same URL. */
const NO_STORE = 'no-store';
/** Sprite files: `sprite.json`, `sprite.png`, `sprite@2x.json`, `sprite@2x.png`. */
const SPRITE_FILE = /^sprite(@2x)?\.(json|png)$/;
/** What the render host serves: a build's outputs, as `tilebake serve` reads them. */
export interface RenderHostOptions {
  /** The build folder (or any store) holding the archives, prepared styles, sprites and fonts. */
  store: Store;
  /**
   * Its manifest as the page must see it: the tilesets the styles use, every style being rendered
   * (its prepared style.json and sprite written; `archives` may be empty) and `fonts`.
   */
  manifest: Manifest;
  /** The render page's folder (render.html and its modules). */
  pageDir: string;
  /** Memory for cached glyphs, MB (default 64). */
  cacheMb?: number;
}

/** A running render host. */
export interface RenderHost {
  /** `http://127.0.0.1:<port>`, no trailing slash. */
  url: string;
  /** Its upload slots and failed requests. */
  session: RenderSession;
  /** Stop listening and close the archives. */
  close(): Promise<void>;
}

/** A positive integer query parameter, or a 400 naming it. */
function dimension(query: Record<string, string | undefined>, name: string): number {
  const v = Number(query[name]);
  if (!Number.isInteger(v) || v < 1) throw new HttpError(HttpStatus.BadRequest, `upload: ${name} must be a positive integer (got "${query[name] ?? ''}")`);
  return v;
}

/** The files of one flat folder, read on first use and kept (the page and maplibre-gl do not change). */
class Folder {
  private readonly files = new Memo<string, Buffer | null>();
  constructor(private readonly dir: string, private readonly what: string) {}

  async send(reply: FastifyReply, name: string): Promise<FastifyReply> {
    const bytes = PLAIN_NAME.test(name) ? await this.files.get(name, () => readFile(join(this.dir, name)).catch(() => null)) : null;
    if (!bytes) throw new HttpError(HttpStatus.NotFound, `${this.what} has no file "${name}"`);
    return reply.type(contentType(name)).send(bytes);
  }
}

/** The archives of a build, each opened on first use and kept open. */
class BuildArchives {
  private readonly open = new Memo<string, { reader: ArchiveReader; gzip: boolean }>();
  private readonly readers: ArchiveReader[] = [];
  constructor(private readonly store: Store) {}

  /** The stored bytes of a tile (gzip: as the archive compresses them), or null when there is none. */
  async tile(path: string, z: number, x: number, y: number): Promise<{ bytes: Uint8Array; gzip: boolean } | null> {
    const archive = await this.open.get(path, async () => {
      const source = await this.store.openRange(path).catch((e: unknown) => {
        throw toStoreError(path, e);
      });
      try {
        const reader = await openArchive(source);
        this.readers.push(reader);
        return { reader, gzip: reader.header.tileCompression === Compression.Gzip };
      } catch (e) {
        await source.close();
        throw asStoreError(path, e);
      }
    });
    const bytes = await archive.reader.getTile(z, x, y).catch((e: unknown) => {
      throw asStoreError(path, e);
    });
    return bytes && bytes.length > 0 ? { bytes, gzip: archive.gzip } : null;
  }

  async close(): Promise<void> {
    await Promise.allSettled(this.readers.splice(0).map((r) => r.close()));
  }
}

/** The URL the page asked for: the refused URL for /__blocked, else this host's URL, decoded. */
function requestedUrl(req: FastifyRequest, base: string): string {
  const u = new URL(req.url, 'http://x');
  if (u.pathname === BLOCKED_PATH) return u.searchParams.get('url') ?? req.url;
  try {
    return base + decodeURIComponent(req.url);
  } catch {
    return base + req.url;
  }
}

/**
 * Start a render host for `opts.store` and `opts.manifest` on a free loopback port: `GET /page/{file}`,
 * `GET /maplibre/{file}`, `POST /__upload/{id}` (the page's pixels, into the session's upload slots,
 * answered with a receipt), `GET /__blocked?url=` (404 naming a URL the page may not load),
 * `GET /data/{tileset}/{z}/{x}/{y}.{ext}`, `GET /data/{tileset}.json`, `GET /styles/{style}/style.json`,
 * `GET /styles/{style}/sprite[@2x].{json,png}` and `GET /fonts/{fontstack}/{range}.pbf`.
 */
export async function startRenderHost(opts: RenderHostOptions): Promise<RenderHost> {
  const { store, manifest } = opts;
  let url = '';
  const session = new RenderSession(opts.pageDir);
  const page = new Folder(opts.pageDir, 'the render page');
  const maplibre = new Folder(MAPLIBRE_DIST, 'maplibre-gl');
  const archives = new BuildArchives(store);
  const fonts = manifest.fonts ? new FontService(store, manifest.fonts, (opts.cacheMb ?? DEFAULT_CACHE_MB) * MB) : undefined;
  const styles = new Memo<string, StyleUrls>();

  const app = Fastify({ logger: false, return503OnClosing: false });
  // The cause of a failure (its answer names no path; the build's error does).
  const causes = new WeakMap<FastifyRequest, string>();
  app.setErrorHandler((err: Error & { statusCode?: number }, req, reply) => {
    causes.set(req, err.message);
    const status = err instanceof HttpError ? err.status : isStoreError(err) ? storeErrorStatus(err) : (err.statusCode ?? HttpStatus.Internal);
    const message = err instanceof HttpError ? err.message : isStoreError(err) ? storeErrorMessage(err) : status < HttpStatus.Internal ? err.message : 'internal error';
    void reply.code(status).send(errorBody(status, message, err instanceof HttpError ? err.extra : {}));
  });
  app.setNotFoundHandler((req, reply) => {
    const status = HttpStatus.NotFound;
    void reply.code(status).send(errorBody(status, `no route for ${req.method} ${req.url.split('?')[0]}`));
  });
  app.addHook('onSend', async (req, reply, payload) => {
    reply.header('cache-control', NO_STORE);
    if (reply.statusCode >= HttpStatus.BadRequest && !req.url.startsWith(UPLOAD_PREFIX)) {
      const body = typeof payload === 'string' ? payload : Buffer.isBuffer(payload) ? payload.toString('utf8') : '';
      let error = causes.get(req);
      if (error === undefined) {
        try {
          error = String((JSON.parse(body) as { error?: unknown }).error ?? body);
        } catch {
          error = body;
        }
      }
      session.requestFailed({ url: requestedUrl(req, url), status: reply.statusCode, error });
    }
    return payload;
  });

  app.get<{ Params: { file: string } }>(`${PAGE_PREFIX}:file`, (req, reply) => page.send(reply, req.params.file));
  app.get<{ Params: { file: string } }>(`${MAPLIBRE_PREFIX}:file`, (req, reply) => maplibre.send(reply, req.params.file));
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
          if (Number(req.headers['content-length'] ?? 0) > max) throw new HttpError(HttpStatus.PayloadTooLarge, `upload ${req.params.id} is larger than ${max} bytes`);
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

  const tilesetOr404 = (id: string) => {
    const entry = manifest.tilesets[id];
    if (!entry) throw new HttpError(HttpStatus.NotFound, `unknown tileset "${id}"`, { tilesets: Object.keys(manifest.tilesets) });
    return entry;
  };
  app.get<{ Params: { tileset: string; z: string; x: string; file: string } }>('/data/:tileset/:z/:x/:file', async (req, reply) => {
    const { tileset, file } = req.params;
    const entry = tilesetOr404(tileset);
    const parts = splitTileFile(file);
    if (!parts || parts.ext !== entry.format || parts.scale !== 1) throw new HttpError(HttpStatus.NotFound, `tileset "${tileset}" serves {z}/{x}/{y}.${entry.format} tiles (asked for ${file})`);
    const { z, x, y } = parseTileCoord(req.params.z, req.params.x, parts.y);
    checkZoom(z, entry.minzoom, entry.maxzoom, `tileset "${tileset}"`);
    const tile = await archives.tile(entry.archive, z, x, y);
    if (!tile) return reply.code(HttpStatus.NoContent).send();
    // Chromium accepts gzip: stored tiles are sent as they are.
    if (tile.gzip) reply.header('content-encoding', 'gzip');
    return reply.type(contentType(entry.format)).send(Buffer.from(tile.bytes.buffer, tile.bytes.byteOffset, tile.bytes.byteLength));
  });
  app.get<{ Params: { file: string } }>('/data/:file', async (req) => {
    const { file } = req.params;
    if (!file.endsWith('.json')) throw new HttpError(HttpStatus.NotFound, `no route for GET ${req.url.split('?')[0]} (TileJSON is /data/{tileset}.json)`);
    const id = file.slice(0, -'.json'.length);
    return tileJson(id, tilesetOr404(id), url);
  });

  app.get<{ Params: { style: string; file: string } }>('/styles/:style/:file', async (req, reply) => {
    const { style: id, file } = req.params;
    const entry = manifest.styles[id];
    if (!entry) throw new HttpError(HttpStatus.NotFound, `unknown style "${id}"`, { styles: Object.keys(manifest.styles) });
    if (file === 'style.json') {
      const style = await styles.get(id, async () => {
        const bytes = await store.readFile(entry.style);
        if (!bytes) throw new StoreBadAnswerError(`style "${id}": ${entry.style} is listed in the manifest but missing`, { transient: false });
        try {
          return JSON.parse(Buffer.from(bytes).toString('utf8')) as StyleUrls;
        } catch (e) {
          throw new StoreCorruptError(`style "${id}": ${entry.style} is not valid JSON (${(e as Error).message})`, e);
        }
      });
      // Raster tiles are baked on the Web Mercator grid whatever projection the style asks for.
      const mercator = style.projection === undefined ? style : withProjection(style, 'mercator');
      return reply.type(CONTENT_TYPES.json).send(JSON.stringify(rewriteNeutralUrls(mercator, url)));
    }
    const m = SPRITE_FILE.exec(file);
    if (!m || !entry.sprite) throw new HttpError(HttpStatus.NotFound, `style "${id}" has no file "${file}" (style.json, sprite[@2x].{json,png})`);
    const bytes = await store.readFile(`${entry.sprite}${m[1] ?? ''}.${m[2]}`);
    if (!bytes) throw new HttpError(HttpStatus.NotFound, `style "${id}": sprite file ${file} is not in the build`);
    return reply.type(contentType(file)).send(Buffer.from(bytes));
  });

  app.get<{ Params: { fontstack: string; file: string } }>('/fonts/:fontstack/:file', async (req, reply) => {
    const { fontstack, file } = req.params;
    if (!fonts) throw new HttpError(HttpStatus.NotFound, 'this build has no fonts');
    if (!file.endsWith('.pbf')) throw new HttpError(HttpStatus.NotFound, `no route for GET ${req.url.split('?')[0]} (glyphs are /fonts/{fontstack}/{start}-{end}.pbf)`);
    const { bytes } = await fonts.glyphs(fontstack, file.slice(0, -'.pbf'.length));
    return reply.type(CONTENT_TYPES.pbf).send(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  });

  const close = async () => {
    await app.close();
    await archives.close();
  };
  try {
    // Exclusive: in a cluster worker (serve --workers N renders on demand) a shared port 0 would hand
    // the page's uploads to another worker's host.
    await app.listen({ port: 0, host: LOOPBACK, exclusive: true });
  } catch (e) {
    await close();
    throw e;
  }
  url = `http://${LOOPBACK}:${(app.server.address() as AddressInfo).port}`;
  return { url, session, close };
}
