/**
 * Writing the search index (lib/search/schema.ts): entries with their FTS5 text, exact-name keys and
 * point; the ways and segments of streets; the typo neighbourhood of the vocabulary. The build writes a
 * new index through it, `tilebake update` changes a copy of the previous one, packs write their cut.
 */
import type Database from 'better-sqlite3';
import { produceAtomic } from '../atomic.ts';
import { createIndex, type SearchEntry } from './schema.ts';
import { deletions, fold, nameKey, TYPO_TERM_MIN_LENGTH } from './text.ts';

/** Entry ids: importance bucket × ID_SPAN + a counter, so that id order is importance order (most important first). */
const BUCKETS = 1000;
const ID_SPAN = 2 ** 32;
/** Separator of the names in `match_names` (not a word character: FTS5 splits there). */
const NAME_SEPARATOR = ' ; ';

/** A way of a street as the index keeps it. */
export interface StreetWay {
  way: number;
  name: string;
  names: Record<string, string>;
  otherNames: string[];
  highway: string;
  /** What the street is grouped by besides its name: the key of its settlement ('' for none). */
  settlement: string;
  /** The way's lines, [lon, lat] positions. */
  lines: [number, number][][];
}

/** The importance bucket of an entry (0: the most important). */
export function bucketOf(importance: number): number {
  return Math.round((1 - Math.min(1, Math.max(0, importance))) * BUCKETS);
}

/** Every name an entry is found by (shown or not), each once; an address by "street housenumber". */
export function matchNames(e: SearchEntry): string[] {
  const label = e.kind === 'address' ? [[e.street, e.housenumber].filter(Boolean).join(' ')] : [];
  return [...new Set([e.name, ...Object.values(e.names), ...e.otherNames, ...label].filter((n): n is string => !!n && n.trim() !== ''))];
}

/** The index's writer over an open database (in one transaction per call of the caller's choosing). */
export class IndexWriter {
  private readonly stmt;

  /**
   * `ftsLater`: the FTS5 tables are not written entry by entry but rebuilt from the entries by `buildFts`
   * (a new index: one pass over the content is cheaper than an insert per entry).
   */
  constructor(readonly db: Database.Database, private readonly ftsLater = false) {
    this.stmt = {
      maxId: db.prepare('SELECT max(id) AS id FROM entry WHERE id >= ? AND id < ?').pluck(),
      insert: db.prepare(`INSERT INTO entry (id, key, kind, type, osm_type, osm_id, osm_key, osm_value, name, names, other_names, housenumber, street, postcode, district, city, country, countrycode,
        city_key, country_key, lon, lat, west, south, east, north, importance, folded, match_names, match_context)
        VALUES (@id, @key, @kind, @type, @osm_type, @osm_id, @osm_key, @osm_value, @name, @names, @other_names, @housenumber, @street, @postcode, @district, @city, @country, @countrycode,
        @city_key, @country_key, @lon, @lat, @west, @south, @east, @north, @importance, @folded, @match_names, @match_context)`),
      fts: db.prepare('INSERT INTO entry_fts (rowid, match_names, match_context) VALUES (?, ?, ?)'),
      ftsDelete: db.prepare("INSERT INTO entry_fts (entry_fts, rowid, match_names, match_context) VALUES ('delete', ?, ?, ?)"),
      nameFts: db.prepare('INSERT INTO name_fts (rowid, match_names) VALUES (?, ?)'),
      nameFtsDelete: db.prepare("INSERT INTO name_fts (name_fts, rowid, match_names) VALUES ('delete', ?, ?)"),
      byKey: db.prepare('SELECT id, match_names, match_context FROM entry WHERE key = ?'),
      deleteEntry: db.prepare('DELETE FROM entry WHERE id = ?'),
      nameKey: db.prepare('INSERT OR IGNORE INTO name_key (key, id) VALUES (?, ?)'),
      deleteNameKeys: db.prepare('DELETE FROM name_key WHERE id = ?'),
      point: db.prepare('INSERT INTO entry_point (id, west, east, south, north) VALUES (?, ?, ?, ?, ?)'),
      deletePoint: db.prepare('DELETE FROM entry_point WHERE id = ?'),
      box: db.prepare('INSERT INTO street_box (id, west, east, south, north) VALUES (?, ?, ?, ?, ?)'),
      way: db.prepare('INSERT INTO street_way (way, entry, name, names, other_names, highway, settlement, lines) VALUES (?, ?, ?, ?, ?, ?, ?, ?)'),
      wayRow: db.prepare('SELECT * FROM street_way WHERE way = ?'),
      waysOf: db.prepare('SELECT * FROM street_way WHERE entry = ? ORDER BY way'),
      deleteBox: db.prepare('DELETE FROM street_box WHERE id = ?'),
      deleteWay: db.prepare('DELETE FROM street_way WHERE way = ?'),
      entryById: db.prepare('SELECT key FROM entry WHERE id = ?').pluck(),
    };
  }

