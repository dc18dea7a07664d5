/**
 * A search index for a pack (`tilebake pack --search`): the entries of a build's index whose point lies
 * in the pack's box, as an index of their own that an app opens with its SQLite; its delta since an
 * older version's cut (the entries added or changed, the keys removed), and the newer cut made from an
 * older one and a delta (`tilebake pack-apply`). Every cut is written the same way (rows, then FTS5
 * rebuilt, the typo tables, statistics, VACUUM), so the cut an older pack and a delta make is the
 * newer version's cut byte for byte.
 */
import { createHash } from 'node:crypto';
import { rmSync } from 'node:fs';
import type Database from 'better-sqlite3';
import { tempPathFor } from '../atomic.ts';
import { UserError } from '../errors.ts';
import type { BBox } from '../tile-math.ts';
import { createIndex, metaValue, openIndex, RTREES } from './schema.ts';
import { IndexWriter } from './write.ts';

/** `meta.delta`: the key of a delta (its value: the build it applies to). */
const DELTA_OF = 'delta_of';
/** The rows of one table copied for a set of entry ids (`ids` is a temp table of them). */
const COPIES: readonly [string, string][] = [
  ['entry', 'SELECT e.* FROM src.entry e JOIN temp.ids i ON i.id = e.id ORDER BY e.id'],
  ['name_key', 'SELECT k.* FROM src.name_key k JOIN temp.ids i ON i.id = k.id ORDER BY k.key, k.id'],
  ['entry_point', 'SELECT p.* FROM src.entry_point p JOIN temp.ids i ON i.id = p.id ORDER BY p.id'],
  ['street_way', 'SELECT w.* FROM src.street_way w JOIN temp.ids i ON i.id = w.entry ORDER BY w.way'],
  ['street_box', 'SELECT b.* FROM src.street_box b JOIN src.street_way w ON w.way = b.id JOIN temp.ids i ON i.id = w.entry ORDER BY b.id'],
];

/** Copy the entries of `src` (a file) whose ids `select` (SQL over `src.entry e`, bound `params`) returns into `db`. */
function copyEntries(db: Database.Database, src: string, select: string, params: unknown[]): void {
  // Attached and detached outside a transaction (SQLite refuses to detach a database a transaction holds).
  db.prepare('ATTACH DATABASE ? AS src').run(src);
  try {
    db.transaction(() => {
      db.exec('CREATE TEMP TABLE ids (id INTEGER PRIMARY KEY)');
      db.prepare(`INSERT INTO temp.ids ${select}`).run(...params);
      for (const [table, sql] of COPIES) db.exec(`INSERT INTO main.${table} ${sql}`);
      db.exec('DROP TABLE temp.ids');
    })();
  } finally {
    db.exec('DETACH DATABASE src');
  }
}

/**
 * Finish a cut made in `db` and write it to `out`: the R*Trees in id order, FTS5 from the entries, the
 * typo tables, optimized, statistics, then `VACUUM INTO` a new file (its pages and header independent of
 * how many transactions made the rows).
 */
function finishCut(db: Database.Database, out: string): void {
  db.transaction(() => {
    for (const [name, ddl] of Object.entries(RTREES)) {
      db.exec(`CREATE TEMP TABLE rows AS SELECT * FROM main.${name}; DROP TABLE main.${name}; ${ddl}; INSERT INTO main.${name} SELECT * FROM temp.rows ORDER BY id; DROP TABLE temp.rows`);
    }
  })();
  db.exec("INSERT INTO entry_fts (entry_fts) VALUES ('rebuild'); INSERT INTO name_fts (name_fts) VALUES ('rebuild')");
  const w = new IndexWriter(db);
  db.transaction(() => w.syncTypos())();
  w.optimize();
  db.prepare('VACUUM INTO ?').run(out);
}

/** Make a cut into the new file `out` through a work file beside it: `fill` writes its rows. */
function makeCut(out: string, meta: Record<string, string>, fill: (db: Database.Database) => void): number {
  const work = tempPathFor(out);
  const db = createIndex(work, meta);
  try {
    fill(db);
    finishCut(db, out);
    return db.prepare('SELECT count(*) FROM entry').pluck().get() as number;
  } finally {
    db.close();
    rmSync(work, { force: true });
  }
}

