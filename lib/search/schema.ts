/**
 * The search index file (`data/<tileset>.search.sqlite`): one SQLite database per tileset, written by
 * the build (pipeline/search/), read by the server (lib/search/query.ts) and by apps from a pack. Any
 * SQLite ≥ 3.27 with FTS5 and R*Tree reads it (external-content FTS5, no extension of ours).
 *
 *     meta            format, languages, the settlements' fingerprint (what an update may keep)
 *     entry           one row per place, street (per name and settlement), POI and address; `id` orders
 *                     the rows by importance (FTS5 answers in id order: the first rows are the most important)
 *     entry_fts       FTS5 over entry.match_names (every name, every language) and match_context (street,
 *                     house number, postcode, district, city), unicode61 with diacritics folded, prefixes 2–4
 *     name_fts        the same over match_names alone (most searches are of names: their word lists are
 *                     short, where the city of every address of a town makes `entry_fts`'s long)
 *     name_key        each folded full name of an entry → the entry (exact names, looked up without FTS5)
 *     entry_point     R*Tree of the entries' points (bbox filter, `near`, reverse geocoding of addresses)
 *     street_way      each way of a street entry: its lines (JSON [lon, lat] positions, for the distance
 *                     to the street) and what the street is grouped by (updates regroup it)
 *     street_box      R*Tree of the street ways' boxes (id = the way's id)
 *     typo, typo_term the one-deletion neighbourhood of every indexed word of ≥ 4 letters (one typo)
 *
 * An entry of a GIS tileset (pipeline/search/gis.ts) is no OSM element: its `osm_type` is '' and its
 * `osm_id` the feature's FID in GDAL, its `osm_value` the layer of the tiles it is in (as the class a POI
 * is of: same-named POIs of one layer are answered once).
 */
import Database from 'better-sqlite3';
import { UserError } from '../errors.ts';

/** The format tag in `meta`. */
export const SEARCH_FORMAT = 'tilebake-search/1';

/** What an entry is, the `kind` filter's values. */
export const KINDS = ['place', 'street', 'poi', 'address'] as const;
export type Kind = (typeof KINDS)[number];

/** OSM's element types as Photon names them. */
export type OsmType = 'N' | 'W' | 'R';

/** One entry as the build makes it. */
export interface SearchEntry {
  /** Stable identity across versions: the OSM object (`n123`, `w4`, `r5`), `street:<settlement>:<name>`, or a GIS feature's `<layer>:<fid>`. */
  key: string;
  kind: Kind;
  /** Photon's `type`: country, state, county, city, district, locality, street, house, other. */
  type: string;
  /** The OSM element (absent for a GIS feature: `layer` and `fid` say which it is). */
  osmType?: OsmType;
  osmId?: number;
  /** A GIS feature's layer in the tiles (a style's `source-layer`) and its FID in GDAL. */
  layer?: string;
  fid?: number;
  /** The OSM tag the entry is of (`place=village`, `amenity=cafe`). */
  osmKey?: string;
  osmValue?: string;
  /** `name`, and `name:xx` by language code. */
  name?: string;
  names: Record<string, string>;
  /** Other names it is found by (alt_name, old_name, …), not shown. */
  otherNames: string[];
  housenumber?: string;
  street?: string;
  postcode?: string;
  district?: string;
  city?: string;
  country?: string;
  countrycode?: string;
  /** Keys of the entries the city and country are (their names in other languages). */
  cityKey?: string;
  countryKey?: string;
  lon: number;
  lat: number;
  /** [west, south, east, north] of a way's or area's geometry; absent for a point. */
  bbox?: [number, number, number, number];
  /** 0–1: place rank, population, POI class. */
  importance: number;
}

/** An entry as stored (with its id). */
export interface StoredEntry extends SearchEntry {
  id: number;
}

/** The R*Tree tables (cuts rebuild them in id order: an R*Tree's pages depend on the order of its inserts). */
export const RTREES = {
  entry_point: 'CREATE VIRTUAL TABLE entry_point USING rtree(id, west, east, south, north)',
  street_box: 'CREATE VIRTUAL TABLE street_box USING rtree(id, west, east, south, north)',
} as const;

const SCHEMA = `
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE entry (
  id INTEGER PRIMARY KEY,
  key TEXT NOT NULL UNIQUE,
  kind TEXT NOT NULL,
  type TEXT NOT NULL,
  osm_type TEXT NOT NULL,
  osm_id INTEGER NOT NULL,
  osm_key TEXT,
  osm_value TEXT,
  name TEXT,
  names TEXT,
  other_names TEXT,
  housenumber TEXT,
  street TEXT,
  postcode TEXT,
  district TEXT,
  city TEXT,
  country TEXT,
  countrycode TEXT,
  city_key TEXT,
  country_key TEXT,
  lon REAL NOT NULL,
  lat REAL NOT NULL,
  west REAL,
  south REAL,
  east REAL,
  north REAL,
  importance REAL NOT NULL,
  folded TEXT NOT NULL,
  match_names TEXT NOT NULL,
  match_context TEXT NOT NULL
);
CREATE VIRTUAL TABLE entry_fts USING fts5(match_names, match_context, content='entry', content_rowid='id', tokenize='unicode61 remove_diacritics 2', prefix='2 3 4');
CREATE VIRTUAL TABLE name_fts USING fts5(match_names, content='entry', content_rowid='id', tokenize='unicode61 remove_diacritics 2', prefix='2 3 4');
CREATE TABLE name_key (key TEXT NOT NULL, id INTEGER NOT NULL, PRIMARY KEY (key, id)) WITHOUT ROWID;
CREATE INDEX name_key_id ON name_key (id);
${RTREES.entry_point};
CREATE TABLE street_way (way INTEGER PRIMARY KEY, entry INTEGER NOT NULL, name TEXT NOT NULL, names TEXT NOT NULL, other_names TEXT NOT NULL, highway TEXT NOT NULL, settlement TEXT NOT NULL, lines TEXT NOT NULL);
CREATE INDEX street_way_entry ON street_way (entry);
${RTREES.street_box};
CREATE TABLE typo (del TEXT NOT NULL, term TEXT NOT NULL, PRIMARY KEY (del, term)) WITHOUT ROWID;
CREATE TABLE typo_term (term TEXT PRIMARY KEY) WITHOUT ROWID;
`;

