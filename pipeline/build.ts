import { mkdir, readdir, rename, rm, rmdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { BUILDS_DIR, currentVersionDir, DEFAULT_KEEP_VERSIONS, LEASES_DIR, newBuildId, POINTER_FILE, publishVersion, pruneVersions } from '../lib/build-version.ts';
import { readManifestOrEmpty, updateManifest, type Manifest } from '../lib/manifest.ts';
import type { BuildConfig } from './config/index.ts';
import type { Stage, StageContext, StageName } from './stage.ts';
import { STAGES, stageNamed } from './stages/index.ts';
import { logLine, secondsSince, stepsText } from '../lib/progress.ts';
import { linkTree } from './reuse.ts';

/** Options of `tilebake build`. */
export interface BuildOptions {
  /** Output folder; overrides the config's `out`. */
  out?: string;
  /** Run one stage only. */
  only?: StageName;
  /** Render pool size. */
  workers?: number;
  /** Ignore the current version: render, pack and index everything again. */
  full?: boolean;
  /** Versions kept after publishing (default 2); see lib/build-version.ts for the rule. */
  keep?: number;
  /** OSM tilesets whose source is the current version's with change files applied (`tilebake update` passes them). */
  vectorPatches?: StageContext['vectorPatches'];
  /** Last change to the new version's manifest before it is published (`tilebake update` records the OSM state). */
  manifest?: (m: Manifest) => void;
}

/** Timing of one stage run. */
export interface StageTiming {
  stage: StageName;
  /** Tiles the stage's outputs hold, from the manifest. */
  tiles: number;
  seconds: number;
}

const MS_PER_S = 1000;

/** Top-level names of an output folder that are not part of a version. */
const NOT_A_VERSION = new Set([BUILDS_DIR, LEASES_DIR, POINTER_FILE, '.work']);

/** `stage vector: 23 tiles in 0.4 s` (Planetiler style). */
export function timingLine(t: StageTiming): string {
  return `stage ${t.stage}: ${t.tiles} tiles in ${t.seconds.toFixed(1)} s`;
}

/** Remove unfinished version folders (`builds/.incoming-<id>-<pid>`) whose build process is gone. */
async function removeAbandoned(root: string): Promise<void> {
  for (const name of await readdir(join(root, BUILDS_DIR)).catch(() => [] as string[])) {
    const m = /^\.incoming-.+-(\d+)$/.exec(name);
    if (!m) continue;
    const pid = Number(m[1]);
    let running = pid !== process.pid;
    try {
      if (running) process.kill(pid, 0);
    } catch {
      running = false;
    }
    if (!running) await rm(join(root, BUILDS_DIR, name), { recursive: true, force: true });
  }
}

/**
 * Run the build into a new version of the output folder (lib/build-version.ts): vector → imagery →
 * elevation → render, each skipped when its config section is empty or `--only` names another stage, each
 * reusing what the current version already holds for unchanged inputs (unless `--full`). The version
 * is written under `builds/.incoming-<id>-<pid>/`, renamed to `builds/<id>/` and made current by one
 * atomic rename of `current.json`; then old versions are pruned. A failed or killed build leaves the
 * current version as it was.
 */
export async function build(config: BuildConfig, opts: BuildOptions = {}): Promise<StageTiming[]> {
  const root = resolve(opts.out ?? config.out);
  await mkdir(root, { recursive: true });
  const started = Date.now();
  await removeAbandoned(root);
  const base = await currentVersionDir(root);
  const id = newBuildId(new Date(), base?.id);
  const incoming = join(root, BUILDS_DIR, `.incoming-${id}-${process.pid}`);
  await mkdir(incoming, { recursive: true });
  let timings: StageTiming[];
  let published = 0;
  try {
    if (opts.only && base) {
      // A one-stage build: the other stages' outputs come from the current version unchanged.
      await linkTree(base.dir, incoming, base.id === undefined ? NOT_A_VERSION : new Set(['.work']));
      for (const f of stageNamed(opts.only).writes(await readManifestOrEmpty(incoming))) await rm(join(incoming, f), { recursive: true, force: true });
    }
    const sc: StageContext = { outDir: incoming, previous: opts.full ? undefined : base?.dir, workDir: join(root, '.work'), workers: opts.workers, vectorPatches: opts.vectorPatches };
    timings = await runStages(config, sc, (s) => !opts.only || opts.only === s.name, opts.manifest);
    published = performance.now();
    const final = join(root, BUILDS_DIR, id);
    await rename(incoming, final);
    await publishVersion(root, id);
  } catch (e) {
    await rm(incoming, { recursive: true, force: true });
    await rmdir(join(root, BUILDS_DIR)).catch(() => undefined); // only when empty: the first build failed
    throw e;
  }
  const removed = await pruneVersions(root, opts.keep ?? DEFAULT_KEEP_VERSIONS);
  logLine(`build: published ${id} in ${root}${removed.length ? ` (removed old versions ${removed.join(', ')})` : ''} in ${((Date.now() - started) / MS_PER_S).toFixed(1)} s (${stepsText([{ name: 'publish and prune', seconds: secondsSince(published) }])})`);
  return timings;
}

/** Run the selected stages into `sc.outDir`, in order, with a timing line each; make sure a manifest exists (`finish` makes a last change to it). */
export async function runStages(config: BuildConfig, sc: StageContext, select: (s: Stage) => boolean, finish?: (m: Manifest) => void): Promise<StageTiming[]> {
  const timings: StageTiming[] = [];
  for (const stage of STAGES) {
    if (!select(stage)) continue;
    if (!(await stage.hasWork(config))) {
      logLine(`stage ${stage.name}: skipped (nothing configured)`);
      continue;
    }
    const t0 = Date.now();
    await stage.run(config, sc);
    const tiles = stage.tiles(config, await readManifestOrEmpty(sc.outDir));
    const timing: StageTiming = { stage: stage.name, tiles, seconds: (Date.now() - t0) / MS_PER_S };
    timings.push(timing);
    logLine(timingLine(timing));
  }
  // Make sure a manifest exists even when nothing ran, so `serve` finds a (possibly empty) build.
  await updateManifest(sc.outDir, (m) => finish?.(m));
  return timings;
}
