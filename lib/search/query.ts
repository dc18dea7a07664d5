/**
 * Answering searches from an index file (lib/search/schema.ts), read-only: the server's GET /search and
 * /reverse, and the same queries on a pack's index.
 *
 * A search gathers candidates in stages, each bounded: entries whose whole name is the text typed (the
 * exact-name table); entries whose names hold every word (name_fts, the last word as a prefix); when no
 * name holds them all, entries whose names or address hold them (entry_fts: `Landstrasse Vaduz`), and
 * the words of ≥ 5 letters with one typo (the typo table's neighbours, checked by edit distance); with
 * `near`, the words again within a window around the point. FTS5 answers in id order, which is importance order, so each
 * stage's first rows are its most important ones. The candidates are then ordered by lib/search/rank.ts.
 * The user's words reach SQLite only as bound parameters, each word an FTS5 string (lib/search/text.ts).
 */
import type Database from 'better-sqlite3';
import { haversine, type LatLon } from '../geo-distance.ts';
import type { BBox } from '../tile-math.ts';
import { boxAround, distanceToSegment } from './distance.ts';
import { ALL_WORDS_BASE, matchOf, scoreOf, TYPO_FACTOR, type TypedWords } from './rank.ts';
import { ENTRY_COLUMNS, entryOfValues, openIndex, type EntryValues, type Kind, type StoredEntry } from './schema.ts';
import { deletions, fold, ftsQuery, TYPO_MIN_LENGTH, withinOneEdit, words } from './text.ts';

/** A search. */
export interface SearchQuery {
  q: string;
  limit: number;
  kinds?: readonly Kind[];
  bbox?: BBox;
  near?: LatLon;
}

/** A reverse lookup: the nearest entries of `kinds` within `radiusM` of the point. */
export interface ReverseQuery extends LatLon {
  radiusM: number;
  limit: number;
  kinds: readonly Kind[];
}

/** One answer: the entry, its score (search) and its distance in metres (reverse, or search with `near`). */
export interface Hit {
  entry: StoredEntry;
  score: number;
  distance?: number;
}

/** Candidates gathered per stage: at least this many, or three times the limit. */
const MIN_CANDIDATES = 30;
const CANDIDATES_PER_RESULT = 3;
/** Half-width of the window searched around a `near` point, metres. */
const NEAR_WINDOW_M = 5000;
/** What a name spelt exactly as typed (case and accents) adds to its score. */
const EXACT_SPELLING = 0.02;
/** Bytes of an index mapped into memory at most, and the page cache's size (KiB). */
const MMAP_BYTES = 1024 * 1024 * 1024;
const CACHE_KIB = 64 * 1024;
/** Reverse geocoding asks within this radius first (metres), then within radii this many times larger. */
const REVERSE_FIRST_M = 64;
const REVERSE_GROWTH = 4;
/** Typo corrections tried per word at most. */
const MAX_CORRECTIONS = 64;

/** A candidate as its query returns it (raw: CANDIDATE_COLUMNS' values in order). */
type CandidateRow = [id: number, importance: number, folded: string, name: string | null, lon: number, lat: number];
const CANDIDATE_COLUMNS = 'e.id, e.importance, e.folded, e.name, e.lon, e.lat';

interface Candidate {
  id: number;
  importance: number;
  folded: string[];
  name: string | null;
  lon: number;
  lat: number;
  typo: boolean;
}

/** Rows and filters of a candidate query: `?`s for the kinds and the box. */
function filters(q: Pick<SearchQuery, 'kinds'>, box: boolean): string {
  const kinds = q.kinds?.length ? ` AND e.kind IN (${q.kinds.map(() => '?').join(', ')})` : '';
  return `${kinds}${box ? ' AND e.lon >= ? AND e.lon <= ? AND e.lat >= ? AND e.lat <= ?' : ''}`;
}

/** A search index file opened read-only. */
export class SearchIndex {
  private readonly statements = new Map<string, Database.Statement>();
  private readonly stmt;

  private constructor(private readonly db: Database.Database) {
    this.stmt = {
      rows: db.prepare(`SELECT ${ENTRY_COLUMNS} FROM entry WHERE id IN (SELECT value FROM json_each(?))`).raw(),
      namesOf: db.prepare('SELECT name, names FROM entry WHERE key = ?'),
      corrections: db.prepare('SELECT DISTINCT term FROM typo WHERE del IN (SELECT value FROM json_each(?)) ORDER BY term'),
      ways: db.prepare('SELECT w.entry, w.lines FROM street_box b JOIN street_way w ON w.way = b.id WHERE b.west <= ? AND b.east >= ? AND b.south <= ? AND b.north >= ?'),
      count: db.prepare('SELECT count(*) FROM entry').pluck(),
    };
  }