  /** A free id in the entry's importance bucket (`keep` when it is one, e.g. the previous version's id of the same entry). */
  private idFor(e: SearchEntry, keep?: number): number {
    const bucket = bucketOf(e.importance);
    const start = bucket * ID_SPAN;
    if (keep !== undefined && keep >= start && keep < start + ID_SPAN && this.db.prepare('SELECT 1 FROM entry WHERE id = ?').get(keep) === undefined) return keep;
    const max = this.stmt.maxId.get(start, start + ID_SPAN) as number | null;
    return max === null ? start + 1 : max + 1;
  }

  /** Insert `e` (an entry with the same key is replaced); returns its id. */
  put(e: SearchEntry, keep?: number): number {
    this.remove(e.key);
    const id = this.idFor(e, keep);
    const names = matchNames(e);
    const context = [e.street, e.housenumber, e.postcode, e.district, e.city].filter(Boolean).join(NAME_SEPARATOR);
    const keys = [...new Set(names.map(nameKey).filter((k) => k !== ''))];
    const [west, south, east, north] = e.bbox ?? [null, null, null, null];
    const matchText = names.map((n) => n.normalize('NFC')).join(NAME_SEPARATOR);
    this.stmt.insert.run({
      id, key: e.key, kind: e.kind, type: e.type, osm_type: e.osmType ?? '', osm_id: e.osmId ?? e.fid ?? 0, osm_key: e.osmKey ?? null, osm_value: e.osmValue ?? e.layer ?? null,
      name: e.name ?? null, names: Object.keys(e.names).length ? JSON.stringify(e.names) : null, other_names: e.otherNames.length ? JSON.stringify(e.otherNames) : null,
      housenumber: e.housenumber ?? null, street: e.street ?? null, postcode: e.postcode ?? null, district: e.district ?? null, city: e.city ?? null,
      country: e.country ?? null, countrycode: e.countrycode ?? null, city_key: e.cityKey ?? null, country_key: e.countryKey ?? null,
      lon: e.lon, lat: e.lat, west, south, east, north, importance: e.importance,
      folded: keys.join('\n'), match_names: matchText, match_context: context.normalize('NFC'),
    });
    if (!this.ftsLater) {
      this.stmt.fts.run(id, matchText, context.normalize('NFC'));
      this.stmt.nameFts.run(id, matchText);
    }
    for (const k of keys) this.stmt.nameKey.run(k, id);
    this.stmt.point.run(id, e.lon, e.lon, e.lat, e.lat);
    return id;
  }

  /** Remove the entry with `key` (and its FTS5 text, names and point); false when there is none. */
  remove(key: string): boolean {
    const row = this.stmt.byKey.get(key) as { id: number; match_names: string; match_context: string } | undefined;
    if (!row) return false;
    if (!this.ftsLater) {
      this.stmt.ftsDelete.run(row.id, row.match_names, row.match_context);
      this.stmt.nameFtsDelete.run(row.id, row.match_names);
    }
    this.stmt.deleteNameKeys.run(row.id);
    this.stmt.deletePoint.run(row.id);
    this.stmt.deleteEntry.run(row.id);
    return true;
  }

  /** The key of entry `id`. */
  keyOf(id: number): string | undefined {
    return this.stmt.entryById.get(id) as string | undefined;
  }

  /** Record way `w` of the street entry `entry`, with its box. */
  addStreetWay(entry: number, w: StreetWay): void {
    const points = w.lines.flat();
    if (points.length === 0) return;
    const lons = points.map((p) => p[0]);
    const lats = points.map((p) => p[1]);
    this.stmt.box.run(w.way, Math.min(...lons), Math.max(...lons), Math.min(...lats), Math.max(...lats));
    this.stmt.way.run(w.way, entry, w.name, JSON.stringify(w.names), JSON.stringify(w.otherNames), w.highway, w.settlement, JSON.stringify(w.lines));
  }

