/**
 * Who may read an export served by nginx (the `map`s and directives of nginx-conf.ts): bearer tokens
 * and secret keys compared in clear (a 0600 file beside the configuration), origin keys matched on
 * `$http_origin` (else the Referer's origin) as `tilebake serve` matches them
 * (static-server/keys/origins.ts), the key's name in `$tilebake_key`, CORS answers naming the
 * request's origin, and per-key rate limits with `limit_req` answered `429` with the JSON error body.
 * nginx keeps no counts across requests beyond its rate buckets: quotas and usage need `tilebake serve`.
 */
import { UserError } from '../lib/errors.ts';
import { HttpStatus } from '../lib/http-status.ts';
import { AUTH_REALM, type ConfiguredToken } from '../static-server/auth.ts';
import { parseKeys, readKeysJson, type RateRule } from '../static-server/keys/keys-file.ts';
import type { OriginPattern } from '../static-server/keys/origins.ts';

/** A key as nginx can use it: origin keys, and secret keys whose secret is known in clear. */
export interface NginxKey {
  name: string;
  origins?: readonly OriginPattern[];
  /** The secret itself (nginx compares what the client sends). */
  secret?: string;
  rate?: RateRule;
}

/**
 * The keys of a keys file as nginx can use them. A secret written as `sha256:…` cannot be compared by
 * nginx, nor can nginx serve files to a key without the `tiles` scope: such keys are left out, with a
 * warning. Quotas are not enforced by nginx (warned too): they need `tilebake serve`.
 */
export async function loadNginxKeys(file: string, warn: (message: string) => void): Promise<NginxKey[]> {
  const raw = await readKeysJson(file);
  const keys = parseKeys(raw, file);
  const secrets = (raw as { keys: { secret?: string }[] }).keys.map((k) => k.secret);
  const out: NginxKey[] = [];
  keys.forEach((k, i) => {
    const secret = secrets[i];
    if (secret !== undefined && secret.toLowerCase().startsWith('sha256:')) {
      warn(`${file}: keys[${i}] "${k.name}": its secret is a sha256: hash and nginx compares the secret itself: nginx does not accept this key`);
      return;
    }
    if (!k.scopes.has('tiles')) {
      warn(`${file}: keys[${i}] "${k.name}": no "tiles" scope: nginx serves only files, so it does not accept this key`);
      return;
    }
    if (k.quota) warn(`${file}: keys[${i}] "${k.name}": nginx does not enforce quotas (only the rate): use tilebake serve for quotas`);
    out.push({ name: k.name, ...(k.origins ? { origins: k.origins } : {}), ...(secret !== undefined ? { secret } : {}), ...(k.rate ? { rate: k.rate } : {}) });
  });
  return out;
}

/** Characters of an RFC 6750 bearer token (b64token). */
const B64TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;
/** Words a `map` reads as its own parameters unless escaped. */
const MAP_KEYWORDS = new Set(['default', 'hostnames', 'include', 'volatile']);
/** Shared memory of one key's rate zone (one bucket: 1 MB holds thousands). */
const ZONE_SIZE = '1m';
const BODY_401_MISSING = '{"error":"missing bearer token: send `Authorization: Bearer <token>`","status":401}';
const BODY_401_INVALID = '{"error":"invalid bearer token","status":401}';

/** A regex (nginx PCRE) matching the origins a pattern allows, as `scheme://host[:port]`. */
export function originRegex(p: OriginPattern): string {
  const host = p.wildcardHost ? `[^/:|]+${p.host.replace(/\./g, '\\.')}` : p.host.replace(/[.[\]]/g, '\\$&');
  const port = p.port === '*' ? '(?::\\d+)?' : p.port === '' ? `(?::${p.scheme === 'https' ? 443 : 80})?` : `:${p.port}`;
  return `${p.scheme}://${host}${port}`;
}

/** A key name as the source of a `map` line. */
function mapSource(name: string): string {
  return `"${MAP_KEYWORDS.has(name) ? '\\' : ''}${name}"`;
}

