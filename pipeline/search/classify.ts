/**
 * What an OSM object is to the search index, from its tags alone: a place (and whether it names a
 * settlement others are located in), a way of a street, a POI or an address; its names in the
 * configured languages; its Photon `type` and `osm_key`/`osm_value`; its importance (0–1: place rank,
 * population, POI class). Geometry (points, containment) is pipeline/search/geometry.ts's.
 */
import type { Kind } from '../../lib/search/schema.ts';

export type Tags = Record<string, string>;

/** Which settlement an object names, for locating others in it: its city, district or country. */
export type SettlementRole = 'city' | 'district' | 'country';

/** What the index makes of one object. */
export interface Classified {
  kind: Kind;
  type: string;
  osmKey?: string;
  osmValue?: string;
  name?: string;
  names: Record<string, string>;
  otherNames: string[];
  importance: number;
  /** Places and admin areas others are located in. */
  role?: SettlementRole;
  /** An admin area (boundary=administrative): linked with the place node of its name inside it. */
  admin?: boolean;
  /** A way of a street: its highway class (the street entry groups the ways of one name and settlement). */
  highway?: string;
  housenumber?: string;
  street?: string;
  postcode?: string;
  /** addr:city, addr:suburb and a country code from the tags (the settlements found around it come second). */
  city?: string;
  district?: string;
  countrycode?: string;
}

/** Tags whose values are other names of an object (`;`-separated lists). */
const OTHER_NAME_KEYS = ['alt_name', 'old_name', 'official_name', 'short_name', 'loc_name', 'int_name', 'nat_name', 'reg_name'];

/** place=* values: [importance, Photon type, settlement role]. */
const PLACES: Readonly<Record<string, readonly [number, string, SettlementRole?]>> = {
  country: [1, 'country', 'country'],
  state: [0.9, 'state'],
  region: [0.86, 'state'],
  province: [0.86, 'state'],
  county: [0.8, 'county'],
  municipality: [0.74, 'city', 'city'],
  city: [0.85, 'city', 'city'],
  town: [0.75, 'city', 'city'],
  village: [0.65, 'city', 'city'],
  hamlet: [0.56, 'locality', 'city'],
  borough: [0.62, 'district', 'district'],
  suburb: [0.6, 'district', 'district'],
  quarter: [0.56, 'district', 'district'],
  neighbourhood: [0.52, 'district', 'district'],
  city_block: [0.42, 'district'],
  isolated_dwelling: [0.42, 'locality'],
  farm: [0.4, 'locality'],
  locality: [0.42, 'locality'],
  island: [0.55, 'other'],
  islet: [0.45, 'other'],
  archipelago: [0.6, 'other'],
  square: [0.44, 'other'],
};

/** admin_level → [importance, Photon type, settlement role]. */
function adminLevel(level: number): readonly [number, string, SettlementRole?] {
  if (level <= 2) return [1, 'country', 'country'];
  if (level <= 4) return [0.9, 'state'];
  if (level <= 6) return [0.8, 'county'];
  if (level <= 8) return [0.74, 'city', 'city'];
  if (level <= 10) return [0.55, 'district', 'district'];
  return [0.45, 'locality'];
}

/** highway=* values of ways that are not streets (stops, platforms, service areas, indoor corridors, roads not built or gone). */
const NOT_STREETS = new Set(['bus_stop', 'platform', 'elevator', 'services', 'rest_area', 'emergency_access_point', 'street_lamp', 'traffic_signals', 'crossing', 'stop', 'give_way', 'milestone', 'motorway_junction', 'turning_circle', 'speed_camera', 'corridor', 'proposed', 'construction', 'abandoned', 'razed', 'disused']);
/** Streets by class, the others (service, track, paths) below these. */
const STREET_IMPORTANCE: Readonly<Record<string, number>> = {
  motorway: 0.46, trunk: 0.45, primary: 0.44, secondary: 0.42, tertiary: 0.4, unclassified: 0.38, residential: 0.38, living_street: 0.38, pedestrian: 0.37, road: 0.36,
};
/** Service roads and tracks, then paths (footway, cycleway, steps, …): a road of a name comes before a path of it. */
const MINOR_ROADS = new Set(['service', 'track', 'busway', 'raceway']);
const MINOR_ROAD = 0.34;
const PATH = 0.31;

