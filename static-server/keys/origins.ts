/**
 * Origin allow-lists of origin keys: `https://maps.example.com`, `https://*.example.com` (any
 * subdomain, not the bare domain), `http://localhost:*` (any port). A pattern without a port means
 * the scheme's default port.
 */
import { UserError } from '../../lib/errors.ts';

/** One parsed allow-list entry. */
export interface OriginPattern {
  scheme: 'http' | 'https';
  /** Lower-case host; for `*.example.com` the suffix `.example.com`. */
  host: string;
  wildcardHost: boolean;
  /** Port as a string (`''` for the scheme's default), or `*`. */
  port: string;
}

const PATTERN = /^(https?):\/\/(\*\.)?([a-z0-9.-]+|\[[0-9a-f:.]+\])(?::(\*|\d{1,5}))?\/?$/i;
const DEFAULT_PORTS: Readonly<Record<string, string>> = { http: '80', https: '443' };

/** Parse an allow-list entry; `where` names the field in the error. */
export function parseOriginPattern(text: string, where: string): OriginPattern {
  const m = PATTERN.exec(text.trim());
  if (!m || m[3].startsWith('.') || m[3].endsWith('.')) {
    throw new UserError(`${where}: expected an origin such as https://maps.example.com, https://*.example.com or http://localhost:* (got ${JSON.stringify(text)})`, { exitCode: 2 });
  }
  const scheme = m[1].toLowerCase() as OriginPattern['scheme'];
  const port = m[4] === undefined || m[4] === DEFAULT_PORTS[scheme] ? '' : m[4];
  return { scheme, host: m[2] ? `.${m[3].toLowerCase()}` : m[3].toLowerCase(), wildcardHost: m[2] !== undefined, port };
}

/** The origin (`scheme://host[:port]`) of an Origin header value or a Referer URL, or undefined. */
export function originOf(value: string | undefined): URL | undefined {
  if (!value || value === 'null') return undefined;
  try {
    const u = new URL(value);
    return u.protocol === 'http:' || u.protocol === 'https:' ? u : undefined;
  } catch {
    return undefined;
  }
}

/** True when `origin` is allowed by `p`. */
export function originMatches(p: OriginPattern, origin: URL): boolean {
  if (origin.protocol !== `${p.scheme}:`) return false;
  if (p.port !== '*' && origin.port !== p.port) return false;
  const host = origin.hostname.toLowerCase();
  return p.wildcardHost ? host.endsWith(p.host) && host.length > p.host.length : host === p.host;
}
