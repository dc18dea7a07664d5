/**
 * From classified OSM objects to the index's entries: every object gets its point and box (GEOS,
 * pipeline/search/geometry.ts) and its settlements (pipeline/search/settlements.ts); the ways of a street
 * are grouped by name and settlement into one street entry, with the point and box of the ways together;
 * an admin area linked with its place node becomes that node's extent. The build runs this over the
 * whole extract; `tilebake update` over the changed objects with the unchanged ways of their streets.
 */
import type { SearchEntry } from '../../lib/search/schema.ts';
import { nameKey } from '../../lib/search/text.ts';
import type { StreetWay } from '../../lib/search/write.ts';
import type { BBox } from '../../lib/tile-math.ts';
import { streetImportance, type Classified, type SettlementRole } from './classify.ts';
import type { GeoJsonGeometry, GeometryWork, Located } from './geometry.ts';
import type { OsmObject } from './objects.ts';
import { Settlements, settlementsFingerprint, type Location, type SettlementRecord } from './settlements.ts';

/** An object and what the index makes of it. */
export interface SourceObject {
  o: OsmObject;
  c: Classified;
}

/** A street entry and its ways. */
export interface StreetEntry {
  entry: SearchEntry;
  ways: StreetWay[];
}

/** What `makeEntries` makes. */
export interface Entries {
  entries: SearchEntry[];
  streets: StreetEntry[];
  /** The settlements' fingerprint (settlements.ts). */
  settlements: string;
}

/** The lines of a way's geometry (a polygon's rings). */
export function linesOf(g: GeoJsonGeometry): [number, number][][] {
  const c = g.coordinates as unknown;
  switch (g.type) {
    case 'LineString':
      return [c as [number, number][]];
    case 'MultiLineString':
    case 'Polygon':
      return c as [number, number][][];
    case 'MultiPolygon':
      return (c as [number, number][][][]).flat();
    default:
      return [];
  }
}

/** The key of the street entry of the ways named `name` in settlement `settlement` ('' for none): two spellings are two streets. */
export function streetKey(settlement: string, name: string): string {
  return `street:${settlement}:${name.normalize('NFC').trim()}`;
}

const inBox = (b: BBox | undefined, p: { lon: number; lat: number }) => !b || (p.lon >= b[0] && p.lon <= b[2] && p.lat >= b[1] && p.lat <= b[3]);

/** Settlement roles from the largest: a place is located only in larger ones (a city has no district, a country no city). */
const ROLE_RANK: Readonly<Record<string, number>> = { district: 1, city: 2, country: 3 };

/** An entry's fields from its object's classification, point and location. */
function entryOf(s: SourceObject, at: Located, found: Location): SearchEntry {
  const { c, o } = s;
  const rank = ROLE_RANK[c.role ?? ''] ?? 0;
  const loc: Location = {
    ...(rank < ROLE_RANK.district ? { district: found.district, districtKey: found.districtKey } : {}),
    ...(rank <= ROLE_RANK.city ? { city: found.city, cityKey: found.cityKey } : {}),
    ...(rank < ROLE_RANK.country ? { country: found.country, countryKey: found.countryKey, countrycode: found.countrycode } : {}),
  };
  // An address's own city and suburb tags come first; the settlement found is kept as the key when it is the same one.
  const city = c.city ?? loc.city;
  const district = c.district ?? loc.district;
  return {
    key: o.key,
    kind: c.kind,
    type: c.type,
    osmType: o.osmType,
    osmId: o.osmId,
    osmKey: c.osmKey,
    osmValue: c.osmValue,
    name: c.name,
    names: c.names,
    otherNames: c.otherNames,
    housenumber: c.housenumber,
    street: c.street,
    postcode: c.postcode,
    district,
    city,
    country: loc.country,
    countrycode: c.countrycode ?? loc.countrycode,
    cityKey: city !== undefined && nameKey(city) === nameKey(loc.city ?? '') ? loc.cityKey : undefined,
    countryKey: loc.countryKey,
    lon: at.lon,
    lat: at.lat,
    bbox: o.shape === 'point' ? undefined : at.bbox,
    importance: c.importance,
  };
}