/** A `map` block. */
function map(source: string, variable: string, lines: readonly string[]): string {
  return [`map ${source} ${variable} {`, ...lines.map((l) => `  ${l}`), '}'].join('\n');
}

/** The tokens file's line accepting one secret: `Bearer <secret>` (scheme in any case, spaces as the server allows) → `=name`. */
function tokenLine(secret: string, name: string, source: string): string {
  if (!B64TOKEN.test(secret)) throw new UserError(`${source}: a bearer token has only letters, digits and -._~+/ (and trailing =)`);
  return `"~^(?i:bearer)\\s+${secret.replace(/[.+]/g, '[$&]')}\\s*$" "=${name}";`;
}

/**
 * The tokens map's file: the tokens of `TILEBAKE_TOKENS` / `--tokens-file` (named `token-1`… as the
 * server names them) and the keys' clear secrets.
 */
export function tokensFileText(tokens: readonly ConfiguredToken[], keys: readonly NginxKey[]): string {
  const lines = tokens.map((t, i) => {
    if (t.token === undefined) {
      throw new UserError(`${t.source}: a sha256: hash; nginx compares the token a client sends, so the nginx config needs the token itself`);
    }
    return tokenLine(t.token, `token-${i + 1}`, t.source);
  });
  for (const k of keys) if (k.secret !== undefined) lines.push(tokenLine(k.secret, k.name, `keys file: key "${k.name}"`));
  return `${lines.join('\n')}\n`;
}

/** nginx's `rate=`: whole requests per second, or per minute for slower rates. */
function nginxRate(perSecond: number): string {
  return Number.isInteger(perSecond) ? `${perSecond}r/s` : `${Math.max(1, Math.round(perSecond * 60))}r/m`;
}

/** Seconds a refused request should wait: one request's worth of the rate. */
function retryAfterS(rate: RateRule): number {
  return Math.max(1, Math.ceil(1 / rate.perSecond));
}

