/**
 * The per-request check of keys: identify the key (keys/key-ring.ts), check the route's scope, name
 * the matched origin in CORS answers, then take from the key's rate limit and quota
 * (keys/limits.ts). Called by the app's onRequest hook (static-server/app.ts).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { rejectUnauthorized } from '../auth.ts';
import { HttpError } from '../context.ts';
import { HttpStatus } from '../../lib/http-status.ts';
import type { RouteKind } from '../metrics.ts';
import type { KeyRing } from './key-ring.ts';
import type { Key, Scope } from './keys-file.ts';
import { quotasOf, type Limiter, type LimitDecision } from './limits.ts';

/** The key each identified request was let in with (for usage counting). */
const requestKeys = new WeakMap<object, Key>();
/** The limiter of the gate a request passed (for pack tiles, taken once the pack is known). */
const requestLimiters = new WeakMap<object, Limiter>();

/** The key a request was let in with, if any. */
export function keyOf(req: FastifyRequest): Key | undefined {
  return requestKeys.get(req);
}

/** The scope a route kind needs. */
export function scopeOf(kind: RouteKind, url: string): Scope {
  if (kind === 'height') return 'height';
  if (kind === 'metrics') return 'metrics';
  if (kind === 'pack') return 'packs';
  if (kind === 'search') return 'search';
  return url.startsWith('/static/') ? 'static' : 'tiles';
}

/** Everything the gate uses. */
export interface KeyGate {
  ring: KeyRing;
  /** Rate limits and quotas; absent: keys are not limited. */
  limiter?: Limiter;
}

/** The IETF RateLimit headers of a decision (and Retry-After when refused). */
export function rateLimitHeaders(d: LimitDecision): Record<string, string> {
  const h: Record<string, string> = {
    'ratelimit-limit': String(d.limit),
    'ratelimit-remaining': String(Math.max(0, Math.floor(d.remaining))),
    'ratelimit-reset': String(Math.max(0, Math.ceil(d.resetS))),
  };
  if (!d.allowed) h['retry-after'] = String(Math.max(1, Math.ceil(d.retryAfterS)));
  return h;
}

/**
 * Take `n` pack tiles from the quota of the key `req` came with: nothing when it may go on (no key, or
 * no pack-tile quota), else the 429 to answer, with `estimate` in its body, before anything is sent.
 */
export async function reservePackTiles(req: FastifyRequest, n: number, estimate: Record<string, unknown>): Promise<HttpError | undefined> {
  const key = requestKeys.get(req);
  const limiter = requestLimiters.get(req);
  if (!key || !limiter || key.quota?.packTiles === undefined) return undefined;
  const d = await limiter.reserve(key, n);
  if (d.allowed) return undefined;
  const headers = rateLimitHeaders(d);
  return new HttpError(HttpStatus.TooManyRequests, `key "${key.name}": ${d.reason}`, { estimate, remaining: Math.floor(d.remaining), retryAfter: Number(headers['retry-after']) }, headers);
}

/**
 * Check one request. Returns nothing when it may go on at once, an error to answer with, or a
 * promise of either (when a limit must be asked). Sets the CORS origin and RateLimit headers.
 */
export function checkKey(gate: KeyGate, req: FastifyRequest, reply: FastifyReply, kind: RouteKind): HttpError | undefined | Promise<HttpError | undefined> {
  const h = req.headers;
  const id = gate.ring.identify({ authorization: h.authorization, origin: h.origin, referer: h.referer }, req.raw.socket);
  if (!id.ok) {
    try {
      rejectUnauthorized(id.result, id.origin);
    } catch (e) {
      return e as HttpError;
    }
  }
  const { key } = id;
  if (id.origin) {
    reply.header('access-control-allow-origin', id.origin);
    reply.header('vary', 'Origin');
  }
  const scope = scopeOf(kind, req.url);
  if (!key.scopes.has(scope)) return new HttpError(HttpStatus.Forbidden, `key "${key.name}" does not have the "${scope}" scope`, { scope });
  requestKeys.set(req, key);
  if (gate.limiter) requestLimiters.set(req, gate.limiter);
  const height = kind === 'height';
  // No rule for this request (no rate, and no quota that counts it: a height-point quota on a tile request).
  if (!gate.limiter || (!key.rate && quotasOf(key, height).length === 0)) return undefined;
  return gate.limiter.take(key, height).then((d) => {
    const headers = rateLimitHeaders(d);
    if (d.allowed) {
      reply.headers(headers);
      return undefined;
    }
    return new HttpError(HttpStatus.TooManyRequests, `key "${key.name}": ${d.reason}`, { retryAfter: Number(headers['retry-after']) }, headers);
  });
}
