import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { Manifest } from '../lib/manifest.ts';
import type { Store } from '../lib/storage.ts';
import type { StoreHealth } from './store-health.ts';
import type { RenderHost } from '../workers/render-host/server.ts';

/** Route modules throw lib's HttpError; the app's error handler (errors.ts) answers it. */
export { HttpError } from '../lib/http-error.ts';

/** Options of `tilebake serve` (see cli/commands/serve.ts for the flags). */
export interface ServeOptions {
  /** Build folder, http(s):// base URL or s3://bucket/prefix. */
  out: string;
  /** Endpoint of an S3-compatible store for an s3:// `out` (default AWS_ENDPOINT_URL, else AWS S3). */
  s3Endpoint?: string;
  port: number;
  host: string;
  /** Optional second listener serving /height only (the interface's routing host). */
  routingPort?: number;
  /** Optional listener serving GET /metrics without auth (one for all workers, in the cluster primary). */
  metricsPort?: number;
  /** Base URL clients use, for absolute URLs in TileJSON and style JSON. Default: from the request. */
  publicUrl?: string;
  tokensFile?: string;
  /** The keys file (static-server/keys/keys-file.ts): secret and origin keys, scopes, rates, quotas. */
  keysFile?: string;
  /** `redis://…` to share rate limits and quotas between servers (default: this server's own). */
  limits?: string;
  /** Folder of the server's state (usage and quota counts); see keys/runtime.ts stateDirOf. */
  stateDir?: string;
  /** false only with an explicit --no-auth. */
  auth: boolean;
  /** HTTP worker processes (default: number of cores). */
  workers?: number;
  /**
   * Cache-Control of tiles, sprites and glyphs. Default: `private, max-age=86400` with auth (a shared
   * cache must not hand a token-protected answer to others), `public, max-age=86400` with --no-auth.
   */
  cacheControl?: string;
  /** Deadline of one store read, retries included, in ms (default 5000). */
  storeTimeoutMs?: number;
  /** Retries of a store read after a transient failure (default 2). */
  storeRetries?: number;
  /** Folder of the on-disk cache of tiles rendered on demand (`overzoom: render`; default: <tmp>/tilebake-render-cache). */
  renderCache?: string;
  /** Its size cap, all workers together, MB (default 1024). */
  renderCacheMb?: number;
  /** Renders that may wait for a browser, per worker; beyond them requests get 503 (default 16). */
  renderQueue?: number;
  /** Longest a request waits for its on-demand render, ms; then 504 (default 30000). */
  renderTimeoutMs?: number;
  /** Browsers rendering on demand, per worker (default 1). */
  renderWorkers?: number;
  /** Access-Control-Allow-Origin; empty string disables CORS. */
  cors: string;
  /** Memory budget for cached tiles and decoded elevation blocks, per worker, in MB. */
  cacheMb: number;
  /** Put the build version in the URLs of TileJSON, style.json and the preview page (static-server/versioned.ts). */
  versionedUrls?: boolean;
  /** How often to check for a newly published build version, ms (default 2000; 0: never). */
  versionPollMs?: number;
  /** Folder of the local copies of search indexes read from object storage (default: <tmp>/tilebake-search-cache; static-server/search/local-file.ts). */
  searchCache?: string;
  /** Largest pack `GET /packs/…` builds, in tiles (default 200,000); larger ones are refused before anything is sent. */
  maxPackTiles?: number;
  /** Largest GeoJSON body of a static map (`POST /styles/{style}/static/…`), in bytes (default 1 MB); larger ones get 413. */
  maxStaticBody?: number;
  logLevel: string;
}