/** The streets an index already holds (an update's): the unchanged ways of each street entry, by key. */
export interface StoredStreets {
  /** Street entries to make again besides those the objects' ways fall in (their ways changed). */
  keys: Iterable<string>;
  waysOf(key: string): StreetWay[];
}

/**
 * The entries of `objects`, located among `settlements` (every settlement of the extract, role set);
 * with `stored`, each street is made of the objects' ways and its stored ones. Entries whose point lies
 * outside `bbox` are left out.
 */
export function makeEntries(work: GeometryWork, input: { objects: readonly SourceObject[]; settlements: readonly SourceObject[]; stored?: StoredStreets; bbox?: BBox }): Entries {
  // One ref per OSM element; a settlement that is also indexed is one record.
  const refs = new Map<string, number>();
  const all: SourceObject[] = [];
  for (const s of [...input.settlements, ...input.objects]) {
    if (refs.has(s.o.key)) continue;
    refs.set(s.o.key, all.length);
    all.push(s);
  }
  // A way of a street is located by its middle node (the street's own point is GEOS's, of all its ways):
  // only the other ways and areas go through GEOS one by one.
  const alone = (s: SourceObject) => s.o.shape === 'line' && s.c.kind === 'street';
  work.load('feat', function* () {
    for (let ref = 0; ref < all.length; ref++) if (all[ref].o.shape !== 'point' && !alone(all[ref])) yield { ref, geometry: all[ref].o.geometryJson };
  }());
  const placed = work.featurePoints();
  const at = (ref: number): Located | undefined => {
    const o = all[ref].o;
    if (o.shape === 'point') {
      const [lon, lat] = o.geometry.coordinates as [number, number];
      return { lon, lat };
    }
    if (!alone(all[ref])) return placed.get(ref);
    const nodes = linesOf(o.geometry).flat();
    const [lon, lat] = nodes[Math.floor(nodes.length / 2)] ?? [];
    return lon === undefined ? undefined : { lon, lat };
  };
  const settlementRefs = input.settlements.map((s) => refs.get(s.o.key)!).filter((ref) => at(ref) !== undefined);
  work.load('area', function* () {
    for (const ref of settlementRefs) if (all[ref].o.shape === 'area') yield { ref, geometry: all[ref].o.geometryJson };
  }());
  work.loadPoints('point', function* () {
    for (let ref = 0; ref < all.length; ref++) {
      const p = at(ref);
      if (p) yield { ref, lon: p.lon, lat: p.lat };
    }
  }());
  const containing = new Map<number, number[]>();
  for (const [p, a] of work.containing('point')) containing.set(p, [...(containing.get(p) ?? []), a]);
  const records: SettlementRecord[] = settlementRefs.map((ref) => ({
    ref, key: all[ref].o.key, c: all[ref].c as Classified & { role: SettlementRole }, area: all[ref].o.shape === 'area', at: at(ref)!, geometryJson: all[ref].o.geometryJson,
  }));
  const settlements = new Settlements(records, (ref) => containing.get(ref) ?? []);

  const entries: SearchEntry[] = [];
  const byKey = new Map<string, SearchEntry>();
  const ways = new Map<string, StreetWay[]>();
  for (const s of input.objects) {
    const ref = refs.get(s.o.key)!;
    const p = at(ref);
    if (!p) continue;
    if (s.c.kind === 'street') {
      const loc = settlements.locate(ref, p, containing.get(ref) ?? []);
      const way: StreetWay = { way: s.o.osmId, name: s.c.name ?? Object.values(s.c.names)[0], names: s.c.names, otherNames: s.c.otherNames, highway: s.c.highway!, settlement: loc.cityKey ?? '', lines: linesOf(s.o.geometry) };
      const key = streetKey(way.settlement, way.name);
      ways.set(key, [...(ways.get(key) ?? []), way]);
      continue;
    }
    // A linked area is its node's extent, not an entry of its own.
    if (settlements.links.has(ref)) continue;
    const e = entryOf(s, p, settlements.locate(ref, p, containing.get(ref) ?? []));
    const area = settlements.areaOfNode(ref);
    if (area) {
      e.bbox = area.at.bbox;
      e.importance = Math.max(e.importance, area.c.importance);
    }
    entries.push(e);
    byKey.set(e.key, e);
  }
  if (input.stored) {
    for (const key of new Set([...ways.keys(), ...input.stored.keys])) ways.set(key, [...(ways.get(key) ?? []), ...input.stored.waysOf(key)]);
  }
  const streets = streetEntries(work, ways, settlements, all, refs);
  const keep = (e: SearchEntry) => inBox(input.bbox, e);
  const fingerprint = settlementsFingerprint(input.settlements.map((s) => ({ key: s.o.key, c: s.c, geometryJson: s.o.geometryJson })));
  return { entries: entries.filter(keep), streets: streets.filter((s) => keep(s.entry)), settlements: fingerprint };
}