  /** Open the index file at `path` (`where` names it in errors). */
  static open(path: string, where?: string): SearchIndex {
    const db = openIndex(path, { readonly: true, where });
    // Index files are never written once published (a new version is a new file): the shared lock is
    // kept (no lock and change check per statement) and pages are read through a memory map.
    db.pragma('locking_mode = EXCLUSIVE');
    db.pragma(`mmap_size = ${MMAP_BYTES}`);
    db.pragma(`cache_size = -${CACHE_KIB}`);
    return new SearchIndex(db);
  }

  /** Entries in the index. */
  get entries(): number {
    return this.stmt.count.get() as number;
  }

  /** The statement of `key`, prepared once; `raw`: its rows are arrays of values (cheaper than objects). */
  private prepared(key: string, sql: () => string, raw = false): Database.Statement {
    let s = this.statements.get(key);
    if (!s) {
      s = this.db.prepare(sql()).raw(raw);
      this.statements.set(key, s);
    }
    return s;
  }

  /** Candidates whose names (`fts` name_fts) or names and address (entry_fts) match the FTS5 query `match`. */
  private matching(fts: 'name_fts' | 'entry_fts', match: string, q: SearchQuery, box: BBox | undefined, limit: number): CandidateRow[] {
    const key = `${fts}:${q.kinds?.length ?? 0}:${box ? 1 : 0}`;
    const s = this.prepared(key, () => `SELECT ${CANDIDATE_COLUMNS} FROM ${fts} f JOIN entry e ON e.id = f.rowid WHERE ${fts} MATCH ?${filters(q, !!box)} ORDER BY f.rowid LIMIT ?`, true);
    return s.all(match, ...(q.kinds ?? []), ...(box ? [box[0], box[2], box[1], box[3]] : []), limit) as CandidateRow[];
  }

  /** Candidates one of whose whole names is `name` (folded). */
  private exact(name: string, q: SearchQuery, limit: number): CandidateRow[] {
    const key = `exact:${q.kinds?.length ?? 0}:${q.bbox ? 1 : 0}`;
    const s = this.prepared(key, () => `SELECT ${CANDIDATE_COLUMNS} FROM name_key k JOIN entry e ON e.id = k.id WHERE k.key = ?${filters(q, !!q.bbox)} ORDER BY k.id LIMIT ?`, true);
    const box = q.bbox;
    return s.all(name, ...(q.kinds ?? []), ...(box ? [box[0], box[2], box[1], box[3]] : []), limit) as CandidateRow[];
  }

  /** The indexed words within one edit of `word` (folded, ≥ TYPO_MIN_LENGTH letters), itself excluded. */
  private corrections(word: string): string[] {
    const keys = [word, ...deletions(word)];
    const terms = this.stmt.corrections.pluck().all(JSON.stringify(keys)) as string[];
    return terms.filter((t) => t !== word && withinOneEdit(word, t)).slice(0, MAX_CORRECTIONS);
  }

  /** The best entries for `q`, best first (see the module comment). */
  search(q: SearchQuery): Hit[] {
    const raw = words(q.q);
    if (raw.length === 0) return [];
    const folded = raw.map(fold);
    const prefix = !/\s$/u.test(q.q);
    const want = Math.max(MIN_CANDIDATES, q.limit * CANDIDATES_PER_RESULT);
    const found = new Map<number, Candidate>();
    const add = (rows: CandidateRow[], typo: boolean) => {
      for (const [id, importance, folded, name, lon, lat] of rows) if (!found.has(id)) found.set(id, { id, importance, folded: folded.split('\n'), name, lon, lat, typo });
    };
    add(this.exact(folded.join(' '), q, want), false);
    add(this.matching('name_fts', ftsQuery(raw, { prefix }), q, q.bbox, want), false);
    const typed: TypedWords = { words: folded, prefix };
    // Some name holds every word typed (the last one maybe begun): what was typed is spelt as a name is.
    const named = [...found.values()].some((c) => matchOf(typed, c).score >= ALL_WORDS_BASE);
    // Else the words may be a name and an address (`Landstrasse Vaduz`): names and address parts.
    const fts = named ? 'name_fts' : 'entry_fts';
    if (!named) add(this.matching(fts, ftsQuery(raw, { prefix }), q, q.bbox, want), false);
    if (q.near) {
      const w = boxAround(q.near, NEAR_WINDOW_M);
      const box: BBox = q.bbox ? [Math.max(w[0], q.bbox[0]), Math.max(w[1], q.bbox[1]), Math.min(w[2], q.bbox[2]), Math.min(w[3], q.bbox[3])] : w;
      if (box[0] <= box[2] && box[1] <= box[3]) add(this.matching(fts, ftsQuery(raw, { prefix }), q, box, want), false);
    }
    // Nothing spelt so: one typo in the words of five letters or more.
    let alternatives: (string[] | undefined)[] | undefined;
    if (!named && folded.some((w) => [...w].length >= TYPO_MIN_LENGTH)) {
      alternatives = folded.map((w) => ([...w].length >= TYPO_MIN_LENGTH ? this.corrections(w) : undefined));
      if (alternatives.some((a) => a && a.length > 0)) add(this.matching('entry_fts', ftsQuery(folded, { prefix, alternatives }), q, q.bbox, want), true);
    }
    const withTypos: TypedWords = { words: folded, prefix, alternatives };
    const spelt = q.q.normalize('NFC').trim();
    const scored = [...found.values()].map((c) => {
      const m = c.typo ? matchOf(withTypos, c).score * TYPO_FACTOR : matchOf(typed, c).score;
      const distance = q.near ? haversine(q.near, c) : undefined;
      // Of names that fold alike (Stötz, Stotz), the one spelt as typed first.
      const exact = c.name !== null && c.name.normalize('NFC') === spelt ? EXACT_SPELLING : 0;
      return { c, score: scoreOf(m, c.importance, distance) + exact, distance };
    });
    scored.sort((a, b) => b.score - a.score || b.c.importance - a.c.importance || a.c.id - b.c.id);
    // POIs of the same name, class and city once (both stops of a bus line, the nodes of one shop), as Photon dedupes.
    const hits: Hit[] = [];
    const seen = new Set<string>();
    // The rows read as needed (one statement per batch): the limit's worth first, then as many as the duplicates skipped.
    let rows = new Map<number, StoredEntry>();
    let read = 0;
    for (let i = 0; i < scored.length && hits.length < q.limit; i++) {
      const s = scored[i];
      if (i === read) {
        read = i + q.limit - hits.length;
        rows = this.entriesById(scored.slice(i, read).map((x) => x.c.id));
      }
      const entry = rows.get(s.c.id)!;
      const same = entry.kind === 'poi' ? `${entry.name ?? ''}\n${entry.osmValue ?? ''}\n${entry.city ?? ''}` : undefined;
      if (same !== undefined && seen.has(same)) continue;
      if (same !== undefined) seen.add(same);
      hits.push({ entry, score: s.score, distance: s.distance });
    }
    return hits;
  }

