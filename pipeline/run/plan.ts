/**
 * `tilebake plan --config F --run RUN --shards N`: run the vector, imagery and elevation stages once
 * (the build's own stages; imagery no style draws is left to the shards), prepare the styles, and store
 * under RUN what the shards and publish need;
 * `run.json` is written last (see run-file.ts for the layout).
 */
import { copyFile, cp, mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { readManifestOrEmpty } from '../../lib/manifest.ts';
import { newBuildId } from '../../lib/build-version.ts';
import { isDatabaseUrl, redactDatabaseUrl } from '../../lib/database-url.ts';
import { sha256File } from '../../lib/hash.ts';

import { uploadTree } from '../../lib/store-tree.ts';
import { openWritableStore, type WritableStore } from '../../lib/object-store.ts';
import { runStages } from '../build.ts';
import type { BuildConfig } from '../config/index.ts';
import { logLine } from '../../lib/progress.ts';
import { renderPlan } from '../render/jobs.ts';
import { archiveFingerprint } from '../imagery/stage.ts';
import { openImagery } from '../imagery/sources.ts';
import { rasterTilesetsOf } from '../render/style.ts';
import { SPRITE_FILES, spriteBase } from '../render/sprite.ts';
import { hashInputs, readDeps } from '../reuse.ts';
import { tilesetSourceKinds } from '../stage.ts';
import { permanent } from '../exit.ts';
import { BASE_DIR, INPUTS_DIR, newRunFile, readRunFile, RUN_FILE, type RunFile, type RunInput } from './run-file.ts';
import { TILEBAKE_VERSION } from './version.ts';

export interface PlanOptions {
  run: string;
  shards: number;
  /** Local folder for the work (`<scratch>/tilebake-plan/`, removed afterwards; default: the system's temp folder). */
  scratch?: string;
  /** Endpoint of an S3-compatible store for an s3:// run (--s3-endpoint). */
  s3Endpoint?: string;
}

/** The folder of SVG icons a style entry's `"sprite"` names, if any. */
function spriteFolder(s: BuildConfig['styles'][string]): string | undefined {
  return s.sprite === undefined ? undefined : typeof s.sprite === 'string' ? s.sprite : s.sprite.extend;
}

/** Files the config reads: the config itself, tileset sources, DEMs, styles and their SVG icon folders. */
function configInputs(config: BuildConfig): string[] {
  const styles = Object.values(config.styles);
  return [config.file, ...Object.values(config.tilesets).map((t) => t.source), ...(config.elevation?.sources ?? []).map((s) => s.path), ...styles.map((s) => s.style), ...styles.flatMap((s) => spriteFolder(s) ?? [])];
}

/**
 * The imagery tilesets the shards warp: those whose source is images (not a raster tile archive, which
 * plan packs) and that no style draws (a style's raster sources are read by every shard's render, so
 * plan warps those, as it builds the vector tilesets).
 */
async function shardedImagery(config: BuildConfig): Promise<Set<string>> {
  const kinds = await tilesetSourceKinds(config);
  const ids = Object.keys(config.tilesets);
  const asEntries = Object.fromEntries(ids.map((id, i) => [id, { kind: kinds[i] === 'vector' ? ('vector' as const) : ('raster' as const) }]));
  const drawn = new Set<string>();
  for (const s of Object.values(config.styles)) for (const id of await rasterTilesetsOf(s.style, asEntries)) drawn.add(id);
  return new Set(ids.filter((id, i) => kinds[i] === 'imagery' && !drawn.has(id)));
}

/** Copy the files GDAL reads for imagery tileset `id` into `dir`, keeping their layout; returns its source there, relative to `configDir`. */
async function copyImagery(id: string, source: string, dir: string, configDir: string, scratch: string): Promise<string> {
  const src = await openImagery(id, source, join(scratch, 'imagery-inputs', id));
  const base = commonFolder([...src.inputs, ...src.files]);
  for (const f of src.inputs) {
    await mkdir(dirname(join(dir, relative(base, f))), { recursive: true });
    await copyFile(f, join(dir, relative(base, f)));
  }
  return relative(configDir, join(dir, relative(base, source)));
}

/** The deepest folder holding every one of `files`. */
function commonFolder(files: string[]): string {
  let base = dirname(files[0]);
  while (!files.every((f) => !relative(base, f).startsWith('..'))) base = dirname(base);
  return base;
}

/** An input as run.json records it: a file and its hash; a database URL without its password, and the hash of the tiles it gave (in `baseDir`). */
async function runInput(path: string, config: BuildConfig, baseDir: string): Promise<RunInput> {
  if (!isDatabaseUrl(path)) return { path, sha256: await hashInputs([path]) };
  const archives = Object.values(config.tilesets).filter((t) => t.source === path).map((t) => join(baseDir, 'data', `${t.id}.pmtiles`));
  return { path: redactDatabaseUrl(path), sha256: await hashInputs(archives) };
}

/**
 * Write what a shard needs to render into `dir`: the config with its styles and fonts moved beside it
 * (`styles/<id>/style.json` with its sprite as `sprite*` and its SVG icon folder as `icons/`, `fonts/`),
 * and the images of the imagery tilesets it warps (`imagery/<id>/`). The prepared styles, hence the
 * render fingerprints, and the imagery fingerprints are the same as from the original files.
 */
async function writeInputs(config: BuildConfig, dir: string, sharded: ReadonlySet<string>, scratch: string): Promise<void> {
  const raw = JSON.parse(await readFile(config.file, 'utf8')) as { out?: string; fonts?: string; styles: Record<string, { style: string; sprite?: unknown }>; tilesets?: Record<string, string | { source: string }> };
  // A shard renders from the archives: a database's password stays out of the run.
  for (const [id, t] of Object.entries(raw.tilesets ?? {})) {
    if (typeof t === 'string' && isDatabaseUrl(t)) raw.tilesets![id] = redactDatabaseUrl(t);
    else if (typeof t === 'object' && isDatabaseUrl(t.source)) t.source = redactDatabaseUrl(t.source);
  }
  for (const id of sharded) {
    const t = raw.tilesets![id];
    const source = await copyImagery(id, config.tilesets[id].source, join(dir, 'imagery', id), dir, scratch);
    raw.tilesets![id] = typeof t === 'string' ? source : { ...t, source };
  }
  for (const s of Object.values(config.styles)) {
    const styleDir = join(dir, 'styles', s.id);
    await mkdir(styleDir, { recursive: true });
    const style = JSON.parse(await readFile(s.style, 'utf8')) as { sprite?: unknown };
    // A folder that replaces the style's sprite leaves the style's own unread (as the render stage does).
    const base = typeof s.sprite === 'string' ? undefined : spriteBase(s.style, style.sprite);
    if (base) {
      for (const suffix of SPRITE_FILES) {
        if (await stat(base + suffix).then(() => true, () => false)) await copyFile(base + suffix, join(styleDir, `sprite${suffix}`));
      }
      style.sprite = Array.isArray(style.sprite) ? [{ ...(style.sprite[0] as object), url: './sprite' }] : './sprite';
    }
    await writeFile(join(styleDir, 'style.json'), JSON.stringify(style));
    raw.styles[s.id].style = `styles/${s.id}/style.json`;
    const icons = spriteFolder(s);
    if (icons) {
      await cp(icons, join(styleDir, 'icons'), { recursive: true });
      raw.styles[s.id].sprite = typeof s.sprite === 'string' ? `styles/${s.id}/icons` : { extend: `styles/${s.id}/icons` };
    }
  }
  if (config.fonts) {
    await cp(config.fonts, join(dir, 'fonts'), { recursive: true });
    raw.fonts = 'fonts';
  }
  raw.out = '.';
  // A config without styles, fonts or sharded imagery made no folder above.
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'config.json'), `${JSON.stringify(raw, null, 2)}\n`);
}

