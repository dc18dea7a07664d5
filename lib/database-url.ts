/**
 * PostgreSQL connection URLs (`postgresql://user:password@host:port/db?param=value`) as tileset sources:
 * recognised by their scheme, shown everywhere without their password, and given a short, named connect
 * timeout before libpq sees them. The password may be in the URL, in `PGPASSWORD` or in `~/.pgpass`
 * (libpq reads the last two itself); it never leaves this process.
 */

/** Seconds libpq waits for a database to answer when the URL sets no `connect_timeout`. */
export const DEFAULT_CONNECT_TIMEOUT_S = 5;

const SCHEME = /^postgres(?:ql)?:\/\//i;

/** True when `source` is a PostgreSQL connection URL (`postgresql://…` or `postgres://…`). */
export function isDatabaseUrl(source: string): boolean {
  return SCHEME.test(source);
}

/** The URL's password (decoded), from its user info or a `password` parameter; undefined when it has none. */
function passwordOf(url: string): string | undefined {
  try {
    const u = new URL(url);
    const p = u.password ? decodeURIComponent(u.password) : u.searchParams.get('password');
    return p || undefined;
  } catch {
    return /^[a-z]+:\/\/[^/@:]*:([^/@]*)@/i.exec(url)?.[1] || undefined;
  }
}

/** `url` without its password (user info and `password` parameter): what messages, logs and files show. */
export function redactDatabaseUrl(url: string): string {
  const noUserPassword = url.replace(/^([a-z]+:\/\/[^/@:?#]*):[^/@?#]*@/i, '$1@');
  return noUserPassword.replace(/([?&])password=[^&#]*(&?)/gi, (_, sep: string, next: string) => (next ? sep : '')).replace(/[?&]$/, '');
}

/** A password this short is removed only as part of the URL: on its own it would take letters out of words. */
const SCRUBBED_MIN_LENGTH = 6;

/** `text` with the URL shown without its password, and the password itself removed (a library's message that echoes the connection). */
export function withoutPassword(text: string, url: string): string {
  let out = text.split(url).join(redactDatabaseUrl(url));
  const p = passwordOf(url);
  if (p && p.length >= SCRUBBED_MIN_LENGTH) for (const form of new Set([p, encodeURIComponent(p)])) out = out.split(form).join('…');
  return out;
}

/** The URL libpq connects with: `connect_timeout` set (DEFAULT_CONNECT_TIMEOUT_S unless the URL sets it). */
export function connectionUrl(url: string): string {
  if (/[?&]connect_timeout=/i.test(url)) return url;
  return `${url}${url.includes('?') ? '&' : '?'}connect_timeout=${DEFAULT_CONNECT_TIMEOUT_S}`;
}

/** The `connect_timeout` the connection uses, in seconds. */
export function connectTimeoutOf(url: string): number {
  const m = /[?&]connect_timeout=(\d+)/i.exec(connectionUrl(url));
  return Number(m![1]);
}