  /**
   * The nearest entries of `r.kinds` within `r.radiusM` metres of the point, nearest first; streets by the
   * distance to their lines. Asked within growing radii (REVERSE_FIRST_M, ×REVERSE_GROWTH, … up to
   * `r.radiusM`): once `r.limit` entries lie within a radius, nothing farther can displace them, so a tap
   * on a street reads the few ways and addresses around it, not every one within a kilometre.
   */
  reverse(r: ReverseQuery): Hit[] {
    let nearest: [number, number][] = [];
    for (let radius = Math.min(REVERSE_FIRST_M, r.radiusM); ; radius = Math.min(radius * REVERSE_GROWTH, r.radiusM)) {
      nearest = this.nearestWithin(r, radius);
      if (nearest.length >= r.limit || radius >= r.radiusM) break;
    }
    const rows = this.entriesById(nearest.map(([id]) => id));
    return nearest.map(([id, d]) => ({ entry: rows.get(id)!, score: 1, distance: d }));
  }

  /** The `r.limit` nearest [id, metres] within `radiusM` of the point, nearest first (then by id). */
  private nearestWithin(r: ReverseQuery, radiusM: number): [number, number][] {
    const [w, s, e, n] = boxAround(r, radiusM);
    const best = new Map<number, number>();
    const keep = (id: number, d: number) => {
      if (d <= radiusM && d < (best.get(id) ?? Infinity)) best.set(id, d);
    };
    if (r.kinds.includes('street')) {
      for (const way of this.stmt.ways.all(e, w, n, s) as { entry: number; lines: string }[]) {
        for (const line of JSON.parse(way.lines) as [number, number][][]) for (let i = 1; i < line.length; i++) keep(way.entry, distanceToSegment(r, line[i - 1], line[i]));
      }
    }
    const others = r.kinds.filter((k) => k !== 'street');
    if (others.length) {
      const sql = this.prepared(`points:${others.length}`, () => `SELECT e.id, e.lon, e.lat FROM entry_point p JOIN entry e ON e.id = p.id WHERE p.west >= ? AND p.east <= ? AND p.south >= ? AND p.north <= ?${filters({ kinds: others }, false)}`);
      for (const p of sql.all(w, e, s, n, ...others) as { id: number; lon: number; lat: number }[]) keep(p.id, haversine(r, p));
    }
    return [...best].sort((a, b) => a[1] - b[1] || a[0] - b[0]).slice(0, r.limit);
  }

  /** Entries by id (one statement). */
  entriesById(ids: readonly number[]): Map<number, StoredEntry> {
    const out = new Map<number, StoredEntry>();
    if (ids.length === 0) return out;
    for (const v of this.stmt.rows.all(JSON.stringify(ids)) as EntryValues[]) out.set(v[0], entryOfValues(v));
    return out;
  }

  /** The names of the entry with `key` (a city's, a country's), for answers in another language. */
  namesOf(key: string): { name?: string; names: Record<string, string> } | undefined {
    const r = this.stmt.namesOf.get(key) as { name: string | null; names: string | null } | undefined;
    return r && { name: r.name ?? undefined, names: r.names ? (JSON.parse(r.names) as Record<string, string>) : {} };
  }

  close(): void {
    this.db.close();
  }
}
