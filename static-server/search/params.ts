/**
 * The query parameters of GET /search and /reverse, checked: each bad one is a 400 naming it. Photon's
 * names where Photon has one (`q`, `limit`, `lang`, `bbox`, `lat`/`lon`, `radius` in km), tilebake's
 * `near=lon,lat` (or Photon's `lat` and `lon` together) and `kind`.
 */
import { HttpStatus } from '../../lib/http-status.ts';
import { isLanguageCode, LANGUAGE_CODE_HINT } from '../../lib/languages.ts';
import { parseBBox } from '../../lib/packs/area.ts';
import type { ReverseQuery, SearchQuery } from '../../lib/search/query.ts';
import { KINDS, type Kind } from '../../lib/search/schema.ts';
import { HttpError } from '../context.ts';

/** The longest `q`, in characters. */
export const MAX_QUERY_CHARS = 200;
/** The most results one answer holds. */
export const MAX_LIMIT = 50;
const SEARCH_LIMIT = 10;
const REVERSE_LIMIT = 1;
/** Reverse geocoding's default and largest radius, km. */
const REVERSE_RADIUS_KM = 1;
const MAX_RADIUS_KM = 10;
const M_PER_KM = 1000;
/** Kinds reverse geocoding answers with unless `kind` says otherwise. */
const REVERSE_KINDS: readonly Kind[] = ['address', 'street'];

type Query = Record<string, string | string[] | undefined>;

const bad = (message: string) => new HttpError(HttpStatus.BadRequest, message);

/** The one value of parameter `name` (a 400 when it is given twice). */
function one(q: Query, name: string): string | undefined {
  const v = q[name];
  if (Array.isArray(v)) throw bad(`${name}: given ${v.length} times, expected once`);
  return v;
}

/** A number of `name` in [min, max] (whole when `integer`), or `fallback` when absent. */
function numberParam(q: Query, name: string, o: { min: number; max: number; integer?: boolean; fallback: number; what: string }): number {
  const v = one(q, name);
  if (v === undefined) return o.fallback;
  const n = Number(v);
  if (v.trim() === '' || !Number.isFinite(n) || n < o.min || n > o.max || (o.integer && !Number.isInteger(n))) throw bad(`${name}: expected ${o.what} (got ${JSON.stringify(v)})`);
  return n;
}

/** A latitude or longitude parameter (required). */
function degrees(q: Query, name: 'lat' | 'lon'): number {
  const v = one(q, name);
  if (v === undefined) throw bad(`${name}: required (${name === 'lat' ? 'latitude' : 'longitude'} in degrees)`);
  const max = name === 'lat' ? 90 : 180;
  return numberParam(q, name, { min: -max, max, fallback: NaN, what: `a ${name === 'lat' ? 'latitude' : 'longitude'} in degrees, -${max} to ${max}` });
}

/** `kind=a,b`, each one of KINDS. */
function kindsParam(q: Query, fallback: readonly Kind[] | undefined): readonly Kind[] | undefined {
  const v = one(q, 'kind');
  if (v === undefined) return fallback;
  const kinds = v.split(',').map((k) => k.trim());
  for (const k of kinds) if (!(KINDS as readonly string[]).includes(k)) throw bad(`kind: expected a comma-separated list of ${KINDS.join(', ')} (got ${JSON.stringify(k)})`);
  return [...new Set(kinds)] as Kind[];
}

/** `lang=xx`: the language of the names answered. */
export function langParam(q: Query): string | undefined {
  const v = one(q, 'lang');
  if (v === undefined || v === '') return undefined;
  if (!isLanguageCode(v)) throw bad(`lang: ${JSON.stringify(v)} is not ${LANGUAGE_CODE_HINT}`);
  return v;
}

/** `near=lon,lat`, or Photon's `lat` and `lon`. */
function nearParam(q: Query): { lon: number; lat: number } | undefined {
  const v = one(q, 'near');
  if (v === undefined) {
    if (q.lat === undefined && q.lon === undefined) return undefined;
    return { lon: degrees(q, 'lon'), lat: degrees(q, 'lat') };
  }
  const parts = v.split(',').map((p) => (p.trim() === '' ? NaN : Number(p)));
  const [lon, lat] = parts;
  if (parts.length !== 2 || !Number.isFinite(lon) || !Number.isFinite(lat) || Math.abs(lon) > 180 || Math.abs(lat) > 90) {
    throw bad(`near: expected lon,lat in degrees (got ${JSON.stringify(v)})`);
  }
  return { lon, lat };
}

/** The search a GET /search asks for. */
export function searchParams(q: Query): SearchQuery {
  const text = one(q, 'q');
  if (text === undefined || text.trim() === '') throw bad('q: required (the text to search for)');
  if ([...text].length > MAX_QUERY_CHARS) throw bad(`q: longer than ${MAX_QUERY_CHARS} characters (${[...text].length})`);
  const bbox = one(q, 'bbox');
  let box;
  if (bbox !== undefined) {
    try {
      box = parseBBox(bbox, 'bbox');
    } catch (e) {
      throw bad((e as Error).message);
    }
  }
  return {
    q: text,
    limit: numberParam(q, 'limit', { min: 1, max: MAX_LIMIT, integer: true, fallback: SEARCH_LIMIT, what: `a whole number 1–${MAX_LIMIT}` }),
    kinds: kindsParam(q, undefined),
    bbox: box,
    near: nearParam(q),
  };
}

/** The lookup a GET /reverse asks for. */
export function reverseParams(q: Query): ReverseQuery {
  return {
    lat: degrees(q, 'lat'),
    lon: degrees(q, 'lon'),
    radiusM: numberParam(q, 'radius', { min: Number.MIN_VALUE, max: MAX_RADIUS_KM, fallback: REVERSE_RADIUS_KM, what: `a radius in km, above 0 and at most ${MAX_RADIUS_KM}` }) * M_PER_KM,
    limit: numberParam(q, 'limit', { min: 1, max: MAX_LIMIT, integer: true, fallback: REVERSE_LIMIT, what: `a whole number 1–${MAX_LIMIT}` }),
    kinds: kindsParam(q, REVERSE_KINDS)!,
  };
}
