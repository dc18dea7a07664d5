/**
 * `tilebake shard --run RUN [--index i] [--scratch DIR]`: render shard i of the run's n on node-local
 * scratch with the build's render stage (and warp its share of the imagery no style draws), reading the tileset archives from RUN by ranged reads; upload
 * the partial archives under deterministic keys, then DONE.json last. A shard whose DONE.json already
 * matches run.json exits at once (re-running the whole array is the retry); scratch left by a killed
 * run resumes from its render journals.
 */
import { mkdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { sha256File } from '../../lib/hash.ts';
import { downloadTree } from '../../lib/store-tree.ts';
import { openWritableStore } from '../../lib/object-store.ts';
import { SubStore } from '../../lib/storage.ts';
import { summarizeArchiveFile } from '../../lib/pmtiles/index.ts';
import { loadConfig, type BuildConfig } from '../config/index.ts';
import { logLine } from '../../lib/progress.ts';
import { archiveName } from '../render/stage.ts';
import { readIdentity } from '../render/archive.ts';
import { renderStage } from '../stages/render.ts';
import { shardIndex } from './engine-index.ts';
import { permanent } from '../exit.ts';
import { BASE_DIR, doneMismatch, donePath, INPUTS_DIR, newDoneFile, partialPath, readDoneFile, parseArchiveKey, readRunFile, parseImageryKey, shardArchives, type RunFile, type ShardArchive } from './run-file.ts';

export interface ShardOptions {
  run: string;
  /** Explicit index (else from the engine's variable). */
  index?: number;
  /** Node-local folder (default: the system's temp folder) holding `tilebake-shard-<run>-<i>/`, kept when the shard fails, for resuming. */
  scratch?: string;
  workers?: number;
  env?: Record<string, string | undefined>;
  /** Endpoint of an S3-compatible store for an s3:// run (--s3-endpoint). */
  s3Endpoint?: string;
}

/** What a shard run did. */
export interface ShardResult {
  index: number;
  /** True when DONE.json already matched: nothing was rendered or uploaded. */
  alreadyDone: boolean;
}

/**
 * Warp this shard's share of the run's imagery archives (`run.imagery`) with the build's imagery stage
 * into `outDir`, check each partial records the planned fingerprint, and hand each to `upload`; the
 * DONE.json entries, or undefined when the run has no imagery for the shards.
 */
async function shardImagery(
  run: RunFile,
  config: BuildConfig,
  c: { outDir: string; workDir: string; shard: { index: number; count: number }; workers?: number },
  upload: (key: string, local: string) => Promise<Omit<ShardArchive, 'fingerprint' | 'tiles'>>,
): Promise<Record<string, ShardArchive> | undefined> {
  if (!run.imagery || Object.keys(run.imagery).length === 0) return undefined;
  const ids = new Set(Object.keys(run.imagery).map((k) => parseImageryKey(k).id));
  const { runImageryStage, imageryArchives, IMAGERY_METADATA_KEY } = await import('../imagery/stage.ts');
  await runImageryStage(config, c.outDir, { workDir: c.workDir, threads: c.workers, only: (id) => ids.has(id), shard: c.shard });
  const out: Record<string, ShardArchive> = {};
  for (const k of Object.keys(run.imagery).sort()) {
    const { id, scale } = parseImageryKey(k);
    const local = join(c.outDir, imageryArchives(id)[scale]);
    const summary = await summarizeArchiveFile(local);
    const fingerprint = summary?.metadata[IMAGERY_METADATA_KEY];
    if (fingerprint !== run.imagery[k]) throw permanent(`${local}: not the partial archive of ${k} the run planned (its images or settings differ from the plan's)`);
    out[k] = { ...(await upload(k, local)), fingerprint, tiles: summary!.tiles };
  }
  return out;
}

export async function shard(opts: ShardOptions): Promise<ShardResult> {
  const store = openWritableStore(opts.run, { s3Endpoint: opts.s3Endpoint });
  const run = await readRunFile(store);
  const index = shardIndex(run.n, opts.index, opts.env ?? process.env);
  const label = `shard ${index}/${run.n} of run ${run.run}`;
  const done = await readDoneFile(store, index);
  if (done) {
    const why = doneMismatch(done, run, index);
    const present = new Map((await store.list(`shards/${index}/`)).map((o) => [o.path, o.bytes]));
    const missing = Object.values(shardArchives(done)).find((a) => present.get(a.path) !== a.bytes);
    if (!why && !missing) {
      logLine(`${label}: already done (${donePath(index)} matches run.json): rendered 0 metatiles`);
      return { index, alreadyDone: true };
    }
    logLine(`${label}: ${donePath(index)} ${why ?? `names ${missing!.path}, which is missing or has another size`}: rendering again`);
  }
  const scratch = join(opts.scratch ?? tmpdir(), `tilebake-shard-${run.run}-${index}`);
  const inputs = join(scratch, INPUTS_DIR);
  const outDir = join(scratch, 'out');
  await mkdir(outDir, { recursive: true });
  await downloadTree(store, `${INPUTS_DIR}/`, inputs);
  if (!(await store.getFile(`${BASE_DIR}/manifest.json`, join(outDir, 'manifest.json')))) throw permanent(`${opts.run}/${BASE_DIR}/manifest.json: not found (an incomplete plan?)`);
  const config = await loadConfig(join(inputs, 'config.json'));
  const shardOf = { index, count: run.n };
  await renderStage.run(config, {
    outDir,
    workDir: join(scratch, 'work'),
    workers: opts.workers,
    render: { shard: shardOf, dataStore: new SubStore(store, BASE_DIR), expect: run.archives },
  });
  const archives: Record<string, ShardArchive> = {};
  for (const key of Object.keys(run.archives).sort()) {
    const { style, scale, format } = parseArchiveKey(key);
    const local = join(outDir, 'styles', style, archiveName(scale, format, shardOf));
    const id = await readIdentity(local);
    if (!id || id.fingerprint !== run.archives[key]) throw permanent(`${local}: not the partial archive of ${key} the run planned`);
    const path = partialPath(index, key);
    const put = await store.putFile(path, local);
    archives[key] = { path, bytes: put.bytes, sha256: await sha256File(local), fingerprint: id.fingerprint, tiles: id.tiles };
  }
  const imagery = await shardImagery(run, config, { outDir, workDir: join(scratch, 'work'), shard: shardOf, workers: opts.workers }, async (key, local) => {
    const path = partialPath(index, key);
    const put = await store.putFile(path, local);
    return { path, bytes: put.bytes, sha256: await sha256File(local) };
  });
  await store.putBytes(donePath(index), `${JSON.stringify(newDoneFile({ run: run.run, index, n: run.n, archives, ...(imagery ? { imagery } : {}) }), null, 2)}\n`);
  await rm(scratch, { recursive: true, force: true });
  logLine(`${label}: done, ${Object.keys(archives).length} partial archives uploaded to ${opts.run}/shards/${index}/`);
  return { index, alreadyDone: false };
}
