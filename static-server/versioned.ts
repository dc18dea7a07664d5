/**
 * Versioned URLs (the rule: lib/versioned-url.ts): `/v/{build}/…` is the unversioned path `…` of build version `{build}`. The
 * TileJSON, style.json and the preview page a server hands out carry the current version in every
 * URL (with `--versioned-urls`, the CLI's default), so a client never mixes two builds and a rebuild
 * is seen at the next reload. Answers under `/v/{build}/` never change: they are cached for a year
 * (`immutable`); the unversioned documents are revalidated every time (`no-cache`, with ETags).
 * An older version still on disk answers with its own bytes; a pruned one answers 404.
 */
import type { IncomingMessage } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { HttpStatus } from '../lib/http-status.ts';
import { splitVersionedUrl, versionedBase } from '../lib/versioned-url.ts';
import type { ServerContext } from './context.ts';

/** Requests that came in under `/v/{build}/` (their URL is rewritten before routing). */
const versionedRequests = new WeakSet<IncomingMessage>();

/**
 * For a `/v/{build}/…` request: remember that it is versioned, rewrite its URL to the unversioned
 * path and return the build id. Undefined for other requests.
 */
export function takeVersionPrefix(req: IncomingMessage): string | undefined {
  const m = req.url === undefined ? undefined : splitVersionedUrl(req.url);
  if (!m) return undefined;
  versionedRequests.add(req);
  req.url = m.rest;
  return m.id;
}

/** Hand out URLs of version `id` from this context (TileJSON, style.json, the preview page's catalog). */
export function useVersionedUrls(ctx: ServerContext, id: string): void {
  const base = ctx.baseUrl;
  ctx.baseUrl = (req) => versionedBase(base(req), id);
}

/** Successful answers to versioned URLs get the immutable Cache-Control of the context. */
export function registerVersionedCaching(app: FastifyInstance, ctx: ServerContext): void {
  app.addHook('onSend', (req, reply, payload, done) => {
    if (reply.statusCode < HttpStatus.BadRequest && versionedRequests.has(req.raw)) reply.header('cache-control', ctx.cache.versioned);
    done(null, payload);
  });
}
