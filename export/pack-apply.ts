/**
 * `tilebake pack-apply OLD DELTA --to NEW`: bring a pack up to date with a delta (`tilebake pack
 * --since`). OLD and DELTA are pack folders (each archive of DELTA's pack.json applied to OLD's
 * archive of that name, NEW getting the archives and a pack.json, as a full pack of the newer build
 * has them) or two archive files (NEW is then a file). Nothing is written unless every archive applies.
 */
import { mkdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { produceAtomic, writeFileAtomic } from '../lib/atomic.ts';
import { UserError } from '../lib/errors.ts';
import { sha256File } from '../lib/hash.ts';
import { applyDelta } from '../lib/packs/apply.ts';
import { openArchiveFile } from '../lib/pmtiles/index.ts';
import { applySearchDelta } from '../lib/search/cut.ts';
import { PACK_JSON, packJson, type PackArchiveEntry, type PackJson, type PackSearchEntry } from './pack.ts';

/** A pack folder's pack.json, checked; `dir` names it in errors. */
async function readPackJson(dir: string): Promise<PackJson> {
  const path = join(dir, PACK_JSON);
  let j: PackJson;
  try {
    j = JSON.parse(await readFile(path, 'utf8')) as PackJson;
  } catch (e) {
    throw new UserError(`${path}: cannot read the pack's list (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
  if (j?.format !== 'tilebake-pack/1' || !Array.isArray(j.archives)) throw new UserError(`${path}: not a tilebake pack list (field "format" must be "tilebake-pack/1")`);
  return j;
}

async function isFolder(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory();
  } catch (e) {
    throw new UserError(`${path}: cannot read (${(e as NodeJS.ErrnoException).code ?? String(e)})`);
  }
}

/** Tiles of an archive file (PMTiles header, or the MBTiles `tiles` rows). */
async function tilesOf(path: string, container: PackJson['container']): Promise<number> {
  if (container === 'pmtiles') {
    const r = await openArchiveFile(path);
    const n = r.header.numAddressedTiles;
    await r.close();
    return n;
  }
  const db = new Database(path, { readonly: true });
  try {
    return (db.prepare('SELECT COUNT(*) AS n FROM tiles').get() as { n: number }).n;
  } finally {
    db.close();
  }
}

/** Apply `delta` to `old`, writing `to`. */
export async function packApply(oldPath: string, deltaPath: string, to: string): Promise<{ archives: number; json?: PackJson }> {
  const [oldIsDir, deltaIsDir] = [await isFolder(oldPath), await isFolder(deltaPath)];
  if (oldIsDir !== deltaIsDir) throw new UserError(`pack-apply: OLD (${oldPath}) and DELTA (${deltaPath}) must both be pack folders or both archive files`, { exitCode: 2 });
  if (!oldIsDir) {
    // Two files: tile archives, or two search indexes (a pack's `<tileset>.search.sqlite`).
    if (/\.search\.sqlite$/i.test(deltaPath)) await produceAtomic(resolve(to), async (tmp) => applySearchDelta(resolve(oldPath), resolve(deltaPath), tmp));
    else await applyDelta(resolve(oldPath), resolve(deltaPath), resolve(to));
    return { archives: 1 };
  }
  const [oldJson, deltaJson] = [await readPackJson(oldPath), await readPackJson(deltaPath)];
  if (deltaJson.since === undefined) throw new UserError(`${join(deltaPath, PACK_JSON)}: not a delta (no "since"); it is a full pack of build ${deltaJson.build}`);
  if (oldJson.since !== undefined) throw new UserError(`${join(oldPath, PACK_JSON)}: a delta itself (since ${oldJson.since}); apply deltas to a full pack`);
  if (oldJson.build !== deltaJson.since) throw new UserError(`${oldPath}: a pack of build ${oldJson.build}; the delta ${deltaPath} applies to a pack of build ${deltaJson.since}`);
  if (oldJson.container !== deltaJson.container) throw new UserError(`${deltaPath}: ${deltaJson.container} archives; ${oldPath} has ${oldJson.container} ones`);
  const out = resolve(to);
  const staging = join(out, `.pack-apply-staging-${process.pid}`);
  await mkdir(staging, { recursive: true });
  try {
    const entries: PackArchiveEntry[] = [];
    for (const d of deltaJson.archives) {
      if (!oldJson.archives.some((a) => a.file === d.file)) throw new UserError(`${oldPath}: has no ${d.file}, which the delta ${deltaPath} updates`);
      const path = join(staging, d.file);
      await applyDelta(join(resolve(oldPath), d.file), join(resolve(deltaPath), d.file), path);
      entries.push({ file: d.file, source: d.source, tiles: await tilesOf(path, deltaJson.container), bytes: (await stat(path)).size, sha256: await sha256File(path), minzoom: d.minzoom, maxzoom: d.maxzoom, bounds: d.bounds });
    }
    const search: PackSearchEntry[] = [];
    for (const d of deltaJson.search ?? []) {
      if (!oldJson.search?.some((a) => a.file === d.file)) throw new UserError(`${oldPath}: has no ${d.file}, which the delta ${deltaPath} updates`);
      const path = join(staging, d.file);
      const n = applySearchDelta(join(resolve(oldPath), d.file), join(resolve(deltaPath), d.file), path);
      search.push({ file: d.file, tileset: d.tileset, entries: n, bytes: (await stat(path)).size, sha256: await sha256File(path) });
    }
    const json = packJson(deltaJson.build ?? undefined, undefined, deltaJson.container, deltaJson.area, entries, deltaJson.search ? search : undefined);
    for (const e of [...entries, ...search]) await rename(join(staging, e.file), join(out, e.file));
    await writeFileAtomic(join(out, PACK_JSON), `${JSON.stringify(json, null, 2)}\n`);
    return { archives: entries.length, json };
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}
