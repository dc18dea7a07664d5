/**
 * `tilebake publish --run RUN --out OUT [--archive A]`: check that all n shards are done and belong to
 * the run, merge each archive's partials (`tilebake merge`'s code), and publish a version of OUT exactly
 * as `build` does (lib/build-version.ts): every file under `builds/<id>/` first, `current.json` last.
 * `--archive A` merges one archive into RUN/merged/ only, so an engine can fan in in parallel; a later
 * full publish uses those results when they match the shards.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_KEEP_VERSIONS, newBuildId, pruneStoreVersions, pruneVersions, publishVersionToStore, resolveCurrentVersion } from '../../lib/build-version.ts';
import { sha256File } from '../../lib/hash.ts';
import { updateManifest, type StyleArchive } from '../../lib/manifest.ts';
import { FolderStore, openWritableStore, type WritableStore } from '../../lib/object-store.ts';
import { summarizeArchiveFile } from '../../lib/pmtiles/index.ts';
import { downloadTree } from '../../lib/store-tree.ts';
import { mergeArchives } from '../merge.ts';
import { logLine } from '../../lib/progress.ts';
import { archiveName } from '../render/stage.ts';
import { permanent, transient } from '../exit.ts';
import { BASE_DIR, doneMismatch, donePath, mergedPath, parseArchiveKey, parseImageryKey, readDoneFile, readRunFile, shardArchives, type DoneFile, type RunFile } from './run-file.ts';

export interface PublishOptions {
  run: string;
  out: string;
  /** Merge this archive (`<style>/<scale>x.<format>`) into RUN/merged/ only. */
  archive?: string;
  /** Versions kept in OUT (default 2; lib/build-version.ts versionsToPrune). */
  keep?: number;
  /** Endpoint of an S3-compatible store for an s3:// run or OUT (--s3-endpoint). */
  s3Endpoint?: string;
}

/** What `merged/<key>.json` records: which partials a fan-in merge was made from. */
interface MergedRecord {
  run: string;
  key: string;
  sha256: string;
  partials: string[];
}

/** Every shard's DONE.json; refuses (75) while some are missing, and (78) when one belongs elsewhere. */
async function allDone(store: WritableStore, run: RunFile): Promise<DoneFile[]> {
  const dones: (DoneFile | undefined)[] = [];
  for (let i = 0; i < run.n; i++) {
    const d = await readDoneFile(store, i);
    const why = d && doneMismatch(d, run, i);
    if (why) throw permanent(`${store.location}/${donePath(i)}: ${why}; nothing published (run that shard again)`);
    dones.push(d);
  }
  const missing = dones.flatMap((d, i) => (d ? [] : [i]));
  if (missing.length) throw transient(`publish: shards ${missing.join(', ')} of ${run.n} are not done (no ${donePath(missing[0])}); nothing published`);
  return dones as DoneFile[];
}

/** Merge the shards' partials of archive `key` into local `dest`, checking each against its DONE.json. */
async function mergeKey(store: WritableStore, dones: DoneFile[], key: string, tmp: string, dest: string): Promise<void> {
  const parts: string[] = [];
  for (const d of dones) {
    const a = shardArchives(d)[key];
    const local = join(tmp, 'parts', String(d.index), `${key}.pmtiles`);
    if (!(await store.getFile(a.path, local))) throw permanent(`${store.location}/${a.path}: missing, though ${donePath(d.index)} lists it`);
    const sha = await sha256File(local);
    if (sha !== a.sha256) throw permanent(`${store.location}/${a.path}: sha256 ${sha.slice(0, 12)}… differs from ${donePath(d.index)}'s ${a.sha256.slice(0, 12)}… (overwritten by another run?)`);
    parts.push(local);
  }
  await mergeArchives(parts, dest);
  await rm(join(tmp, 'parts'), { recursive: true, force: true });
}

/** A fan-in result of `publish --archive` for `key`, downloaded to `dest`, when it matches the shards. */
async function reuseMerged(store: WritableStore, run: RunFile, dones: DoneFile[], key: string, dest: string): Promise<boolean> {
  const bytes = await store.readFile(`${mergedPath(key)}.json`);
  if (!bytes) return false;
  const rec = JSON.parse(Buffer.from(bytes).toString('utf8')) as MergedRecord;
  if (rec.run !== run.run || rec.key !== key || rec.partials.join() !== dones.map((d) => shardArchives(d)[key].sha256).join()) return false;
  if (!(await store.getFile(mergedPath(key), dest))) return false;
  return (await sha256File(dest)) === rec.sha256;
}

