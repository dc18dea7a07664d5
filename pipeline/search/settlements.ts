/**
 * The settlements an entry is located in (its city, district and country), as Nominatim and Photon
 * locate them: the smallest area of each role that contains the entry's point (admin boundaries, place
 * polygons; GEOS found the containment, pipeline/search/geometry.ts), else the nearest place node of
 * that role within its radius (a village mapped as a node only). An admin area and the place node of
 * the same name inside it are one settlement (the node is the entry shown; it gets the area's extent).
 */
import { createHash } from 'node:crypto';
import { haversine } from '../../lib/geo-distance.ts';
import { nameKey } from '../../lib/search/text.ts';
import { SETTLEMENT_RADIUS_M, type Classified, type SettlementRole } from './classify.ts';
import type { Located } from './geometry.ts';

/** A place or admin area others are located in. */
export interface SettlementRecord {
  ref: number;
  key: string;
  c: Classified & { role: SettlementRole };
  area: boolean;
  at: Located;
  /** What the settlement's identity is made of (its geometry as exported), for the fingerprint. */
  geometryJson: string;
}

/** Where an entry is. */
export interface Location {
  city?: string;
  cityKey?: string;
  district?: string;
  districtKey?: string;
  country?: string;
  countryKey?: string;
  countrycode?: string;
}

/** Grid cells of the nearest-node look-up, degrees. */
const CELL_DEG = 0.1;
/** A country node locates everything within this distance (extracts are rarely wider). */
const COUNTRY_RADIUS_M = 2_000_000;

const cellOf = (lon: number, lat: number) => `${Math.floor(lon / CELL_DEG)}:${Math.floor(lat / CELL_DEG)}`;
const areaOf = (b: [number, number, number, number] | undefined) => (b ? (b[2] - b[0]) * (b[3] - b[1]) : Infinity);

/** The settlements of an extract and what locating a point in them needs. */
export class Settlements {
  private readonly byRef = new Map<number, SettlementRecord>();
  /** An area's ref → the ref of the place node it is one settlement with. */
  readonly links = new Map<number, number>();
  /** A linked place node's ref → its area's ref. */
  private readonly linkedArea = new Map<number, number>();
  private readonly grid = new Map<string, SettlementRecord[]>();
  private readonly countries: SettlementRecord[] = [];

  /**
   * `records`: every settlement of the extract; `containing(ref)`: the area refs containing a point
   * (settlement nodes among the points).
   */
  constructor(records: readonly SettlementRecord[], containing: (ref: number) => readonly number[]) {
    for (const r of records) this.byRef.set(r.ref, r);
    for (const r of records) {
      if (r.area) continue;
      if (r.c.role === 'country') this.countries.push(r);
      else {
        const cell = cellOf(r.at.lon, r.at.lat);
        this.grid.set(cell, [...(this.grid.get(cell) ?? []), r]);
      }
      // Linked with the area of the same role and name that contains it (the smallest, if several).
      const own = nameKey(r.c.name ?? '');
      const areas = containing(r.ref).map((a) => this.byRef.get(a)).filter((a): a is SettlementRecord => !!a && a.area && a.c.role === r.c.role && nameKey(a.c.name ?? '') === own && own !== '' && !this.links.has(a.ref));
      areas.sort((a, b) => areaOf(a.at.bbox) - areaOf(b.at.bbox) || a.ref - b.ref);
      if (areas[0]) {
        this.links.set(areas[0].ref, r.ref);
        this.linkedArea.set(r.ref, areas[0].ref);
      }
    }
  }

  /** The settlement record of `ref`. */
  record(ref: number): SettlementRecord | undefined {
    return this.byRef.get(ref);
  }

  /** The area a place node is one settlement with. */
  areaOfNode(ref: number): SettlementRecord | undefined {
    const a = this.linkedArea.get(ref);
    return a === undefined ? undefined : this.byRef.get(a);
  }

  /** The entry that shows settlement `s` (a linked area's node). */
  private shown(s: SettlementRecord): SettlementRecord {
    const node = this.links.get(s.ref);
    return node === undefined ? s : this.byRef.get(node)!;
  }

  /** The nearest settlement node of `role` whose radius reaches `p`. */
  private nearest(role: SettlementRole, p: { lon: number; lat: number }): SettlementRecord | undefined {
    let best: { r: SettlementRecord; ratio: number } | undefined;
    const consider = (r: SettlementRecord, radius: number) => {
      const ratio = haversine(p, r.at) / radius;
      if (ratio <= 1 && (!best || ratio < best.ratio || (ratio === best.ratio && r.ref < best.r.ref))) best = { r, ratio };
    };
    if (role === 'country') {
      for (const r of this.countries) consider(r, COUNTRY_RADIUS_M);
      return best?.r;
    }
    const cx = Math.floor(p.lon / CELL_DEG);
    const cy = Math.floor(p.lat / CELL_DEG);
    for (let dx = -2; dx <= 2; dx++) {
      for (let dy = -1; dy <= 1; dy++) {
        for (const r of this.grid.get(`${cx + dx}:${cy + dy}`) ?? []) {
          // Nodes linked with an area locate by their area only.
          if (r.c.role === role && !this.linkedArea.has(r.ref)) consider(r, SETTLEMENT_RADIUS_M[r.c.osmValue ?? ''] ?? SETTLEMENT_RADIUS_M.village);
        }
      }
    }
    return best?.r;
  }

  /**
   * Where the point `p` (ref `self`, with the area refs `areas` containing it) is; `self` itself (and
   * the area it is linked with) never locates it.
   */
  locate(self: number | undefined, p: { lon: number; lat: number }, areas: readonly number[]): Location {
    const own = self === undefined ? undefined : this.linkedArea.get(self);
    const inside = areas.map((a) => this.byRef.get(a)).filter((a): a is SettlementRecord => !!a && a.ref !== own && a.ref !== self);
    // A settlement is located in a larger one of its role by area only (a village is not in the next village).
    const selfRole = self === undefined ? undefined : this.byRef.get(self)?.c.role;
    const pick = (role: SettlementRole) => {
      const list = inside.filter((a) => a.c.role === role).sort((a, b) => areaOf(a.at.bbox) - areaOf(b.at.bbox) || a.ref - b.ref);
      const found = list[0] ?? (role === selfRole ? undefined : this.nearest(role, p));
      const s = found && this.shown(found);
      return s && s.ref !== self ? s : undefined;
    };
    const city = pick('city');
    const district = pick('district');
    const country = pick('country');
    const countryArea = country && (this.areaOfNode(country.ref) ?? country);
    return {
      city: city?.c.name,
      cityKey: city?.key,
      district: district?.c.name,
      districtKey: district?.key,
      country: country?.c.name,
      countryKey: country?.key,
      countrycode: country?.c.countrycode ?? countryArea?.c.countrycode,
    };
  }
}

/** The fingerprint of a set of settlements: equal when every settlement, its names, tags that rank it and its geometry are. */
export function settlementsFingerprint(records: readonly { key: string; c: Classified; geometryJson: string }[]): string {
  const h = createHash('sha256');
  const lines = records.map((r) => `${r.key}\t${r.c.role}\t${r.c.osmValue ?? ''}\t${r.c.name ?? ''}\t${JSON.stringify(r.c.names)}\t${r.c.importance}\t${r.c.countrycode ?? ''}\t${r.geometryJson}`).sort();
  for (const l of lines) h.update(`${l}\n`);
  return h.digest('hex');
}
