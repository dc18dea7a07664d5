/**
 * `tilebake update`'s search index: the previous index changed by the night's change files, only the
 * objects they touch done again. The touched objects are the changed ones and their parents before and
 * after (pipeline/osm/changed-tiles.ts changedObjects, as for the tiles); their entries are removed, they
 * are read again from the new extract (osmium getid of them and what they reference), placed, located and
 * written back, and the streets whose ways changed are made again from their stored and new ways.
 *
 * Locating needs every settlement: they are read from the new extract (its places and admin boundaries)
 * and compared with the fingerprint the index records. When a settlement changed (a village
 * renamed, a boundary moved), every entry may be located elsewhere: undefined then (build it all).
 */
import { copyFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { produceAtomic } from '../../lib/atomic.ts';
import { logLine, stepsText, timeStep } from '../../lib/progress.ts';
import { metaValue, openIndex } from '../../lib/search/schema.ts';
import { IndexWriter } from '../../lib/search/write.ts';
import { changedObjects, extractObjects } from '../osm/changed-tiles.ts';
import { classifiedObjects, inWorkFolder, writeEntries, type SearchBuildOptions, type SearchBuildResult } from './build.ts';
import { makeEntries, streetKey, type Entries, type SourceObject } from './entries.ts';
import { GeometryWork } from './geometry.ts';
import { exportObjects, MAY_BE_SETTLEMENT } from './objects.ts';
import { settlementsFingerprint } from './settlements.ts';

/** How the new extract came about: `changes` applied to `before`. */
export interface SearchPatch {
  before: string;
  changes: string[];
}

/**
 * Update `previous` (the index of `patch.before`) into `output` for the extract `after`; undefined when
 * the change moves settlements (or nests too deep): build the whole index then.
 */
export function updateSearchIndex(previous: string, after: string, patch: SearchPatch, output: string, opts: SearchBuildOptions): Promise<SearchBuildResult | undefined> {
  const t0 = performance.now();
  return inWorkFolder(opts, async (osmium, pidFile, steps) => {
    const job = { osmium, before: patch.before, after, changes: patch.changes, workDir: opts.workDir, pidFile };
    const touched = await timeStep(steps, 'changed objects', () => changedObjects(job));
    if (!touched) {
      logLine(`${opts.label}: the change's objects nest too deep: indexing everything`);
      return undefined;
    }
    const settlements = await timeStep(steps, 'settlements', async () =>
      (await classifiedObjects(await exportObjects(osmium, after, opts.workDir, 'objects', pidFile), opts.languages, MAY_BE_SETTLEMENT)).filter((s) => s.c.role !== undefined),
    );
    const fingerprint = settlementsFingerprint(settlements.map((s) => ({ key: s.o.key, c: s.c, geometryJson: s.o.geometryJson })));
    const db0 = openIndex(previous, { readonly: true });
    const recorded = metaValue(db0, 'settlements');
    db0.close();
    if (recorded !== fingerprint) {
      logLine(`${opts.label}: the change moves or renames a settlement (a place or an admin boundary): indexing everything`);
      return undefined;
    }
    // The touched objects as the new extract has them (with what they reference), those the index holds.
    const small = await extractObjects(job, 'after', after, touched.inAfter);
    let objects: SourceObject[] = [];
    if (small) objects = await classifiedObjects(await exportObjects(osmium, small, opts.workDir, 'changed', pidFile), opts.languages);
    const keys = new Set([...touched.inBefore, ...touched.inAfter]);
    let content: Entries | undefined;
    let removed = 0;
    await timeStep(steps, 'index', () =>
      produceAtomic(output, async (tmp) => {
        await copyFile(previous, tmp);
        const db = openIndex(tmp, { readonly: false, where: previous });
        try {
          const writer = new IndexWriter(db);
          const ids = new Map<string, number>();
          const idOf = db.prepare('SELECT id FROM entry WHERE key = ?').pluck();
          const remember = (key: string) => {
            const id = idOf.get(key) as number | undefined;
            if (id !== undefined) ids.set(key, id);
          };
          // Remove the touched objects' entries and ways; the streets they were in are made again.
          const dirty = new Set<string>();
          db.transaction(() => {
            for (const key of keys) {
              remember(key);
              if (writer.remove(key)) removed++;
              if (key.startsWith('w')) {
                const w = writer.streetWay(Number(key.slice(1)));
                if (w) {
                  dirty.add(streetKey(w.settlement, w.name));
                  writer.removeStreetWay(w.way);
                }
              }
            }
          })();
          const work = GeometryWork.create();
          try {
            content = makeEntries(work, {
              objects: objects.filter((s) => keys.has(s.o.key)),
              settlements,
              bbox: opts.bbox,
              stored: {
                keys: dirty,
                waysOf: (key) => {
                  const id = idOf.get(key) as number | undefined;
                  return id === undefined ? [] : writer.streetWaysOf(id);
                },
              },
            });
          } finally {
            work.close();
          }
          const made = content;
          db.transaction(() => {
            // Streets made again: their old entry and ways go, the new ones (all their ways) come.
            for (const s of made.streets) {
              remember(s.entry.key);
              const id = idOf.get(s.entry.key) as number | undefined;
              if (id !== undefined) for (const w of writer.streetWaysOf(id)) writer.removeStreetWay(w.way);
              writer.remove(s.entry.key);
            }
            // A street left without ways is gone.
            for (const key of dirty) if (!made.streets.some((s) => s.entry.key === key)) writer.remove(key);
            for (const e of made.entries) remember(e.key);
            writeEntries(writer, made, ids);
            writer.syncTypos();
          })();
          writer.optimize();
          db.exec('VACUUM');
        } finally {
          db.close();
        }
      }),
    );
    const bytes = (await stat(output)).size;
    const seconds = (performance.now() - t0) / 1000;
    const made = content!;
    const db = openIndex(output, { readonly: true });
    const entries = db.prepare('SELECT count(*) FROM entry').pluck().get() as number;
    db.close();
    logLine(`${opts.label}: search index updated: ${keys.size} objects touched, ${removed} entries removed, ${made.entries.length + made.streets.length} written (${made.streets.length} streets); ${entries} entries, ${bytes} bytes in ${seconds.toFixed(1)} s (${stepsText([...touched.steps, ...steps])})`);
    return { entries, bytes, seconds, steps };
  });
}