/** The run's `imagery`: each sharded tileset's archives (`data/<id>`, `data/<id>@2x`) with the fingerprint they record. */
async function plannedImagery(baseDir: string, sharded: ReadonlySet<string>): Promise<Record<string, string>> {
  const m = await readManifestOrEmpty(baseDir);
  const deps = await readDeps(baseDir);
  const out: Record<string, string> = {};
  for (const id of sharded) {
    const fingerprint = deps[`imagery:${id}`];
    out[`data/${id}`] = archiveFingerprint(fingerprint, 1);
    if (m.tilesets[id]?.hidpi) out[`data/${id}@2x`] = archiveFingerprint(fingerprint, 2);
  }
  return out;
}

/** Plan a run; returns its run.json. Planning an already planned RUN with the same config and n does nothing. */
export async function plan(config: BuildConfig, opts: PlanOptions): Promise<RunFile> {
  if (!Number.isInteger(opts.shards) || opts.shards < 1) throw permanent(`--shards: expected a whole number >= 1 (got ${opts.shards})`);
  const store: WritableStore = openWritableStore(opts.run, { s3Endpoint: opts.s3Endpoint });
  const configHash = await sha256File(config.file);
  if (await store.readFile(RUN_FILE)) {
    const existing = await readRunFile(store);
    if (existing.configHash === configHash && existing.n === opts.shards) {
      logLine(`plan: ${opts.run} already holds run ${existing.run} of this config with n = ${existing.n}: nothing to do`);
      return existing;
    }
    throw permanent(`${opts.run}: already holds run ${existing.run} (n = ${existing.n}) of ${existing.configHash === configHash ? 'this config' : 'another config'}; plan into a new --run location`);
  }
  await mkdir(opts.scratch ?? tmpdir(), { recursive: true });
  const scratch = await mkdtemp(join(opts.scratch ?? tmpdir(), 'tilebake-plan-'));
  try {
    const baseDir = join(scratch, BASE_DIR);
    const inputsDir = join(scratch, INPUTS_DIR);
    await mkdir(baseDir, { recursive: true });
    const sharded = await shardedImagery(config);
    await runStages(config, { outDir: baseDir, workDir: join(scratch, 'work'), imagery: { planOnly: (id) => sharded.has(id) } }, (s) => s.name !== 'render');
    const render = await renderPlan(config, baseDir);
    await writeInputs(config, inputsDir, sharded, scratch);
    const imagery = await plannedImagery(baseDir, sharded);
    const inputs: RunInput[] = [];
    for (const p of configInputs(config)) inputs.push(await runInput(p, config, baseDir));
    const run = newRunFile({
      run: newBuildId(),
      n: opts.shards,
      configHash,
      archives: render.fingerprints,
      ...(Object.keys(imagery).length ? { imagery } : {}),
      styles: render.styles,
      fonts: config.fonts !== undefined,
      inputs,
      tilebake: TILEBAKE_VERSION,
    });
    await uploadTree(store, baseDir, `${BASE_DIR}/`);
    await uploadTree(store, inputsDir, `${INPUTS_DIR}/`);
    await store.putBytes(RUN_FILE, `${JSON.stringify(run, null, 2)}\n`);
    logLine(`plan: run ${run.run} in ${opts.run}: ${Object.keys(run.archives).length} raster archives in ${run.n} shards (next: \`tilebake shard --run ${opts.run}\` for each index 0..${run.n - 1})`);
    return run;
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}