  /** The stored way `way`, or undefined. */
  streetWay(way: number): (StreetWay & { entry: number }) | undefined {
    const r = this.stmt.wayRow.get(way) as StreetWayRow | undefined;
    return r && streetWayOf(r);
  }

  /** The ways of street entry `entry`. */
  streetWaysOf(entry: number): (StreetWay & { entry: number })[] {
    return (this.stmt.waysOf.all(entry) as StreetWayRow[]).map(streetWayOf);
  }

  /** Forget way `way` (its street entry stays: the caller rebuilds or removes it). */
  removeStreetWay(way: number): void {
    this.stmt.deleteBox.run(way);
    this.stmt.deleteWay.run(way);
  }

  /**
   * Bring the typo tables in line with the FTS5 vocabulary: each word of ≥ TYPO_TERM_MIN_LENGTH letters
   * (no digits) with its one-deletion neighbours; words no longer indexed are dropped.
   */
  syncTypos(): { added: number; removed: number } {
    const db = this.db;
    db.exec("CREATE VIRTUAL TABLE IF NOT EXISTS temp.search_vocab USING fts5vocab(main, 'entry_fts', 'row')");
    const added = db.prepare(`SELECT term FROM temp.search_vocab WHERE length(term) >= ? AND term NOT GLOB '*[0-9]*' AND term NOT IN (SELECT term FROM typo_term) ORDER BY term`).pluck().all(TYPO_TERM_MIN_LENGTH) as string[];
    const removed = db.prepare('SELECT term FROM typo_term WHERE term NOT IN (SELECT term FROM temp.search_vocab) ORDER BY term').pluck().all() as string[];
    const addTerm = db.prepare('INSERT INTO typo_term (term) VALUES (?)');
    const addDel = db.prepare('INSERT OR IGNORE INTO typo (del, term) VALUES (?, ?)');
    const dropTerm = db.prepare('DELETE FROM typo_term WHERE term = ?');
    const dropDels = db.prepare('DELETE FROM typo WHERE term = ?');
    for (const t of removed) {
      dropDels.run(t);
      dropTerm.run(t);
    }
    for (const t of added) {
      addTerm.run(t);
      // The vocabulary is folded by unicode61; fold() is the same fold (a no-op here, kept for safety).
      const term = fold(t);
      addDel.run(term, t);
      for (const d of deletions(term)) addDel.run(d, t);
    }
    db.exec('DROP TABLE temp.search_vocab');
    return { added: added.length, removed: removed.length };
  }

  /** Build the FTS5 tables from the entries (a writer made with `ftsLater`, once they are all put). */
  buildFts(): void {
    this.db.exec("INSERT INTO entry_fts (entry_fts) VALUES ('rebuild')");
    this.db.exec("INSERT INTO name_fts (name_fts) VALUES ('rebuild')");
  }

  /** Merge FTS5's segments (and apply deletions) and refresh the planner's statistics. */
  optimize(): void {
    this.db.exec("INSERT INTO entry_fts (entry_fts) VALUES ('optimize')");
    this.db.exec("INSERT INTO name_fts (name_fts) VALUES ('optimize')");
    this.db.exec('ANALYZE');
  }
}

/** A `street_way` row. */
export interface StreetWayRow {
  way: number;
  entry: number;
  name: string;
  names: string;
  other_names: string;
  highway: string;
  settlement: string;
  lines: string;
}

/** A stored way from its row. */
export function streetWayOf(r: StreetWayRow): StreetWay & { entry: number } {
  return {
    way: r.way, entry: r.entry, name: r.name, names: JSON.parse(r.names) as Record<string, string>, otherNames: JSON.parse(r.other_names) as string[],
    highway: r.highway, settlement: r.settlement, lines: JSON.parse(r.lines) as [number, number][][],
  };
}

/**
 * Write a new index file at `output` (it replaces `output` only once complete, lib/atomic.ts): `fill`
 * puts the entries in one transaction with their FTS5 text (built from them once all are in) and the typo
 * tables, then FTS5's segments are merged and the file vacuumed.
 */
export async function writeIndexFile(output: string, meta: Record<string, string>, fill: (writer: IndexWriter) => void): Promise<void> {
  await produceAtomic(output, async (tmp) => {
    const db = createIndex(tmp, meta);
    try {
      const writer = new IndexWriter(db, true);
      db.transaction(() => {
        fill(writer);
        writer.buildFts();
        writer.syncTypos();
      })();
      writer.optimize();
      db.exec('VACUUM');
    } finally {
      db.close();
    }
  });
}