/** POI keys in the order their tag names an object's class. */
const POI_KEYS = ['amenity', 'shop', 'tourism', 'leisure', 'historic', 'office', 'craft', 'healthcare', 'emergency', 'aeroway', 'railway', 'public_transport', 'aerialway', 'highway', 'natural',
  'waterway', 'water', 'man_made', 'sport', 'club', 'military', 'boundary', 'mountain_pass', 'landuse', 'building', 'bridge', 'tunnel'];
/** POIs above the base: `key=value` or `key` → importance (at most POI_MAX, below every settlement). */
const POI_IMPORTANCE: Readonly<Record<string, number>> = {
  'aeroway=aerodrome': 0.5, 'railway=station': 0.47, 'public_transport=station': 0.45, 'railway=halt': 0.42, 'amenity=university': 0.44, 'amenity=hospital': 0.43,
  'amenity=townhall': 0.43, 'tourism=attraction': 0.42, 'tourism=museum': 0.42, 'historic=castle': 0.42, 'natural=peak': 0.4, 'natural=volcano': 0.42, 'waterway=river': 0.42,
  'boundary=national_park': 0.44, 'boundary=protected_area': 0.4, 'leisure=park': 0.38, 'natural': 0.34, 'tourism': 0.36, 'amenity': 0.34, 'historic': 0.36,
  landuse: 0.3, building: 0.28, 'highway=bus_stop': 0.32,
};
const POI_BASE = 0.32;
const POI_MAX = 0.5;
/** A POI with a Wikipedia or Wikidata article is a little more important. */
const ARTICLE_BONUS = 0.04;
/** An address without a name. */
const ADDRESS_IMPORTANCE = 0.2;
/** A capital, and at most this much for population (log scale). */
const CAPITAL_BONUS = 0.03;
const POPULATION_MAX_BONUS = 0.1;
const POPULATION_SCALE = 70;

/**
 * The Photon type and importance of an entry known by its kind alone (a GIS feature: no tags rank it): a
 * place ranks as a village, a street as a residential one, a POI at the POIs' base, an address as one.
 */
export function plainKind(kind: Kind): { type: string; importance: number } {
  switch (kind) {
    case 'place':
      return { type: 'locality', importance: PLACES.village[0] };
    case 'street':
      return { type: 'street', importance: streetImportance('residential') };
    case 'poi':
      return { type: 'other', importance: POI_BASE };
    case 'address':
      return { type: 'house', importance: ADDRESS_IMPORTANCE };
  }
}

/** A street's importance by its class (highway=*). */
export function streetImportance(highway: string): number {
  const h = highway.replace(/_link$/, '');
  return STREET_IMPORTANCE[h] ?? (MINOR_ROADS.has(h) ? MINOR_ROAD : PATH);
}

const orders = new WeakMap<readonly string[], Map<string, number>>();
/** Each language's place in `languages` (made once per list). */
function languageOrder(languages: readonly string[]): Map<string, number> {
  let m = orders.get(languages);
  if (!m) {
    m = new Map();
    for (const [i, code] of languages.entries()) if (!m.has(code)) m.set(code, i);
    orders.set(languages, m);
  }
  return m;
}

/** The names of an object: `name`, `name:xx` of the configured languages, and the other names. */
export function namesOf(tags: Tags, languages: readonly string[]): { name?: string; names: Record<string, string>; otherNames: string[] } {
  // The object's own name:xx tags looked up among the languages (a few tags, not 80 look-ups), kept in the languages' order.
  const order = languageOrder(languages);
  const found: [number, string, string][] = [];
  for (const k in tags) {
    if (!k.startsWith('name:')) continue;
    const i = order.get(k.slice(5));
    const v = i === undefined ? '' : tags[k].trim();
    if (v) found.push([i!, k.slice(5), v]);
  }
  found.sort((a, b) => a[0] - b[0]);
  const names: Record<string, string> = {};
  for (const [, code, v] of found) names[code] = v;
  const otherNames = [...new Set(OTHER_NAME_KEYS.flatMap((k) => (tags[k] ?? '').split(';')).map((s) => s.trim()).filter(Boolean))];
  const name = tags.name?.trim() || undefined;
  return { name, names, otherNames };
}

const clamp = (v: number) => Math.min(1, Math.max(0, v));

