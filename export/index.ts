/**
 * `tilebake export`: a build as plain files in the interface's URL layout, for any static web server
 * or bucket. Documents, sprites and glyphs come from the server app (server-files.ts), tiles straight
 * from the archives (tiles.ts); writer.ts switches them into place incrementally. A build with a
 * version id is also written under `v/{id}/` (hard links), the URLs its documents hand out, as
 * `tilebake serve` hands them out (lib/versioned-url.ts); older versions stay for `keep - 1` exports.
 */
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { DEFAULT_KEEP_VERSIONS } from '../lib/build-version.ts';
import { UserError } from '../lib/errors.ts';
import { versionOfPath } from '../lib/versioned-url.ts';
import { progressQuiet } from '../lib/progress.ts';
import { openBuildToExport } from './build-source.ts';
import { LISTING_FILE, readPreviousExport } from './listing.ts';
import { EXPORT_PARTS, partOf, type ExportPart } from './plan.ts';
import { serverFiles } from './server-files.ts';
import { archiveTiles, contentHash, tileArchives, type TileCounts } from './tiles.ts';
import { ExportWriter, STAGING_DIR, type ExportReport } from './writer.ts';

/** Options of `tilebake export`. */
export interface ExportOptions {
  /** The build (folder or http(s):// base URL). */
  out: string;
  /** The export folder. */
  to: string;
  /** Base URL the export is served at (absolute URLs in TileJSON and style.json). */
  publicUrl: string;
  /** Parts to export (default all); the others are left as they are. */
  only?: readonly ExportPart[];
  /** Print changed and removed paths, one per line, on stdout. */
  listChanges?: boolean;
  /** Hand out versioned URLs `/v/{build}/…` and write the files under them too (default true; a build without versions never). */
  versionedUrls?: boolean;
  /** Versions kept under `v/`, the current one included (default: as `tilebake build --keep`). */
  keep?: number;
}

/** What an export did. */
export interface ExportResult extends ExportReport {
  /** Addressed tiles with no bytes, not written. */
  emptyTiles: number;
  /** The build version exported under `v/{id}/` and named in the documents' URLs (undefined: plain URLs). */
  versionId: string | undefined;
  elapsedMs: number;
}

/** Held while an export writes into a folder. */
const LOCK_FILE = '.tilebake-export.lock';

/** Take the folder's lock (a killed export's lock, whose process is gone, is taken over). */
async function lock(root: string): Promise<() => Promise<void>> {
  const path = join(root, LOCK_FILE);
  for (let attempt = 0; ; attempt++) {
    try {
      await writeFile(path, String(process.pid), { flag: 'wx' });
      return () => rm(path, { force: true });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 0) throw e;
      const pid = Number(await readFile(path, 'utf8').catch(() => ''));
      let alive = false;
      try {
        alive = pid > 0 && process.kill(pid, 0);
      } catch {
        alive = false;
      }
      if (alive) throw new UserError(`${root}: another export (pid ${pid}) is writing this folder (${LOCK_FILE})`);
      await rm(path, { force: true });
    }
  }
}

/** Check --public-url: an absolute http(s) URL. */
function checkPublicUrl(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new UserError(`--public-url: expected an absolute http(s) URL (got "${url}")`, { exitCode: 2 });
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new UserError(`--public-url: expected http:// or https:// (got "${url}")`, { exitCode: 2 });
  return url.replace(/\/+$/, '');
}

/** Human size. */
export function formatBytes(n: number): string {
  return n >= 1024 * 1024 ? `${(n / 1024 / 1024).toFixed(1)} MB` : `${(n / 1024).toFixed(1)} kB`;
}

/** Export the build at `opts.out` into `opts.to`. */
export async function exportBuild(opts: ExportOptions): Promise<ExportResult> {
  const started = performance.now();
  const publicUrl = checkPublicUrl(opts.publicUrl);
  const parts = new Set<ExportPart>(opts.only?.length ? opts.only : EXPORT_PARTS);
  if (opts.keep !== undefined && !(Number.isInteger(opts.keep) && opts.keep >= 1)) throw new UserError(`--keep: expected a whole number of versions >= 1 (got ${opts.keep})`, { exitCode: 2 });
  const build = await openBuildToExport(opts.out);
  const root = resolve(opts.to);
  await mkdir(root, { recursive: true });
  const unlock = await lock(root);
  try {
    const ours = new Set([LOCK_FILE, STAGING_DIR]);
    const previous = await readPreviousExport(root, async () => (await readdir(root)).every((f) => ours.has(f)));
    const versionId = opts.versionedUrls === false ? undefined : build.id;
    const older = olderVersionsKept(previous, versionId, opts.keep ?? DEFAULT_KEEP_VERSIONS);
    const keep = (path: string) => {
      const v = versionOfPath(path);
      return v === undefined ? !parts.has(partOf(path) as ExportPart) : older.has(v);
    };
    const writer = new ExportWriter(root, previous, keep);
    await writer.open();
    const counts: TileCounts = { empty: 0 };
    const warnings: string[] = [];
    try {
      for await (const f of serverFiles(build, { publicUrl, versionId, parts, warn: (m) => warnings.push(m) })) {
        await writer.add({ path: f.path, hash: contentHash(f.bytes), bytes: f.bytes, document: f.document });
      }
      for (const a of tileArchives(build.manifest.tilesets, build.manifest.styles, parts)) {
        for await (const t of archiveTiles(build.store, a, counts)) await writer.add(t);
      }
      if (versionId !== undefined) await writer.addVersion(versionId);
    } catch (e) {
      await writer.abort();
      throw e;
    }
    const report = await writer.commit();
    const result: ExportResult = { ...report, emptyTiles: counts.empty, versionId, elapsedMs: performance.now() - started };
    if (!progressQuiet()) for (const w of [...new Set(warnings)]) process.stderr.write(`tilebake export: warning: ${w}\n`);
    if (opts.listChanges) {
      const lines = [...report.added, ...report.updated, ...report.removed].sort();
      if (lines.length) process.stdout.write(`${lines.join('\n')}\n`);
    }
    return result;
  } finally {
    await unlock();
  }
}

/**
 * The versions under `v/` of the previous export that stay besides `current`: the newest `keep - 1`
 * (build ids sort by time), so a map opened before this export keeps its build; none without versions.
 */
function olderVersionsKept(previous: ReadonlyMap<string, unknown>, current: string | undefined, keep: number): Set<string> {
  if (current === undefined) return new Set();
  const ids = new Set<string>();
  for (const p of previous.keys()) {
    const v = versionOfPath(p);
    if (v !== undefined && v !== current) ids.add(v);
  }
  return new Set([...ids].sort().reverse().slice(0, Math.max(0, keep - 1)));
}

/** The summary printed after an export. */
export function exportSummary(r: ExportResult, to: string): string {
  const s = (r.elapsedMs / 1000).toFixed(1);
  return (
    `exported to ${to} in ${s} s: ${r.added.length} added, ${r.updated.length} updated, ${r.removed.length} removed, ${r.unchanged} unchanged; ` +
    `${r.files} files (${formatBytes(r.bytes)}), ${r.uniqueFiles} distinct (${formatBytes(r.uniqueBytes)} on disk with hard links; ` +
    `${r.linked} links made this run${r.copied ? `, ${r.copied} copies where links failed` : ''}); ${r.emptyTiles} empty tiles not written (404)` +
    `${r.versionId !== undefined ? `; documents hand out /v/${r.versionId}/ URLs` : ''}\n`
  );
}

export { LISTING_FILE };