/** What route modules get: the store, its manifest, options and URL helpers. */
export interface ServerContext {
  store: Store;
  /** The build folder `store` is a version of (packs read older versions from it for `?since=`); unset: only this version. */
  root?: Store;
  /** The id of the build version served (undefined: a legacy folder, or a context without versions). */
  build?: string;
  manifest: Manifest;
  options: ServeOptions;
  /** Absolute base URL without trailing slash: --public-url, else from the request's Host. */
  baseUrl(req: FastifyRequest): string;
  /**
   * Start a render host over this context's build for on-demand renders (`overzoom: render`,
   * static-server/overzoom/render.ts; workers/render-host/); unset where nothing is rendered on demand (export).
   */
  startRenderHost?: () => Promise<RenderHost>;
  /** Cache-Control and Vary of responses. */
  cache: CachePolicy;
  /** Whether the store answers (for /health); logs store failures rate-limited. */
  health: StoreHealth;
  /** The server's logger, shared by its listeners. */
  log: Logger;
}

/** Cache headers of successful responses. */
export interface CachePolicy {
  /** Tiles, sprites, glyphs, heights. */
  data: string;
  /** TileJSON and style.json: they change with a rebuild, so they are kept for minutes. */
  metadata: string;
  /** Everything under `/v/{build}/`: it never changes. */
  versioned: string;
  /** `Host` when those documents carry URLs built from the request's Host (no --public-url). */
  metadataVary?: string;
}

/** How long TileJSON and style.json may be cached, in seconds. */
const METADATA_MAX_AGE_S = 300;
/** Lifetime of versioned URLs (static-server/versioned.ts): one year, the longest caches honour. */
const IMMUTABLE_MAX_AGE_S = 31_536_000;
/** Default max-age of tiles, in seconds. */
const DATA_MAX_AGE_S = 86400;

/**
 * The cache headers for the options. Authenticated responses are `private` unless --cache-control
 * says otherwise: a shared cache (CDN, proxy) must not store an answer given for a token and hand it
 * to clients without one. With --no-auth nothing is secret, so `public` is the default.
 */
export function cachePolicy(options: Pick<ServeOptions, 'auth' | 'cacheControl' | 'publicUrl' | 'versionedUrls'>): CachePolicy {
  const visibility = options.auth ? 'private' : 'public';
  const data = options.cacheControl ?? `${visibility}, max-age=${DATA_MAX_AGE_S}`;
  const configuredPublic = /(^|[\s,])public($|[\s,])/i.test(data);
  const shared = configuredPublic ? 'public' : visibility;
  // With versioned URLs the documents name the current build: revalidated every time, so a reload sees a rebuild at once.
  const metadata = /no-store|no-cache/i.test(data) ? data : `${shared}, ${options.versionedUrls ? 'no-cache' : `max-age=${METADATA_MAX_AGE_S}`}`;
  const versioned = /no-store/i.test(data) ? data : `${shared}, max-age=${IMMUTABLE_MAX_AGE_S}, immutable`;
  return { data, metadata, versioned, ...(options.publicUrl ? {} : { metadataVary: 'Host' }) };
}

/** A route module: registers its routes on the app (tile host, or the routing listener). */
export type RouteModule = (app: FastifyInstance, ctx: ServerContext) => Promise<void>;

/** What shares `--cache-mb` within one worker. */
export type CachePart = 'tiles' | 'elevation' | 'styleFiles';

/**
 * Bytes of the `--cache-mb` budget given to one cache. The shares add up to the whole budget:
 * style files (sprites, glyphs, styles) 1/8; tiles the rest, or half of the budget when an elevation
 * index is served, which then gets 3/8 for decoded blocks.
 */
export function cacheBudgetBytes(ctx: Pick<ServerContext, 'manifest' | 'options'>, part: CachePart): number {
  const total = ctx.options.cacheMb * 1024 * 1024;
  const withElevation = ctx.manifest.elevation !== undefined;
  const share = part === 'styleFiles' ? 1 / 8 : part === 'elevation' ? (withElevation ? 3 / 8 : 0) : withElevation ? 1 / 2 : 7 / 8;
  return Math.floor(total * share);
}
