/**
 * The keys file (`--keys keys.json`): who may read what, from where, how fast and how much.
 *
 *     { "keys": [
 *         { "name": "website", "origins": ["https://maps.example.com", "https://*.example.com"], "rate": { "perSecond": 50, "burst": 100 } },
 *         { "name": "backend", "secret": "sha256:9f86d081…", "scopes": ["tiles", "height"], "quota": { "requests": 100000, "per": "day" } },
 *         { "name": "partner", "secret": "a-plain-secret-is-hashed-on-load", "quota": { "heightPoints": 5000000, "per": "month" } },
 *         { "name": "field-app", "secret": "sha256:…", "scopes": ["packs"], "quota": { "packTiles": 200000, "per": "day" } }
 *     ] }
 *
 * A key has either a `secret` (sent as `Authorization: Bearer <secret>`; only its SHA-256 is kept)
 * or `origins` (browser pages on those origins need no header). Tokens from `TILEBAKE_TOKENS` and
 * `--tokens-file` become secret keys without limits.
 */
import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { UserError } from '../../lib/errors.ts';
import { hashToken, type ConfiguredToken } from '../auth.ts';
import { parseOriginPattern, type OriginPattern } from './origins.ts';

/** What a key may be used for; a route's scope comes from its kind (`scopeOf` in keys/gate.ts). */
export const SCOPES = ['tiles', 'height', 'static', 'packs', 'search', 'metrics'] as const;
export type Scope = (typeof SCOPES)[number];
/** Scopes of a key that lists none: a secret key may do everything, an origin key everything but /metrics. */
const DEFAULT_SECRET_SCOPES: readonly Scope[] = SCOPES;
const DEFAULT_ORIGIN_SCOPES: readonly Scope[] = ['tiles', 'height', 'static', 'packs', 'search'];
/** Key names go into logs, metrics labels and the usage store. */
const KEY_NAME = /^[A-Za-z0-9][\w.:-]{0,63}$/;
const HASH_PREFIX = 'sha256:';
const SHA256_HEX = /^[0-9a-f]{64}$/i;

const rateSchema = z.strictObject({
  perSecond: z.number().positive(),
  burst: z.number().int().positive().optional(),
});
const quotaSchema = z
  .strictObject({
    requests: z.number().int().positive().optional(),
    heightPoints: z.number().int().positive().optional(),
    packTiles: z.number().int().positive().optional(),
    per: z.enum(['day', 'month']),
  })
  .refine((q) => q.requests !== undefined || q.heightPoints !== undefined || q.packTiles !== undefined, { message: 'a quota needs "requests", "heightPoints" or "packTiles"' });
const keySchema = z
  .strictObject({
    name: z.string().regex(KEY_NAME, 'expected a name of letters, digits, ".", "_", ":" or "-" (at most 64)'),
    secret: z.string().min(1).optional(),
    origins: z.array(z.string().min(1)).min(1).optional(),
    scopes: z.array(z.enum(SCOPES)).min(1).optional(),
    rate: rateSchema.optional(),
    quota: quotaSchema.optional(),
  })
  .refine((k) => (k.secret === undefined) !== (k.origins === undefined), { message: 'a key needs either "secret" or "origins" (not both)' });
const fileSchema = z.strictObject({ keys: z.array(keySchema) });

export type RateRule = { perSecond: number; burst: number };
export type QuotaRule = { requests?: number; heightPoints?: number; packTiles?: number; per: 'day' | 'month' };

/** One key as the server uses it. */
export interface Key {
  name: string;
  /** SHA-256 of the secret (secret keys). */
  hash?: Buffer;
  /** Allowed origins (origin keys). */
  origins?: OriginPattern[];
  scopes: ReadonlySet<Scope>;
  rate?: RateRule;
  quota?: QuotaRule;
}

/** `keys[1].origins[0]` from a zod issue path. */
function fieldOf(path: readonly PropertyKey[]): string {
  return path.map((k, i) => (typeof k === 'number' ? `[${k}]` : `${i === 0 ? '' : '.'}${String(k)}`)).join('') || '(top level)';
}

/** The SHA-256 of a `secret` field: `sha256:<hex>` as given, anything else hashed. */
function secretHash(secret: string, field: string, file: string): Buffer {
  if (!secret.toLowerCase().startsWith(HASH_PREFIX)) return hashToken(secret);
  const hex = secret.slice(HASH_PREFIX.length).trim();
  if (!SHA256_HEX.test(hex)) throw new UserError(`${file}: ${field}: expected sha256:<64 hex digits>`, { exitCode: 2 });
  return Buffer.from(hex, 'hex');
}

/** Validate a parsed keys file; `file` names it in messages (which never quote a secret). */
export function parseKeys(raw: unknown, file: string): Key[] {
  const r = fileSchema.safeParse(raw);
  if (!r.success) {
    const lines = r.error.issues.map((i) => `  ${fieldOf(i.path)}: ${i.message}`);
    throw new UserError(`${file}: invalid keys file\n${lines.join('\n')}`, { exitCode: 2 });
  }
  const names = new Set<string>();
  const hashes = new Set<string>();
  return r.data.keys.map((k, i): Key => {
    const at = `keys[${i}]`;
    if (names.has(k.name)) throw new UserError(`${file}: ${at}.name: "${k.name}" is used by another key`, { exitCode: 2 });
    names.add(k.name);
    const key: Key = {
      name: k.name,
      scopes: new Set(k.scopes ?? (k.secret !== undefined ? DEFAULT_SECRET_SCOPES : DEFAULT_ORIGIN_SCOPES)),
      ...(k.rate ? { rate: { perSecond: k.rate.perSecond, burst: k.rate.burst ?? Math.max(1, Math.ceil(k.rate.perSecond)) } } : {}),
      ...(k.quota ? { quota: k.quota } : {}),
    };
    if (k.secret !== undefined) {
      key.hash = secretHash(k.secret, `${at}.secret`, file);
      const hex = key.hash.toString('hex');
      if (hashes.has(hex)) throw new UserError(`${file}: ${at}.secret: the same secret as another key`, { exitCode: 2 });
      hashes.add(hex);
    } else {
      key.origins = k.origins!.map((o, j) => parseOriginPattern(o, `${file}: ${at}.origins[${j}]`));
    }
    return key;
  });
}

/** Read and validate a keys file. */
export async function loadKeysFile(file: string): Promise<Key[]> {
  return parseKeys(await readKeysJson(file), file);
}

/** Read a keys file's JSON, unvalidated (parseKeys validates it; `tilebake export` also needs clear secrets for nginx). */
export async function readKeysJson(file: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    throw new UserError(`${file}: cannot read the keys file (${(e as NodeJS.ErrnoException).code ?? String(e)})`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    // Only where: JSON.parse's message may quote the text around the error, which may be a secret.
    const at = /position \d+( \(line \d+ column \d+\))?/.exec((e as Error).message)?.[0];
    throw new UserError(`${file}: not valid JSON${at ? ` (at ${at})` : ''}`, { exitCode: 2 });
  }
  return raw;
}

/** Secret keys without limits for the bearer tokens of `TILEBAKE_TOKENS` / `--tokens-file`: `token-1`, `token-2`… */
export function keysOfTokens(tokens: readonly Pick<ConfiguredToken, 'hash'>[]): Key[] {
  return tokens.map((t, i) => ({ name: `token-${i + 1}`, hash: t.hash, scopes: new Set(DEFAULT_SECRET_SCOPES) }));
}
