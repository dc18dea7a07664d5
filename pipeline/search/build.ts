/**
 * Building a tileset's search index from its OpenStreetMap extract (docs/search.md): osmium exports the
 * named objects (pipeline/search/objects.ts), each is classified (classify.ts), placed and located
 * (entries.ts), and the entries are written into a new index file (lib/search/write.ts), which replaces
 * `output` only once it is complete. With `previous`, an entry keeps its id there (a pack's delta is
 * then the entries that changed, not the whole index).
 */
import { mkdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { logLine, stepsText, timeStep, type Step } from '../../lib/progress.ts';
import { openIndex, type SearchEntry } from '../../lib/search/schema.ts';
import { bucketOf, type IndexWriter, type StreetWay, writeIndexFile } from '../../lib/search/write.ts';
import type { BBox } from '../../lib/tile-math.ts';
import { findTool, killLeftovers, OSMIUM } from '../osm/tools.ts';
import { classify } from './classify.ts';
import { makeEntries, type Entries, type SourceObject } from './entries.ts';
import { GeometryWork } from './geometry.ts';
import { exportObjects, MAY_BE_INDEXED, readObjects, type LineFilter } from './objects.ts';

/** Options of a search index build. */
export interface SearchBuildOptions {
  /** The `name:xx` languages indexed (the tileset's). */
  languages: readonly string[];
  /** Only entries whose point lies in [w, s, e, n] (a tileset cut to a bbox). */
  bbox?: BBox;
  /** Work folder (made and removed). */
  workDir: string;
  /** Prefix of progress lines. */
  label: string;
  /** The previous version's index: entries keep their ids. */
  previous?: string;
}

/** What a build made. */
export interface SearchBuildResult {
  entries: number;
  bytes: number;
  seconds: number;
  steps: Step[];
}

/** The objects of an exported file, classified, one per OSM element (an area rather than the line of the same way). */
export async function classifiedObjects(path: string, languages: readonly string[], keep: LineFilter = MAY_BE_INDEXED): Promise<SourceObject[]> {
  const byKey = new Map<string, SourceObject>();
  for await (const o of readObjects(path, keep)) {
    const c = classify(o.tags, o.shape, languages);
    if (!c) continue;
    const had = byKey.get(o.key);
    if (had && !(had.o.shape !== 'area' && o.shape === 'area')) continue;
    byKey.set(o.key, { o, c });
  }
  return [...byKey.values()];
}

/** The ids entries had in the index at `path` (none when there is no readable index there). */
export function entryIds(path: string | undefined): Map<string, number> {
  const ids = new Map<string, number>();
  if (!path) return ids;
  let db: Database.Database;
  try {
    db = openIndex(path, { readonly: true });
  } catch {
    return ids;
  }
  try {
    for (const r of db.prepare('SELECT key, id FROM entry').iterate() as Iterable<{ key: string; id: number }>) ids.set(r.key, r.id);
  } finally {
    db.close();
  }
  return ids;
}

/** Write `content` into `writer`'s index: entries in importance order (then by key), each street with its ways. */
export function writeEntries(writer: IndexWriter, content: Pick<Entries, 'entries' | 'streets'>, keep: ReadonlyMap<string, number> = new Map()): void {
  const rows: { e: SearchEntry; ways?: StreetWay[] }[] = [...content.entries.map((e) => ({ e })), ...content.streets.map((s) => ({ e: s.entry, ways: s.ways }))];
  rows.sort((a, b) => bucketOf(a.e.importance) - bucketOf(b.e.importance) || (a.e.key < b.e.key ? -1 : a.e.key > b.e.key ? 1 : 0));
  for (const r of rows) {
    const id = writer.put(r.e, keep.get(r.e.key));
    for (const w of r.ways ?? []) writer.addStreetWay(id, w);
  }
}

/**
 * Run `work` in a fresh work folder (`opts.workDir`, removed afterwards; osmium runs a killed build
 * left there are killed first) with osmium and the pid file of its runs.
 */
export async function inWorkFolder<T>(opts: Pick<SearchBuildOptions, 'workDir'>, work: (osmium: string, pidFile: string, steps: Step[]) => Promise<T>): Promise<T> {
  const osmium = await findTool(OSMIUM);
  const pidFile = join(opts.workDir, 'pids');
  await killLeftovers(pidFile, opts.workDir);
  await rm(opts.workDir, { recursive: true, force: true });
  await mkdir(opts.workDir, { recursive: true });
  try {
    return await work(osmium, pidFile, []);
  } finally {
    await rm(opts.workDir, { recursive: true, force: true });
  }
}

/** Build the search index of the OSM extract `source` into `output` (see the module comment). */
export function buildSearchIndex(source: string, output: string, opts: SearchBuildOptions): Promise<SearchBuildResult> {
  const t0 = performance.now();
  return inWorkFolder(opts, async (osmium, pidFile, steps) => {
    // SpatiaLite loads while osmium exports; the work database is closed however the steps end.
    const exporting = timeStep(steps, 'osmium', () => exportObjects(osmium, source, opts.workDir, 'objects', pidFile));
    let work: GeometryWork;
    try {
      work = GeometryWork.create();
    } catch (e) {
      await exporting.catch(() => undefined);
      throw e;
    }
    let content: Entries;
    try {
      const exported = await exporting;
      const objects = await timeStep(steps, 'read', () => classifiedObjects(exported, opts.languages));
      content = await timeStep(steps, 'geometry', async () => makeEntries(work, { objects, settlements: objects.filter((s) => s.c.role !== undefined), bbox: opts.bbox }));
    } finally {
      work.close();
    }
    const keep = entryIds(opts.previous);
    await timeStep(steps, 'write', () => writeIndexFile(output, { languages: JSON.stringify(opts.languages), settlements: content.settlements }, (w) => writeEntries(w, content, keep)));
    const entries = content.entries.length + content.streets.length;
    const bytes = (await stat(output)).size;
    const seconds = (performance.now() - t0) / 1000;
    logLine(`${opts.label}: search index of ${entries} entries (${content.streets.length} streets), ${bytes} bytes in ${seconds.toFixed(1)} s (${stepsText(steps)})`);
    return { entries, bytes, seconds, steps };
  });
}
