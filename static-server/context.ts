import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Manifest } from '../lib/manifest.ts';
import type { Store } from '../lib/storage.ts';
import type { RenderSession } from './render-session.ts';

/** Options of `tilebake serve` (see pipeline/cli.ts for the flags). */
export interface ServeOptions {
  /** Build folder or http(s):// base URL. */
  out: string;
  port: number;
  host: string;
  /** Optional second listener serving /height only (the interface's routing host). */
  routingPort?: number;
  /** Base URL clients use, for absolute URLs in TileJSON and style JSON. Default: from the request. */
  publicUrl?: string;
  tokensFile?: string;
  /** false only with an explicit --no-auth. */
  auth: boolean;
  /** HTTP worker processes (default: number of cores). */
  workers?: number;
  cacheControl: string;
  /** Access-Control-Allow-Origin; empty string disables CORS. */
  cors: string;
  /** Memory budget for cached tiles and decoded elevation blocks, per worker, in MB. */
  cacheMb: number;
  logLevel: string;
}

/** What route modules get: the store, its manifest, options and URL helpers. */
export interface ServerContext {
  store: Store;
  manifest: Manifest;
  options: ServeOptions;
  /** Absolute base URL without trailing slash: --public-url, else from the request's Host. */
  baseUrl(req: FastifyRequest): string;
  /** The render role's page folder, upload slots and failed requests (render-server.ts); unset otherwise. */
  render?: RenderSession;
}

/** A route module: registers its routes on the app (tile host, or the routing listener). */
export type RouteModule = (app: FastifyInstance, ctx: ServerContext) => Promise<void>;

/**
 * Thrown by route handlers; the app's error handler turns it into
 * `{"error": message, "status": status, ...extra}` with `headers`.
 */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly extra: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

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
