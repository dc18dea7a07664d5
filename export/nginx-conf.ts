/**
 * The nginx configuration of an export: what goes inside `http { }` (maps and one server block), so
 * that `http { include mime.types; include FILE; }` serves the export as `tilebake serve` serves the
 * build: the same Content-Type, Cache-Control (cachePolicy; `/v/{build}/…` immutable, the documents
 * handing them out revalidated) and CORS, `Content-Encoding: gzip` for gzip vector tiles
 * (decompressed by nginx's gunzip for clients that do not accept gzip), ETag, JSON 404 answers, and
 * /height proxied to a `tilebake serve --routing-port` listener. Tokens, origin keys, CORS naming
 * the origin and rate limits: nginx-access.ts.
 */
import { rename, rm, writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { UserError } from '../lib/errors.ts';
import type { Manifest } from '../lib/manifest.ts';
import { tempPathFor, writeFileAtomic } from '../lib/atomic.ts';
import { VERSIONED_PREFIX_PCRE } from '../lib/versioned-url.ts';
import type { ConfiguredToken } from '../static-server/auth.ts';
import { cachePolicy } from '../static-server/context.ts';
import { TILE_CONTENT_TYPES } from '../static-server/tile-response.ts';
import { HEALTH_PATH } from '../static-server/app.ts';
import { accessConf, tokensFileText, type NginxKey } from './nginx-access.ts';

/** What the configuration is for. */
export interface NginxConfOptions {
  /** The export folder. */
  root: string;
  /** `PORT` or `ADDR:PORT` (nginx `listen`). */
  listen: string;
  /** Accepted tokens; null serves without auth (--no-auth). */
  tokens: readonly ConfiguredToken[] | null;
  /** Access-Control-Allow-Origin; empty disables CORS. With `keys`, answers name the allowed origin instead. */
  cors: string;
  /** `HOST:PORT` of the `tilebake serve` listener answering POST /height. */
  heightUpstream: string;
  /** Gzip-compressed tile archives per tileset id (their .pbf files hold gzip bytes). */
  gzipTilesets: ReadonlySet<string>;
  manifest: Pick<Manifest, 'tilesets' | 'styles'>;
  /** The keys of a keys file (origin keys, secret keys given in clear, their rates); undefined: tokens only. */
  keys?: readonly NginxKey[];
  /** The export hands out versioned URLs: its TileJSON and style.json are revalidated every time. */
  versioned?: boolean;
}

/** File modes: the tokens file is readable by its owner only (nginx reads it as root at start). */
const TOKENS_FILE_MODE = 0o600;
/** Headers a browser may read cross-origin and send in a preflight (as the server's). */
const CORS_EXPOSE = 'ETag, Content-Encoding, WWW-Authenticate';
const CORS_ALLOW_HEADERS = 'Authorization, Content-Type, If-None-Match';
const CORS_ALLOW_METHODS = 'GET, HEAD, POST, OPTIONS';
const CORS_MAX_AGE_S = 86400;
const JSON_TYPE = 'application/json';
/** The JSON bodies of the answers nginx makes itself (the server's error shape). */
const BODY_404 = '{"error":"not found (no such file in the export; a tile inside the zoom range that is missing is empty)","status":404}';
const BODY_404_VERSIONED = '{"error":"not found (no such file in this build version; a version no longer in the export was pruned: load the style or TileJSON again)","status":404}';

/** A double-quoted nginx string; values with `$`, quotes, backslashes or newlines are refused. */
function q(value: string, what: string): string {
  if (/[$"\\\n\r]/.test(value)) throw new UserError(`--nginx-conf: ${what} "${value}" has a character nginx would interpret ($, quote, backslash, newline)`);
  return `"${value}"`;
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

/** A location block with its lines indented. */
function block(head: string, lines: readonly string[], indent = '  '): string {
  return [`${indent}${head} {`, ...lines.flatMap((l) => l.split('\n')).map((l) => `${indent}  ${l}`), `${indent}}`].join('\n');
}

/** The nginx configuration text and the tokens map file's text (null without auth). */
export function nginxConf(o: NginxConfOptions, tokensPath: string): { conf: string; tokens: string | null } {
  const auth = o.tokens !== null;
  const cache = cachePolicy({ auth, publicUrl: 'set', versionedUrls: o.versioned });
  const self = selfAddress(o.listen);
  const access = auth ? accessConf({ keys: o.keys, tokensPath, healthPath: HEALTH_PATH, cors: o.cors }) : undefined;
  const allowOrigin = access?.corsOrigin ?? o.cors;
  const varyOrigin = allowOrigin !== '' && allowOrigin !== '*';
  const corsHeaders =
    allowOrigin === ''
      ? []
      : [
          `add_header Access-Control-Allow-Origin ${allowOrigin.startsWith('$tilebake_') ? allowOrigin : q(allowOrigin, '--cors')} always;`,
          `add_header Access-Control-Expose-Headers "${CORS_EXPOSE}" always;`,
        ];
  const vary = (encoding: boolean) => {
    const v = [...(varyOrigin ? ['Origin'] : []), ...(encoding ? ['Accept-Encoding'] : [])];
    return v.length ? [`add_header Vary "${v.join(', ')}";`] : [];
  };
  /** Lines every file location repeats (nginx does not inherit add_header or error_page into a level that sets its own). */
  const common = (notFound: string) => [...(access?.errorPages ?? []), `error_page 404 ${notFound};`, ...corsHeaders];
  const cacheLine = (value: string) => `add_header Cache-Control ${q(value, 'Cache-Control')};`;

  /**
   * The exported files' locations: unversioned (`^~ /data/{id}/`…, documents kept per `cache.metadata`),
   * or under `/v/{build}/` (regex locations, everything immutable; a missing file is not cached).
   */
  const fileLocations = (versioned: boolean): string[] => {
    const at = (path: string, prefix: boolean) => (versioned ? `location ~ "^${VERSIONED_PREFIX_PCRE}${path}"` : prefix ? `location ^~ ${path}` : `location ~ ^${path}`);
    const data = versioned ? cache.versioned : cache.data;
    const metadata = versioned ? cache.versioned : cache.metadata;
    const base = common(versioned ? '@tilebake_404_version' : '@tilebake_404');
    const indent = versioned ? '' : '  ';
    const out: string[] = [];
    for (const [id, t] of Object.entries(o.manifest.tilesets)) {
      // MLT tiles are stored compressed as the tileset's MVT tiles (pipeline/vector/mlt.ts): one gzip rule for both.
      const gzip = o.gzipTilesets.has(id) && t.format === 'pbf';
      const lines = [types(t.mlt ? [t.format, 'mlt'] : [t.format]), 'log_not_found off;', ...base, cacheLine(data), ...vary(true)];
      if (gzip) lines.push('add_header Content-Encoding gzip;', 'error_page 418 = @tilebake_gunzip;', 'if ($tilebake_gzip = 0) { return 418; }');
      out.push(block(at(`/data/${id}/`, true), lines, indent));
    }
    const styleDocs = versioned
      ? []
      : [
          // The style (`style.json` and its alias `{style}.json`), and the raster TileJSON (`rendered.json`).
          block('location ~ ^/styles/([^/]+/style|[^/]+)\\.json$', [...base, cacheLine(metadata), ...vary(true)], ''),
          block('location ~ ^/styles/[^/]+/rendered\\.json$', [...base, cacheLine(metadata), ...vary(false)], ''),
        ];
    out.push(
      block(at('/data/[^/]+\\.json$', false), [types(['json']), 'charset utf-8;', ...base, cacheLine(metadata), ...vary(false)], indent),
      block(at('/styles/', true), [types(['png', 'jpg', 'webp', 'json']), 'charset utf-8;', 'log_not_found off;', ...base, cacheLine(data), ...vary(true), ...styleDocs], indent),
      block(at('/fonts/', true), [types(['pbf']), ...base, cacheLine(data), ...vary(true)], indent),
    );
    return out;
  };

  const locations: string[] = [
    ...fileLocations(false),
    block('location ^~ /v/', [...fileLocations(true), ...common('@tilebake_404_version'), 'return 404;']),
    block('location = /height', [`proxy_pass http://${o.heightUpstream};`, 'proxy_set_header Host $host;', 'proxy_http_version 1.1;', 'proxy_set_header Connection "";']),
    block(`location = ${HEALTH_PATH}`, [`default_type ${JSON_TYPE};`, 'add_header Cache-Control no-store;', ...corsHeaders, `return 200 '{"status":"ok"}';`]),
    block('location /', [...common('@tilebake_404'), 'return 404;']),
    block('location @tilebake_gunzip', [
      '# Clients that do not accept gzip: nginx asks itself for the gzip bytes and decompresses them.',
      'gunzip on;',
      'proxy_set_header Accept-Encoding gzip;',
      'proxy_set_header Host $host;',
      `proxy_pass http://${self};`,
    ]),
    block('location @tilebake_404', ['types { }', `default_type ${JSON_TYPE};`, ...corsHeaders, `add_header Cache-Control ${q(cache.data, 'Cache-Control')} always;`, `return 404 '${BODY_404}';`]),
    // A pruned version must not be cached: the client reloads the document and gets the current one.
    block('location @tilebake_404_version', ['types { }', `default_type ${JSON_TYPE};`, ...corsHeaders, 'add_header Cache-Control no-store always;', `return 404 '${BODY_404_VERSIONED}';`]),
    ...(access?.locations(corsHeaders) ?? []),
  ];

  const maps: string[] = [
    block('map $http_accept_encoding $tilebake_gzip', [
      'default 0;',
      '"~*(^|,)\\s*gzip\\s*;\\s*q\\s*=\\s*0(\\.0*)?\\s*(,|$)" 0;',
      '"~*(^|,)\\s*(gzip|\\*)\\s*(;|,|$)" 1;',
    ], ''),
    ...(access?.http ?? []),
  ];
  /** Short variable names (nginx's variables hash has small buckets). */
  const preflightVar = (name: string) => `$tilebake_pf_${name.toLowerCase().replace(/^access-control-(allow-)?/, '').replace(/-/g, '')}`;
  const preflightValues: [string, string][] = allowOrigin === ''
    ? [['Allow', CORS_ALLOW_METHODS]]
    : [
        ['Allow', CORS_ALLOW_METHODS],
        ['Access-Control-Allow-Origin', allowOrigin],
        ['Access-Control-Allow-Methods', CORS_ALLOW_METHODS],
        ['Access-Control-Allow-Headers', CORS_ALLOW_HEADERS],
        ['Access-Control-Max-Age', String(CORS_MAX_AGE_S)],
      ];
  for (const [name, value] of preflightValues) {
    const v = value.startsWith('$tilebake_') ? value : q(value, name);
    maps.push(block(`map $request_method ${preflightVar(name)}`, ['default "";', `OPTIONS ${v};`], ''));
  }
  const server = [
    'server {',
    `  listen ${o.listen};`,
    `  root ${q(resolve(o.root), 'export folder')};`,
    '  charset_types application/json;',
    '  error_page 404 @tilebake_404;',
    '  # CORS preflight (OPTIONS on any path, no token needed); these headers are empty, so not sent, otherwise.',
    ...preflightValues.map(([name]) => `  add_header ${name} ${preflightVar(name)};`),
    ...(varyOrigin ? ['  add_header Vary Origin;'] : []),
    '  if ($request_method = OPTIONS) { return 204; }',
    ...(access?.server ?? []).map((l) => `  ${l}`),
    locations.join('\n'),
    '}',
  ];
  const header = `# Generated by \`tilebake export\` for ${resolve(o.root)}: include it inside http { } after mime.types.\n`;
  const tokens = auth ? tokensFileText(o.tokens!, o.keys ?? []) : null;
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