/** Create an empty index at `path` (a new file) and return it open for writing. */
export function createIndex(path: string, meta: Record<string, string>): Database.Database {
  const db = new Database(path);
  try {
    db.pragma('journal_mode = OFF');
    db.pragma('synchronous = OFF');
    db.exec(SCHEMA);
    const put = db.prepare('INSERT INTO meta (key, value) VALUES (?, ?)');
    for (const [k, v] of Object.entries({ format: SEARCH_FORMAT, ...meta })) put.run(k, v);
    return db;
  } catch (e) {
    db.close();
    throw e;
  }
}

/** Open an existing index; a UserError naming it when it is not one (`where` names it). */
export function openIndex(path: string, opts: { readonly: boolean; where?: string }): Database.Database {
  const where = opts.where ?? path;
  let db: Database.Database;
  try {
    db = new Database(path, { readonly: opts.readonly, fileMustExist: true });
  } catch (e) {
    throw new UserError(`${where}: cannot open the search index (${(e as Error).message})`, { cause: e });
  }
  try {
    const format = (db.prepare("SELECT value FROM meta WHERE key = 'format'").get() as { value: string } | undefined)?.value;
    if (format !== SEARCH_FORMAT) throw new UserError(`${where}: meta.format is ${JSON.stringify(format ?? null)}, expected "${SEARCH_FORMAT}" (a tilebake search index)`);
    if (!opts.readonly) {
      db.pragma('journal_mode = OFF');
      db.pragma('synchronous = OFF');
    }
    return db;
  } catch (e) {
    db.close();
    if (e instanceof UserError) throw e;
    throw new UserError(`${where}: not a tilebake search index (${(e as Error).message})`, { cause: e });
  }
}

/** A value of the index's `meta` table. */
export function metaValue(db: Database.Database, key: string): string | undefined {
  return (db.prepare('SELECT value FROM meta WHERE key = ?').get(key) as { value: string } | undefined)?.value;
}

/** Set a value of the index's `meta` table. */
export function setMeta(db: Database.Database, key: string, value: string): void {
  db.prepare('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(key, value);
}

/** The columns of an entry read back (the FTS5 texts and folded names stay in the file). */
export const ENTRY_COLUMNS = 'id, key, kind, type, osm_type, osm_id, osm_key, osm_value, name, names, other_names, housenumber, street, postcode, district, city, country, countrycode, city_key, country_key, lon, lat, west, south, east, north, importance';

/**
 * An `entry` row as a raw statement returns it (better-sqlite3's `.raw()`: ENTRY_COLUMNS' values in
 * order, an array instead of an object with a property per column, which costs a few µs more per row).
 */
export type EntryValues = [
  id: number,
  key: string,
  kind: Kind,
  type: string,
  /** '' for a GIS feature. */
  osm_type: OsmType | '',
  osm_id: number,
  osm_key: string | null,
  osm_value: string | null,
  name: string | null,
  names: string | null,
  other_names: string | null,
  housenumber: string | null,
  street: string | null,
  postcode: string | null,
  district: string | null,
  city: string | null,
  country: string | null,
  countrycode: string | null,
  city_key: string | null,
  country_key: string | null,
  lon: number,
  lat: number,
  west: number | null,
  south: number | null,
  east: number | null,
  north: number | null,
  importance: number,
];

const opt = <T>(v: T | null): T | undefined => (v === null ? undefined : v);

/** A stored entry from its row's values (EntryValues). */
export function entryOfValues(v: EntryValues): StoredEntry {
  const [id, key, kind, type, osmType, osmId, osmKey, osmValue, name, names, otherNames, housenumber, street, postcode, district, city, country, countrycode, cityKey, countryKey, lon, lat, west, south, east, north, importance] = v;
  return {
    id,
    key,
    kind,
    type,
    ...(osmType === '' ? { layer: osmValue ?? '', fid: osmId } : { osmType, osmId }),
    osmKey: opt(osmKey),
    osmValue: opt(osmValue),
    name: opt(name),
    names: names ? (JSON.parse(names) as Record<string, string>) : {},
    otherNames: otherNames ? (JSON.parse(otherNames) as string[]) : [],
    housenumber: opt(housenumber),
    street: opt(street),
    postcode: opt(postcode),
    district: opt(district),
    city: opt(city),
    country: opt(country),
    countrycode: opt(countrycode),
    cityKey: opt(cityKey),
    countryKey: opt(countryKey),
    lon,
    lat,
    bbox: west === null || south === null || east === null || north === null ? undefined : [west, south, east, north],
    importance,
  };
}
