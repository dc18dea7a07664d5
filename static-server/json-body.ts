/**
 * JSON request bodies with limits checked before any work: UTF-8 only (RFC 8259), nesting depth
 * checked by a linear scan before parsing (a 10 KB body of 5,000 `[` must not reach JSON.parse or
 * JSON.stringify), then fastify's own parser (which refuses `__proto__` and `constructor` poisoning).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { HttpStatus } from '../lib/http-status.ts';

/** Deepest nesting of arrays and objects accepted in a JSON body or query parameter. */
export const MAX_JSON_DEPTH = 64;

/** An error fastify's error handlers see like their own (`statusCode`). */
class BodyError extends Error {
  constructor(readonly statusCode: number, message: string) {
    super(message);
    this.name = 'BodyError';
  }
}

/** The charset parameter of a Content-Type header, lower case, or undefined. */
export function charsetOf(contentType: string | undefined): string | undefined {
  const m = /;\s*charset\s*=\s*"?([^";\s]*)"?/i.exec(contentType ?? '');
  return m ? m[1].toLowerCase() : undefined;
}

/** True when the text nests arrays/objects deeper than `max` (strings are skipped). Linear, no recursion. */
export function jsonDepthExceeds(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

/** Throw a 400 when `text` nests deeper than MAX_JSON_DEPTH. */
export function checkJsonDepth(text: string): void {
  if (jsonDepthExceeds(text, MAX_JSON_DEPTH)) {
    throw new BodyError(HttpStatus.BadRequest, `JSON nested deeper than ${MAX_JSON_DEPTH} levels`);
  }
}

/** JSON media types parsed: JSON, and GeoJSON (RFC 7946: `application/geo+json`, static maps' bodies). */
const JSON_TYPES = ['application/json', 'application/geo+json'];

/** Replace the app's `application/json` parser with the checked one, also for GeoJSON (per-route body limits still apply). */
export function useCheckedJsonParser(app: FastifyInstance): void {
  const parse = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser(JSON_TYPES, { parseAs: 'string' }, (req: FastifyRequest, body: string | Buffer, done) => {
    const charset = charsetOf(req.headers['content-type']);
    if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
      done(new BodyError(HttpStatus.UnsupportedMediaType, `charset "${charset}" is not supported: send UTF-8 JSON`), undefined);
      return;
    }
    try {
      checkJsonDepth(String(body));
    } catch (e) {
      done(e as Error, undefined);
      return;
    }
    parse(req, String(body), done);
  });
}