/** One street entry per group of ways: its point and box from the ways together, located there. */
function streetEntries(work: GeometryWork, groups: Map<string, StreetWay[]>, settlements: Settlements, all: readonly SourceObject[], refs: ReadonlyMap<string, number>): StreetEntry[] {
  // Each street's ways in id order, whichever way they came (the same point from a build and an update).
  const keys = [...groups.keys()].filter((k) => groups.get(k)!.length > 0).sort();
  for (const k of keys) groups.get(k)!.sort((a, b) => a.way - b.way);
  work.load('way', function* () {
    for (let gid = 0; gid < keys.length; gid++) {
      for (const w of groups.get(keys[gid])!) for (const line of w.lines) if (line.length >= 2) yield { ref: w.way, gid, geometry: { type: 'LineString', coordinates: line } };
    }
  }());
  const points = work.groupPoints();
  work.loadPoints('gpoint', function* () {
    for (const [gid, p] of points) yield { ref: gid, lon: p.lon, lat: p.lat };
  }());
  const containing = new Map<number, number[]>();
  for (const [p, a] of work.containing('gpoint')) containing.set(p, [...(containing.get(p) ?? []), a]);
  const out: StreetEntry[] = [];
  keys.forEach((key, gid) => {
    const p = points.get(gid);
    if (!p) return;
    const ways = groups.get(key)!;
    const first = ways[0];
    const loc = settlements.locate(undefined, p, containing.get(gid) ?? []);
    // The city is the settlement the ways were grouped in (the point of several ways may lie just outside it).
    const settlement = first.settlement === '' ? undefined : all[refs.get(first.settlement) ?? -1];
    const names: Record<string, string> = {};
    for (const w of ways) for (const [code, v] of Object.entries(w.names)) names[code] ??= v;
    const main = ways.reduce((m, w) => (streetImportance(w.highway) > streetImportance(m.highway) ? w : m), first);
    out.push({
      entry: {
        key, kind: 'street', type: 'street', osmType: 'W', osmId: first.way, osmKey: 'highway', osmValue: main.highway,
        name: first.name, names, otherNames: [...new Set(ways.flatMap((w) => w.otherNames))],
        district: loc.district, city: settlement?.c.name ?? (first.settlement === '' ? undefined : loc.city), cityKey: first.settlement || undefined,
        country: loc.country, countryKey: loc.countryKey, countrycode: loc.countrycode,
        lon: p.lon, lat: p.lat, bbox: p.bbox, importance: streetImportance(main.highway),
      },
      ways,
    });
  });
  return out;
}