/** The ids of `src.entry e` with their point in `box`. */
const IN_BOX = 'SELECT e.id FROM src.entry e WHERE e.lon >= ? AND e.lon <= ? AND e.lat >= ? AND e.lat <= ?';
const boxParams = (b: BBox) => [b[0], b[2], b[1], b[3]];

/** The meta an index carries into its cuts (not its own format tag). */
function metaOf(path: string): Record<string, string> {
  const db = openIndex(path, { readonly: true });
  try {
    return Object.fromEntries((db.prepare("SELECT key, value FROM meta WHERE key NOT IN ('format', ?)").all(DELTA_OF) as { key: string; value: string }[]).map((r) => [r.key, r.value]));
  } finally {
    db.close();
  }
}

/** Write the cut of index `source` to `box` into the new file `out`; returns its entries. */
export function cutIndex(source: string, out: string, box: BBox): number {
  return makeCut(out, metaOf(source), (db) => copyEntries(db, source, IN_BOX, boxParams(box)));
}

/** Each entry of `path` in `box` by key: a hash of its row and its ways' rows (what a delta compares). */
function entryHashes(path: string, box: BBox): Map<string, string> {
  const db = openIndex(path, { readonly: true });
  try {
    const ways = db.prepare('SELECT * FROM street_way WHERE entry = ? ORDER BY way');
    const out = new Map<string, string>();
    for (const r of db.prepare('SELECT * FROM entry WHERE lon >= ? AND lon <= ? AND lat >= ? AND lat <= ?').iterate(...boxParams(box)) as Iterable<Record<string, unknown>>) {
      out.set(r.key as string, createHash('sha256').update(JSON.stringify([r, ways.all(r.id)])).digest('base64'));
    }
    return out;
  } finally {
    db.close();
  }
}

/** What a delta holds. */
export interface SearchDelta {
  /** Entries added or changed. */
  changed: number;
  /** Keys of the entries removed. */
  removed: number;
}

/**
 * Write into the new file `out` the delta from the cut of `older` (the index of build `since`) to the
 * cut of `newer`, both to `box`: the newer cut's entries that differ (rows, ids or ways), and the keys
 * the older cut has that the newer one has not.
 */
export function writeDelta(older: string, newer: string, box: BBox, since: string, out: string): SearchDelta {
  const [before, after] = [entryHashes(older, box), entryHashes(newer, box)];
  const changed = [...after].filter(([k, h]) => before.get(k) !== h).map(([k]) => k).sort();
  const removed = [...before.keys()].filter((k) => !after.has(k)).sort();
  const db = createIndex(out, { ...metaOf(newer), [DELTA_OF]: since });
  try {
    db.exec('CREATE TABLE removed (key TEXT PRIMARY KEY) WITHOUT ROWID');
    const put = db.prepare('INSERT INTO removed (key) VALUES (?)');
    db.transaction(() => {
      for (const k of removed) put.run(k);
    })();
    copyEntries(db, newer, 'SELECT e.id FROM src.entry e WHERE e.key IN (SELECT value FROM json_each(?))', [JSON.stringify(changed)]);
    db.exec('VACUUM');
  } finally {
    db.close();
  }
  return { changed: changed.length, removed: removed.length };
}

/** The build a delta file applies to, or undefined when `path` is a whole index. */
export function deltaOf(path: string): string | undefined {
  const db = openIndex(path, { readonly: true });
  try {
    return metaValue(db, DELTA_OF);
  } finally {
    db.close();
  }
}

/** Write into the new file `out` the cut that the cut `older` and the delta `delta` make (see writeDelta). */
export function applySearchDelta(older: string, delta: string, out: string): number {
  if (deltaOf(older) !== undefined) throw new UserError(`${older}: a delta itself; apply deltas to a whole search index`);
  if (deltaOf(delta) === undefined) throw new UserError(`${delta}: not a search index delta (no meta.${DELTA_OF})`);
  return makeCut(out, metaOf(delta), (db) => {
    db.prepare('ATTACH DATABASE ? AS d').run(delta);
    const gone = JSON.stringify([...(db.prepare('SELECT key FROM d.removed UNION SELECT key FROM d.entry').pluck().all() as string[])]);
    db.exec('DETACH DATABASE d');
    copyEntries(db, older, 'SELECT e.id FROM src.entry e WHERE e.key NOT IN (SELECT value FROM json_each(?))', [gone]);
    copyEntries(db, delta, 'SELECT e.id FROM src.entry e', []);
  });
}

