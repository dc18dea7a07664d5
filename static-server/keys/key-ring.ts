/**
 * The keys a server accepts, replaced as a whole when the keys file changes: secret keys found by
 * the SHA-256 of the presented bearer token, origin keys by the request's Origin (or, when a browser
 * sends none, as for `<img>` tiles, the origin of its Referer).
 */
import { AuthResult, hashToken } from '../auth.ts';
import type { Key } from './keys-file.ts';
import { originMatches, originOf } from './origins.ts';

/** Origins remembered (allowed or not) before the memo is cleared. */
const ORIGIN_MEMO_MAX = 1024;
const BEARER = /^bearer\s+/i;

/** Who a request is, when it is somebody. */
export type Identity =
  | { ok: true; key: Key; /** The Origin header that matched, echoed by CORS. */ origin?: string }
  | { ok: false; result: AuthResult.Missing | AuthResult.Invalid; /** An origin no key allows. */ origin?: string };

/** The request headers identification looks at. */
export interface IdentityHeaders {
  authorization?: string;
  origin?: string;
  referer?: string;
}

/** The accepted keys, replaceable at run time. */
export class KeyRing {
  private byHash = new Map<string, Key>();
  private originKeys: Key[] = [];
  private memo = new Map<string, Key | null>();
  /** Per connection, the last Authorization header and what it identified (a keep-alive client sends the same one each time). */
  private byConnection = new WeakMap<object, { authorization: string; identity: Identity }>();
  private all: readonly Key[] = [];

  constructor(keys: readonly Key[]) {
    this.replace(keys);
  }

  /** Switch to a new set of keys (requests already identified keep their key). */
  replace(keys: readonly Key[]): void {
    const byHash = new Map<string, Key>();
    for (const k of keys) if (k.hash) byHash.set(k.hash.toString('latin1'), k);
    this.byHash = byHash;
    this.originKeys = keys.filter((k) => k.origins);
    this.memo = new Map();
    this.byConnection = new WeakMap();
    this.all = keys;
  }

  /** The current keys. */
  get keys(): readonly Key[] {
    return this.all;
  }

  /** The first origin key allowing `origin` (an Origin header value or a Referer URL), or null. */
  private byOrigin(value: string): Key | null {
    let hit = this.memo.get(value);
    if (hit !== undefined) return hit;
    const origin = originOf(value);
    hit = (origin && this.originKeys.find((k) => k.origins!.some((p) => originMatches(p, origin)))) || null;
    if (this.memo.size >= ORIGIN_MEMO_MAX) this.memo.clear();
    this.memo.set(value, hit);
    return hit;
  }

  /**
   * Identify a request: a bearer token must be a secret key's (a wrong one is never excused by an
   * origin); without one, an origin key allowing the Origin (else the Referer's origin) is used.
   * With `connection` (the request's socket), a token is hashed once per connection: the next request
   * on it with the same header gets the same answer (compared in constant time: a proxy may carry
   * several clients' requests on one connection).
   */
  identify(h: IdentityHeaders, connection?: object): Identity {
    const auth = h.authorization;
    if (auth) {
      const seen = connection && this.byConnection.get(connection);
      if (seen && sameString(seen.authorization, auth)) return seen.identity;
      const m = BEARER.exec(auth);
      const token = m ? auth.slice(m[0].length).trim() : '';
      if (token !== '') {
        const key = this.byHash.get(hashToken(token).toString('latin1'));
        const identity: Identity = key ? { ok: true, key } : { ok: false, result: AuthResult.Invalid };
        if (connection) this.byConnection.set(connection, { authorization: auth, identity });
        return identity;
      }
    }
    const claimed = h.origin ?? (h.referer ? refererOrigin(h.referer) : undefined);
    if (claimed !== undefined && this.originKeys.length > 0) {
      const key = this.byOrigin(claimed);
      if (key) return { ok: true, key, ...(h.origin ? { origin: h.origin } : {}) };
    }
    return { ok: false, result: AuthResult.Missing, ...(claimed !== undefined ? { origin: claimed } : {}) };
  }
}

/** Whether two strings are equal, in time that depends on their length only. */
function sameString(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

/** `scheme://host[:port]` of a Referer URL (paths differ per page; the memo keys on the origin). */
function refererOrigin(referer: string): string | undefined {
  const u = originOf(referer);
  return u?.origin;
}