/** The `429` body of a key, as the server words it (static-server/keys/limits.ts), in an nginx single-quoted string. */
function body429(k: NginxKey & { rate: RateRule }): string {
  const json = JSON.stringify({ error: `key "${k.name}": rate limit of ${k.rate.perSecond}/s (burst ${k.rate.burst}) exceeded`, status: HttpStatus.TooManyRequests, retryAfter: retryAfterS(k.rate) });
  return `'${json.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

/** What the access rules add to the configuration. */
export interface AccessConf {
  /** `map`s and `limit_req_zone`s (http level). */
  http: string[];
  /** Directives of the server block (before its locations). */
  server: string[];
  /** `error_page` lines every location repeats (nginx does not inherit them into a level that sets its own). */
  errorPages: string[];
  /** Named locations answering 401 and 429 (with the CORS lines given; `types { }`: JSON whatever the URL's extension). */
  locations(cors: readonly string[]): string[];
  /** The Access-Control-Allow-Origin value: the request's origin when a key allows it (empty: not sent). */
  corsOrigin: string;
}

/**
 * The access rules. `healthPath` needs no token. With `keys` (a keys file), CORS answers name the
 * request's origin when an origin key allows it, a valid secret was sent, or a preflight announces one,
 * never `*`; without, `cors` is sent as it is.
 */
export function accessConf(o: { keys: readonly NginxKey[] | undefined; tokensPath: string; healthPath: string; cors: string }): AccessConf {
  const keys = o.keys ?? [];
  const limited = keys.filter((k): k is NginxKey & { rate: RateRule } => k.rate !== undefined);
  const http = [
    map('$http_authorization', '$tilebake_token', [
      'default invalid;',
      '"" missing;',
      '"~^(?!(?i:bearer)\\s)" missing;',
      '"~^(?i:bearer)\\s*$" missing;',
      `include ${o.tokensPath};`,
    ]),
    map('$uri', '$tilebake_open', ['default 0;', `${o.healthPath} 1;`]),
    // Origin keys: the Origin header, else (plain <img> tiles) the Referer's origin, on an allow-list; the first key allowing it.
    map('"$http_origin|$http_referer"', '$tilebake_by_origin', [
      'default "";',
      ...keys.flatMap((k) => (k.origins ?? []).flatMap((p) => [`"~^${originRegex(p)}\\|" "${k.name}";`, `"~^\\|${originRegex(p)}(?:/|$)" "${k.name}";`])),
    ]),
    // A wrong token is never excused by an allowed origin.
    map('"$tilebake_open|$tilebake_token|$tilebake_by_origin"', '$tilebake_deny', ['default "";', '"~^0\\|missing\\|$" missing;', '"~^0\\|invalid\\|" invalid;']),
    map('$tilebake_deny', '$tilebake_challenge', ['default "";', `missing 'Bearer realm="${AUTH_REALM}"';`, `invalid 'Bearer realm="${AUTH_REALM}", error="invalid_token"';`]),
    map('$tilebake_deny', '$tilebake_401_body', [`default '${BODY_401_INVALID}';`, `missing '${BODY_401_MISSING}';`]),
    // The key a request is let in with: its secret's, else its origin's.
    map('"$tilebake_token|$tilebake_by_origin"', '$tilebake_key', ['default "";', '"~^=(?<tilebake_k1>[^|]+)\\|" $tilebake_k1;', '"~^missing\\|(?<tilebake_k2>.+)$" $tilebake_k2;']),
  ];
  if (o.keys !== undefined && o.cors !== '') {
    http.push(
      map('"$tilebake_by_origin|$tilebake_token|$request_method|$http_access_control_request_headers"', '$tilebake_cors', [
        'default "";',
        '"~^[^|]+\\|" $http_origin;',
        '"~^\\|=" $http_origin;',
        '"~*^\\|[^|]*\\|OPTIONS\\|.*\\bauthorization\\b" $http_origin;',
      ]),
    );
  }
  const server: string[] = [];
  limited.forEach((k, i) => {
    const v = `$tilebake_rk${i}`;
    http.push(`# key "${k.name}": ${k.rate.perSecond} requests/s, bursts of ${k.rate.burst}`, map('$tilebake_key', v, ['default "";', `${mapSource(k.name)} "${k.name}";`]));
    http.push(`limit_req_zone ${v} zone=tilebake_key${i}:${ZONE_SIZE} rate=${nginxRate(k.rate.perSecond)};`);
    // nginx lets `burst` requests above the first one through at once: a token bucket of `burst` tokens.
    server.push(`limit_req zone=tilebake_key${i}${k.rate.burst > 1 ? ` burst=${k.rate.burst - 1}` : ''} nodelay;`);
  });
  if (limited.length > 0) {
    http.push(
      map('$tilebake_key', '$tilebake_429_body', ['default \'{"error":"rate limit exceeded","status":429,"retryAfter":1}\';', ...limited.map((k) => `${mapSource(k.name)} ${body429(k)};`)]),
      map('$tilebake_key', '$tilebake_retry_after', ['default 1;', ...limited.map((k) => `${mapSource(k.name)} ${retryAfterS(k.rate)};`)]),
    );
    server.push('limit_req_status 429;', 'limit_req_log_level warn;');
  }
  const errorPages = ['error_page 401 @tilebake_401;', ...(limited.length > 0 ? ['error_page 429 @tilebake_429;'] : [])];
  server.push(...errorPages, 'if ($tilebake_deny) { return 401; }');
  return {
    http,
    server,
    errorPages,
    corsOrigin: o.keys !== undefined && o.cors !== '' ? '$tilebake_cors' : o.cors,
    locations: (cors) => [
      named('@tilebake_401', ['types { }', 'default_type application/json;', ...cors, 'add_header WWW-Authenticate $tilebake_challenge always;', 'add_header Cache-Control no-store always;', 'return 401 $tilebake_401_body;']),
      ...(limited.length === 0
        ? []
        : [named('@tilebake_429', ['types { }', 'default_type application/json;', ...cors, 'add_header Retry-After $tilebake_retry_after always;', 'add_header Cache-Control no-store always;', 'return 429 $tilebake_429_body;'])]),
    ],
  };
}

/** A named location. */
function named(name: string, lines: readonly string[]): string {
  return [`  location ${name} {`, ...lines.map((l) => `    ${l}`), '  }'].join('\n');
}