/** A settlement's importance: its rank, a capital, its population. */
function placeImportance(base: number, tags: Tags): number {
  const pop = Number((tags.population ?? '').replace(/[\s,.']/g, ''));
  const popBonus = pop > 0 ? Math.min(POPULATION_MAX_BONUS, Math.log10(pop) / POPULATION_SCALE) : 0;
  const capital = tags.capital === 'yes' || tags.capital === '2' ? CAPITAL_BONUS : 0;
  return clamp(base + popBonus + capital);
}

/** A POI's importance from its class. */
function poiImportance(key: string, value: string, tags: Tags): number {
  const base = POI_IMPORTANCE[`${key}=${value}`] ?? POI_IMPORTANCE[key] ?? POI_BASE;
  return Math.min(POI_MAX, base + (tags.wikipedia || tags.wikidata ? ARTICLE_BONUS : 0));
}

/** The address parts of the tags. */
function addressOf(tags: Tags): Pick<Classified, 'housenumber' | 'street' | 'postcode' | 'city' | 'district' | 'countrycode'> {
  const countrycode = (tags['addr:country'] ?? '').trim().toUpperCase();
  return {
    housenumber: tags['addr:housenumber']?.trim() || undefined,
    street: (tags['addr:street'] ?? tags['addr:place'])?.trim() || undefined,
    postcode: (tags['addr:postcode'] ?? tags.postal_code)?.trim() || undefined,
    city: tags['addr:city']?.trim() || undefined,
    district: tags['addr:suburb']?.trim() || undefined,
    countrycode: /^[A-Z]{2}$/.test(countrycode) ? countrycode : undefined,
  };
}

/** A country code from a country's tags (ISO 3166-1 alpha-2). */
export function countryCodeOf(tags: Tags): string | undefined {
  const v = (tags['ISO3166-1:alpha2'] ?? tags['ISO3166-1'] ?? tags.country_code ?? '').trim().toUpperCase();
  return /^[A-Z]{2}$/.test(v) ? v : undefined;
}

/**
 * What the index makes of an object with `tags` (`geometry`: what osmium exported it as), or undefined
 * when it is not indexed (no name and no address, or nothing a user searches for).
 */
export function classify(tags: Tags, geometry: 'point' | 'line' | 'area', languages: readonly string[]): Classified | undefined {
  const n = namesOf(tags, languages);
  const named = n.name !== undefined || Object.keys(n.names).length > 0;
  const addr = addressOf(tags);
  const place = tags.place;
  if (named && place && PLACES[place]) {
    const [base, type, role] = PLACES[place];
    return { kind: 'place', type, osmKey: 'place', osmValue: place, ...n, importance: placeImportance(base, tags), role, postcode: addr.postcode };
  }
  if (named && tags.boundary === 'administrative' && geometry === 'area') {
    const level = Number(tags.admin_level);
    if (Number.isInteger(level) && level > 0) {
      const [base, type, role] = adminLevel(level);
      return { kind: 'place', type, osmKey: 'boundary', osmValue: 'administrative', ...n, importance: placeImportance(base, tags), role, admin: true, countrycode: role === 'country' ? countryCodeOf(tags) : undefined };
    }
  }
  const highway = tags.highway;
  if (named && highway && geometry !== 'point' && !NOT_STREETS.has(highway)) {
    return { kind: 'street', type: 'street', osmKey: 'highway', osmValue: highway, ...n, importance: streetImportance(highway), highway };
  }
  const key = POI_KEYS.find((k) => tags[k] !== undefined && tags[k] !== 'no');
  if (named && key) {
    return { kind: 'poi', type: 'other', osmKey: key, osmValue: tags[key], ...n, importance: poiImportance(key, tags[key], tags), ...addr };
  }
  if (addr.housenumber && addr.street) {
    return { kind: 'address', type: 'house', osmKey: key ?? 'place', osmValue: key ? tags[key] : 'house', names: {}, otherNames: [], importance: ADDRESS_IMPORTANCE, ...addr };
  }
  return undefined;
}

/** How far from a settlement's place node (one without an area) others are located in it, metres, by place=*. */
export const SETTLEMENT_RADIUS_M: Readonly<Record<string, number>> = { city: 10_000, town: 6_000, village: 3_000, hamlet: 1_500, municipality: 6_000, borough: 3_000, suburb: 2_000, quarter: 1_500, neighbourhood: 1_000 };
