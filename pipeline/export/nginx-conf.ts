/**
 * The nginx configuration of an export: what goes inside `http { }` (maps and one server block), so
 * that `http { include mime.types; include FILE; }` serves the export as `tilebake serve` serves the
 * build: the same Content-Type, Cache-Control (cachePolicy) and CORS, `Content-Encoding: gzip` for
 * gzip vector tiles (decompressed by nginx's gunzip for clients that do not accept gzip), ETag, JSON
 * 404 and 401 answers with WWW-Authenticate, bearer tokens checked by a `map` (in a 0600 file beside
 * FILE), and /height proxied to a `tilebake serve --routing-port` listener.
 */
import { rename, rm, writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { UserError } from '../../lib/errors.ts';
import type { Manifest } from '../../lib/manifest.ts';
import { tempPathFor, writeFileAtomic } from '../../lib/atomic.ts';
import { AUTH_REALM, type ConfiguredToken } from '../../static-server/auth.ts';
import type { OriginPattern } from '../../static-server/keys/origins.ts';
import { cachePolicy } from '../../static-server/context.ts';
import { TILE_CONTENT_TYPES } from '../../static-server/tile-response.ts';
import { HEALTH_PATH } from '../../static-server/app.ts';

/** What the configuration is for. */
export interface NginxConfOptions {
  /** The export folder. */
  root: string;
  /** `PORT` or `ADDR:PORT` (nginx `listen`). */
  listen: string;
  /** Accepted tokens; null serves without auth (--no-auth). */
  tokens: readonly ConfiguredToken[] | null;
  /** Access-Control-Allow-Origin; empty disables CORS. */
  cors: string;
  /** `HOST:PORT` of the `tilebake serve` listener answering POST /height. */
  heightUpstream: string;
  /** Gzip-compressed tile archives per tileset id (their .pbf files hold gzip bytes). */
  gzipTilesets: ReadonlySet<string>;
  manifest: Pick<Manifest, 'tilesets' | 'styles'>;
  /** Origin keys' allow-lists (keys file): requests from these origins need no token (static-server/keys/origins.ts). */
  origins?: readonly OriginPattern[];
}

/** A regex (nginx PCRE) matching the origins a pattern allows, as `scheme://host[:port]`. */
export function originRegex(p: OriginPattern): string {
  const host = p.wildcardHost ? `[^/:|]+${p.host.replace(/\./g, '\\.')}` : p.host.replace(/[.[\]]/g, '\\$&');
  const port = p.port === '*' ? '(?::\\d+)?' : p.port === '' ? `(?::${p.scheme === 'https' ? 443 : 80})?` : `:${p.port}`;
  return `${p.scheme}://${host}${port}`;
}

/** File modes: the tokens file is readable by its owner only (nginx reads it as root at start). */
const TOKENS_FILE_MODE = 0o600;
/** Characters of an RFC 6750 bearer token (b64token). */
const B64TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;
/** Headers a browser may read cross-origin and send in a preflight (as the server's). */
const CORS_EXPOSE = 'ETag, Content-Encoding, WWW-Authenticate';
const CORS_ALLOW_HEADERS = 'Authorization, Content-Type, If-None-Match';
const CORS_ALLOW_METHODS = 'GET, HEAD, POST, OPTIONS';
const CORS_MAX_AGE_S = 86400;
const JSON_TYPE = 'application/json';
/** The JSON bodies of the answers nginx makes itself (the server's error shape). */
const BODY_404 = '{"error":"not found (no such file in the export; a tile inside the zoom range that is missing is empty)","status":404}';
const BODY_401_MISSING = '{"error":"missing bearer token: send `Authorization: Bearer <token>`","status":401}';
const BODY_401_INVALID = '{"error":"invalid bearer token","status":401}';

/** A double-quoted nginx string; values with `$`, quotes, backslashes or newlines are refused. */
function q(value: string, what: string): string {
  if (/[$"\\\n\r]/.test(value)) throw new UserError(`--nginx-conf: ${what} "${value}" has a character nginx would interpret ($, quote, backslash, newline)`);
  return `"${value}"`;
}

/** The map line accepting one token: `Bearer <token>` (scheme in any case, spaces as the server allows). */
function tokenLine(t: ConfiguredToken): string {
  if (t.token === undefined) {
    throw new UserError(`${t.source}: a sha256: hash; nginx compares the token a client sends, so the nginx config needs the token itself`);
  }
  if (!B64TOKEN.test(t.token)) throw new UserError(`${t.source}: a bearer token has only letters, digits and -._~+/ (and trailing =)`);
  return `  "~^(?i:bearer)\\s+${t.token.replace(/[.+]/g, '[$&]')}\\s*$" ok;`;
}

/** Where the server block proxies to itself (for gunzip): its listen address, loopback for a wildcard. */
function selfAddress(listen: string): string {
  const m = /^(?:(.*):)?(\d+)$/.exec(listen.trim());
  if (!m || Number(m[2]) < 1 || Number(m[2]) > 65535) throw new UserError(`--listen: expected PORT or ADDR:PORT (got "${listen}")`, { exitCode: 2 });
  const host = m[1] ?? '';
  const loopback = host === '' || host === '*' || host === '0.0.0.0' ? '127.0.0.1' : host === '[::]' ? '[::1]' : host;
  return `${loopback}:${m[2]}`;
}

/** `types { }` of a location: the server's content types for the given extensions. */
function types(exts: readonly string[]): string {
  const byType = new Map<string, string[]>();
  for (const e of exts) {
    const t = e === 'json' ? JSON_TYPE : (TILE_CONTENT_TYPES[e] ?? 'application/octet-stream');
    byType.set(t, [...(byType.get(t) ?? []), e]);
  }
  return `types { ${[...byType].map(([t, es]) => `${t} ${es.join(' ')};`).join(' ')} }`;
}

/** The nginx configuration text and the tokens map file's text (null without auth). */
export function nginxConf(o: NginxConfOptions, tokensPath: string): { conf: string; tokens: string | null } {
  const auth = o.tokens !== null;
  const cache = cachePolicy({ auth, publicUrl: 'set' });
  const cors = o.cors;
  const self = selfAddress(o.listen);
  const varyOrigin = cors !== '' && cors !== '*';
  const corsHeaders = cors === '' ? [] : [`add_header Access-Control-Allow-Origin ${q(cors, '--cors')} always;`, `add_header Access-Control-Expose-Headers "${CORS_EXPOSE}" always;`];
  const vary = (encoding: boolean) => {
    const v = [...(varyOrigin ? ['Origin'] : []), ...(encoding ? ['Accept-Encoding'] : [])];
    return v.length ? [`add_header Vary "${v.join(', ')}";`] : [];
  };
  /** Lines every file location repeats (nginx does not inherit add_header or error_page into a level that sets its own). */
  const common = ['error_page 401 @tilebake_401;', 'error_page 404 @tilebake_404;', ...corsHeaders];
  const block = (head: string, lines: string[], indent = '  ') =>
    [`${indent}${head} {`, ...lines.flatMap((l) => l.split('\n')).map((l) => `${indent}  ${l}`), `${indent}}`].join('\n');

  const locations: string[] = [];
  for (const [id, t] of Object.entries(o.manifest.tilesets)) {
    const gzip = o.gzipTilesets.has(id) && t.format === 'pbf';
    const lines = [types([t.format]), 'log_not_found off;', ...common, `add_header Cache-Control ${q(cache.data, 'Cache-Control')};`, ...vary(true)];
    if (gzip) lines.push('add_header Content-Encoding gzip;', 'error_page 418 = @tilebake_gunzip;', 'if ($tilebake_gzip = 0) { return 418; }');
    locations.push(block(`location ^~ ${q(`/data/${id}/`, 'tileset id')}`, lines));
  }
  locations.push(
    block('location ~ ^/data/[^/]+\\.json$', [types(['json']), 'charset utf-8;', ...common, `add_header Cache-Control ${q(cache.metadata, 'Cache-Control')};`, ...vary(false)]),
    block('location ^~ /styles/', [
      types(['png', 'jpg', 'webp', 'json']),
      'charset utf-8;',
      'log_not_found off;',
      ...common,
      `add_header Cache-Control ${q(cache.data, 'Cache-Control')};`,
      ...vary(true),
      // The style (`style.json` and its alias `{style}.json`), and the raster TileJSON (`rendered.json`).
      block('location ~ ^/styles/([^/]+/style|[^/]+)\\.json$', [...common, `add_header Cache-Control ${q(cache.metadata, 'Cache-Control')};`, ...vary(true)], ''),
      block('location ~ ^/styles/[^/]+/rendered\\.json$', [...common, `add_header Cache-Control ${q(cache.metadata, 'Cache-Control')};`, ...vary(false)], ''),
    ]),
    block('location ^~ /fonts/', [types(['pbf']), ...common, `add_header Cache-Control ${q(cache.data, 'Cache-Control')};`, ...vary(true)]),
    block('location = /height', [`proxy_pass http://${o.heightUpstream};`, 'proxy_set_header Host $host;', 'proxy_http_version 1.1;', 'proxy_set_header Connection "";']),
    block(`location = ${HEALTH_PATH}`, [`default_type ${JSON_TYPE};`, 'add_header Cache-Control no-store;', ...corsHeaders, `return 200 '{"status":"ok"}';`]),
    block('location /', [...common, 'return 404;']),
    block('location @tilebake_gunzip', [
      '# Clients that do not accept gzip: nginx asks itself for the gzip bytes and decompresses them.',
      'gunzip on;',
      'proxy_set_header Accept-Encoding gzip;',
      'proxy_set_header Host $host;',
      `proxy_pass http://${self};`,
    ]),
    block('location @tilebake_404', [`default_type ${JSON_TYPE};`, ...corsHeaders, `add_header Cache-Control ${q(cache.data, 'Cache-Control')} always;`, `return 404 '${BODY_404}';`]),
  );
  if (auth) {
    locations.push(
      block('location @tilebake_401', [
        `default_type ${JSON_TYPE};`,
        ...corsHeaders,
        'add_header WWW-Authenticate $tilebake_challenge always;',
        'add_header Cache-Control no-store always;',
        'return 401 $tilebake_401_body;',
      ]),
    );
  }

  const maps: string[] = [
    block('map $http_accept_encoding $tilebake_gzip', [
      'default 0;',
      '"~*(^|,)\\s*gzip\\s*;\\s*q\\s*=\\s*0(\\.0*)?\\s*(,|$)" 0;',
      '"~*(^|,)\\s*(gzip|\\*)\\s*(;|,|$)" 1;',
    ], ''),
  ];
  if (auth) {
    maps.push(
      block('map $http_authorization $tilebake_token', [
        'default invalid;',
        '"" missing;',
        '"~^(?!(?i:bearer)\\s)" missing;',
        '"~^(?i:bearer)\\s*$" missing;',
        `include ${tokensPath};`,
      ], ''),
      block('map $uri $tilebake_open', ['default 0;', `${HEALTH_PATH} 1;`], ''),
      // Origin keys: the Origin header, else (plain <img> tiles) the Referer's origin, on an allow-list.
      block('map "$http_origin|$http_referer" $tilebake_by_origin', [
        'default 0;',
        ...(o.origins ?? []).flatMap((p) => [`"~^${originRegex(p)}\\|" 1;`, `"~^\\|${originRegex(p)}(?:/|$)" 1;`]),
      ], ''),
      block('map "$tilebake_open$tilebake_token$tilebake_by_origin" $tilebake_deny', ['default "";', '0missing0 missing;', '0invalid0 invalid;', '0invalid1 invalid;'], ''),
      block('map $tilebake_deny $tilebake_challenge', ['default "";', `missing 'Bearer realm="${AUTH_REALM}"';`, `invalid 'Bearer realm="${AUTH_REALM}", error="invalid_token"';`], ''),
      block('map $tilebake_deny $tilebake_401_body', [`default '${BODY_401_INVALID}';`, `missing '${BODY_401_MISSING}';`], ''),
    );
  }
  /** Short variable names (nginx's variables hash has small buckets). */
  const preflightVar = (name: string) => `$tilebake_pf_${name.toLowerCase().replace(/^access-control-(allow-)?/, '').replace(/-/g, '')}`;
  const preflightValues: [string, string][] = cors === ''
    ? [['Allow', CORS_ALLOW_METHODS]]
    : [
        ['Allow', CORS_ALLOW_METHODS],
        ['Access-Control-Allow-Origin', cors],
        ['Access-Control-Allow-Methods', CORS_ALLOW_METHODS],
        ['Access-Control-Allow-Headers', CORS_ALLOW_HEADERS],
        ['Access-Control-Max-Age', String(CORS_MAX_AGE_S)],
      ];
  for (const [name, value] of preflightValues) {
    maps.push(block(`map $request_method ${preflightVar(name)}`, ['default "";', `OPTIONS ${q(value, name)};`], ''));
  }
  const server = [
    'server {',
    `  listen ${o.listen};`,
    `  root ${q(resolve(o.root), 'export folder')};`,
    '  charset_types application/json;',
    '  error_page 401 @tilebake_401;',
    '  error_page 404 @tilebake_404;',
    '  # CORS preflight (OPTIONS on any path, no token needed); these headers are empty, so not sent, otherwise.',
    ...preflightValues.map(([name]) => `  add_header ${name} ${preflightVar(name)};`),
    '  if ($request_method = OPTIONS) { return 204; }',
    ...(auth ? ['  if ($tilebake_deny) { return 401; }'] : []),
    locations.join('\n'),
    '}',
  ];
  const header = `# Generated by \`tilebake export\` for ${resolve(o.root)}: include it inside http { } after mime.types.\n`;
  const tokens = auth ? `${o.tokens!.map(tokenLine).join('\n')}\n` : null;
  return { conf: `${header}${maps.join('\n')}\n${server.join('\n')}\n`, tokens };
}

/** Write FILE (and FILE.tokens, mode 0600, with auth) atomically; returns the tokens file's path. */
export async function writeNginxConf(file: string, o: NginxConfOptions): Promise<string | null> {
  const tokensPath = `${resolve(file)}.tokens`;
  const { conf, tokens } = nginxConf(o, tokensPath);
  if (tokens !== null) {
    const tmp = tempPathFor(tokensPath);
    try {
      await writeFile(tmp, tokens, { mode: TOKENS_FILE_MODE });
      await rename(tmp, tokensPath);
    } catch (e) {
      await rm(tmp, { force: true });
      throw e;
    }
  }
  await writeFileAtomic(file, conf);
  return tokens === null ? null : tokensPath;
}