export async function publish(opts: PublishOptions): Promise<string | undefined> {
  const store = openWritableStore(opts.run, { s3Endpoint: opts.s3Endpoint });
  const run = await readRunFile(store);
  const dones = await allDone(store, run);
  const tmp = await mkdtemp(join(tmpdir(), 'tilebake-publish-'));
  try {
    if (opts.archive !== undefined) {
      const keys = [...Object.keys(run.archives), ...Object.keys(run.imagery ?? {})];
      if (!keys.includes(opts.archive)) throw permanent(`--archive: "${opts.archive}" is not an archive of run ${run.run} (one of ${keys.join(', ')})`);
      const dest = join(tmp, 'merged.pmtiles');
      await mergeKey(store, dones, opts.archive, tmp, dest);
      const rec: MergedRecord = { run: run.run, key: opts.archive, sha256: await sha256File(dest), partials: dones.map((d) => shardArchives(d)[opts.archive!].sha256) };
      await store.putFile(mergedPath(opts.archive), dest);
      await store.putBytes(`${mergedPath(opts.archive)}.json`, `${JSON.stringify(rec, null, 2)}\n`);
      logLine(`publish: ${opts.archive} merged into ${opts.run}/${mergedPath(opts.archive)}`);
      return undefined;
    }
    const versionDir = join(tmp, 'version');
    await downloadTree(store, `${BASE_DIR}/`, versionDir);
    const archives = new Map<string, Record<string, StyleArchive>>();
    for (const key of Object.keys(run.archives)) {
      const { style, scale, format } = parseArchiveKey(key);
      const rel = `styles/${style}/${archiveName(scale, format)}`;
      const dest = join(versionDir, ...rel.split('/'));
      if (!(await reuseMerged(store, run, dones, key, dest))) await mergeKey(store, dones, key, tmp, dest);
      const summary = (await summarizeArchiveFile(dest))!;
      const entries = archives.get(style) ?? {};
      entries[`${scale}x.${format}`] = { archive: rel, format, scale: scale as 1 | 2, tiles: summary.tiles, bytes: summary.bytes };
      archives.set(style, entries);
    }
    // The imagery the shards warped: merged beside plan's, its manifest entry (plan's, counts 0) counted.
    const imagery = new Map<string, { tiles: number; bytes: number }>();
    for (const key of Object.keys(run.imagery ?? {})) {
      const dest = join(versionDir, ...`${key}.pmtiles`.split('/'));
      if (!(await reuseMerged(store, run, dones, key, dest))) await mergeKey(store, dones, key, tmp, dest);
      imagery.set(key, (await summarizeArchiveFile(dest))!);
    }
    // The manifest as the one-machine render stage writes it: style by style, then the fonts.
    await updateManifest(versionDir, (m) => {
      for (const [key, count] of imagery) {
        const { id, scale } = parseImageryKey(key);
        const t = m.tilesets[id];
        if (scale === 2 && t.hidpi) t.hidpi = { ...t.hidpi, tiles: count.tiles, bytes: count.bytes };
        else Object.assign(t, { tiles: count.tiles, bytes: count.bytes });
      }
      for (const [id, entry] of Object.entries(run.styles)) {
        m.styles[id] = { ...entry, archives: archives.get(id) ?? {} };
        if (run.fonts) m.fonts = 'fonts';
      }
    });
    const out = openWritableStore(opts.out, { s3Endpoint: opts.s3Endpoint });
    // After the current version in id order, as a build's (none yet, or unreadable: publishing says so).
    const current = await resolveCurrentVersion(out).catch(() => undefined);
    const id = newBuildId(new Date(), current?.id);
    const { previous } = await publishVersionToStore(out, id, versionDir);
    const keep = opts.keep ?? DEFAULT_KEEP_VERSIONS;
    // One retention rule (lib/build-version.ts): a folder's servers hold versions by leases; on object storage the previous version is held.
    const removed = out instanceof FolderStore ? await pruneVersions(out.location, keep) : await pruneStoreVersions(out, keep, id, previous);
    logLine(`publish: run ${run.run} published as ${id} in ${opts.out}${removed.length ? ` (removed old versions ${removed.join(', ')})` : ''}`);
    return id;
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}
