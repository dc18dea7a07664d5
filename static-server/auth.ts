import { hash, timingSafeEqual } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { UserError } from '../lib/errors.ts';
import { HttpStatus } from '../lib/http-status.ts';
import { HttpError } from './context.ts';

/** Environment variable holding comma-separated bearer tokens. */
export const TOKENS_ENV = 'TILEBAKE_TOKENS';
/** The realm named in WWW-Authenticate. */
export const AUTH_REALM = 'tilebake';
/** Prefix of a tokens-file line that holds the SHA-256 hash of a token instead of the token. */
const HASH_PREFIX = 'sha256:';
/** A SHA-256 digest in hex. */
const SHA256_HEX = /^[0-9a-f]{64}$/i;

/** SHA-256 of a token: what is stored and compared. */
export function hashToken(token: string): Buffer {
  return hash('sha256', token, 'buffer');
}

/** One configured token: its SHA-256 hash, the token itself when given in clear, and where it came from. */
export interface ConfiguredToken {
  hash: Buffer;
  token?: string;
  /** `TILEBAKE_TOKENS` or `<file>: line <n>`, for messages. */
  source: string;
}

/** Parse the text of a tokens file: one token per line, `#` comments, blank lines, `sha256:<hex>` hashes. */
export function parseTokenLines(text: string, path: string): ConfiguredToken[] {
  const tokens: ConfiguredToken[] = [];
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.trim();
    const source = `${path}: line ${i + 1}`;
    if (line === '' || line.startsWith('#')) return;
    if (line.toLowerCase().startsWith(HASH_PREFIX)) {
      const hex = line.slice(HASH_PREFIX.length).trim();
      if (!SHA256_HEX.test(hex)) {
        throw new UserError(`${source}: expected sha256:<64 hex digits>`);
      }
      tokens.push({ hash: Buffer.from(hex, 'hex'), source });
    } else {
      tokens.push({ hash: hashToken(line), token: line, source });
    }
  });
  return tokens;
}

/** The hashes of a tokens file's tokens (see parseTokenLines). */
export function parseTokensFile(text: string, path: string): Buffer[] {
  return parseTokenLines(text, path).map((t) => t.hash);
}

/** The message printed when the server would start without any token. */
export const NO_TOKENS_MESSAGE =
  `no bearer tokens configured: set some, e.g. \`${TOKENS_ENV}=$(openssl rand -hex 24) tilebake serve --out DIR\`, ` +
  'or list them in a file (one per line, `sha256:<hex>` for a hash) with `--tokens-file FILE`; ' +
  'use `--no-auth` to serve without authentication';

/**
 * All configured tokens (env `TILEBAKE_TOKENS` and `--tokens-file`). Throws UserError when the file
 * cannot be read or no token is configured at all.
 */
export async function loadTokens(env: string | undefined, tokensFile: string | undefined): Promise<ConfiguredToken[]> {
  const tokens: ConfiguredToken[] = (env ?? '')
    .split(',')
    .map((t) => t.trim())
    .filter((t) => t !== '')
    .map((token) => ({ hash: hashToken(token), token, source: TOKENS_ENV }));
  if (tokensFile !== undefined) {
    let text: string;
    try {
      text = await readFile(tokensFile, 'utf8');
    } catch (e) {
      throw new UserError(`${tokensFile}: cannot read the tokens file (${(e as NodeJS.ErrnoException).code ?? String(e)})`);
    }
    tokens.push(...parseTokenLines(text, tokensFile));
  }
  if (tokens.length === 0) throw new UserError(NO_TOKENS_MESSAGE);
  return tokens;
}

/** The SHA-256 hashes of all configured tokens (see loadTokens). */
export async function loadTokenHashes(env: string | undefined, tokensFile: string | undefined): Promise<Buffer[]> {
  return (await loadTokens(env, tokensFile)).map((t) => t.hash);
}

/** Outcome of checking an Authorization header. */
export enum AuthResult {
  Ok,
  Missing,
  Invalid,
}

/** Bearer scheme prefix, compared case-insensitively. */
const BEARER = /^bearer\s+/i;

/**
 * Check an Authorization header against the stored hashes in constant time: the presented token
 * is hashed and compared with every stored hash (no early exit).
 */
export function checkAuthorization(header: string | undefined, hashes: readonly Buffer[]): AuthResult {
  if (!header) return AuthResult.Missing;
  const m = BEARER.exec(header);
  if (!m) return AuthResult.Missing;
  const token = header.slice(m[0].length).trim();
  if (token === '') return AuthResult.Missing;
  const presented = hashToken(token);
  let ok = false;
  for (const h of hashes) {
    if (timingSafeEqual(presented, h)) ok = true;
  }
  return ok ? AuthResult.Ok : AuthResult.Invalid;
}

/** Throw the 401 HttpError for a failed check (never mentions the presented token). */
export function rejectUnauthorized(result: AuthResult.Missing | AuthResult.Invalid, origin?: string): never {
  if (result === AuthResult.Missing) {
    const why = origin === undefined ? '' : ` (no key allows origin ${JSON.stringify(origin.slice(0, 200))})`;
    throw new HttpError(HttpStatus.Unauthorized, `missing bearer token: send \`Authorization: Bearer <token>\`${why}`, {}, {
      'www-authenticate': `Bearer realm="${AUTH_REALM}"`,
    });
  }
  throw new HttpError(HttpStatus.Unauthorized, 'invalid bearer token', {}, {
    'www-authenticate': `Bearer realm="${AUTH_REALM}", error="invalid_token"`,
  });
}
