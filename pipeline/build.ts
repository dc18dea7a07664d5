import { mkdir, readdir, rename, rm, rmdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { BUILDS_DIR, currentVersionDir, DEFAULT_KEEP_VERSIONS, LEASES_DIR, newBuildId, POINTER_FILE, publishVersion, pruneVersions } from '../lib/build-version.ts';
import { readManifestOrEmpty, updateManifest, type Manifest } from '../lib/manifest.ts';
import type { BuildConfig } from './config/index.ts';
import { logLine } from './progress.ts';
import { linkTree } from './reuse.ts';

/** The build stages, in the order they run. */
export const STAGES = ['vector', 'elevation', 'render'] as const;
export type Stage = (typeof STAGES)[number];

/** Options of `tilebake build`. */
export interface BuildOptions {
  /** Output folder; overrides the config's `out`. */
  out?: string;
  /** Run one stage only. */
  only?: Stage;
  /** Render only shard `index` of `count`. */
  shard?: { index: number; count: number };
  /** Render pool size. */
  workers?: number;
  /** Ignore the current version: render, pack and index everything again. */
  full?: boolean;
  /** Versions kept after publishing (default 2); see lib/build-version.ts for the rule. */
  keep?: number;
  /** Last change to the new version's manifest before it is published (`tilebake update` records the OSM state). */
  manifest?: (m: Manifest) => void;
}

/** What every stage gets besides the config: where to write, what it may reuse, where to keep work files. */
export interface StageContext {
  /** The new version's folder. */
  outDir: string;
  /** The current version's folder when the build may reuse it (not with --full). */
  previous?: string;
  /** Resumable work files (journals, OSM intermediates): `<out>/.work`, shared by successive builds. */
  workDir: string;
}

/** Timing of one stage run. */
export interface StageTiming {
  stage: Stage;
  /** Tiles the stage's outputs hold, from the manifest. */
  tiles: number;
  seconds: number;
}

const MS_PER_S = 1000;

/** True when the config gives the stage something to do. */
export function stageHasWork(config: BuildConfig, stage: Stage): boolean {
  switch (stage) {
    case 'vector':
      return Object.keys(config.tilesets).length > 0;
    case 'elevation':
      return config.elevation !== undefined && config.elevation.sources.length > 0;
    case 'render':
      return Object.keys(config.styles).length > 0;
  }
}

/** Tiles a stage's configured outputs hold according to the manifest (for the timing line). */
export function stageTiles(config: BuildConfig, stage: Stage, m: Manifest): number {
  switch (stage) {
    case 'vector':
      return Object.keys(config.tilesets).reduce((n, id) => n + (m.tilesets[id]?.tiles ?? 0), 0);
    case 'elevation':
      // Terrain and contour tiles.
      return (m.elevation?.tilesets ?? []).reduce((n, id) => n + (m.tilesets[id]?.tiles ?? 0), 0);
    case 'render':
      return Object.keys(config.styles).reduce(
        (n, id) => n + Object.values(m.styles[id]?.archives ?? {}).reduce((k, a) => k + a.tiles, 0),
        0,
      );
  }
}

/** Run one stage (imported lazily: each stage pulls in heavy dependencies of its own). */
async function runStage(stage: Stage, config: BuildConfig, sc: StageContext, opts: BuildOptions): Promise<void> {
  switch (stage) {
    case 'vector': {
      const { runVectorStage } = await import('./vector.ts');
      await runVectorStage(config, sc.outDir, { previous: sc.previous, workDir: sc.workDir });
      return;
    }
    case 'elevation': {
      const { runElevationStage } = await import('./elevation.ts');
      await runElevationStage(config, sc.outDir, { previous: sc.previous });
      return;
    }
    case 'render': {
      const { runRenderStage } = await import('./render.ts');
      await runRenderStage(config, sc.outDir, { shard: opts.shard, workers: opts.workers, previous: sc.previous, workDir: sc.workDir });
      return;
    }
  }
}

/** Outputs of a stage inside a version (removed from a `--only` build's copy before the stage writes them again). */
function stageOutputs(stage: Stage, m: Manifest): string[] {
  switch (stage) {
    case 'vector':
      return Object.values(m.tilesets).filter((t) => t.kind === 'vector').map((t) => t.archive);
    case 'elevation':
      return [...(m.elevation ? [m.elevation.index] : []), ...Object.values(m.tilesets).filter((t) => t.kind === 'terrain').map((t) => t.archive)];
    case 'render':
      return ['styles', 'fonts'];
  }
}

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
 * Run the build into a new version of the output folder (lib/build-version.ts): vector → elevation →
 * render, each skipped when its config section is empty or `--only` names another stage, each
 * reusing what the current version already holds for unchanged inputs (unless `--full`). The version
 * is written under `builds/.incoming-<id>-<pid>/`, renamed to `builds/<id>/` and made current by one
 * atomic rename of `current.json`; then old versions are pruned. A failed or killed build leaves the
 * current version as it was. `--shard` builds write partial archives into the folder itself (no version).
 */
export async function build(config: BuildConfig, opts: BuildOptions = {}): Promise<StageTiming[]> {
  const root = resolve(opts.out ?? config.out);
  await mkdir(root, { recursive: true });
  const started = Date.now();
  if (opts.shard) return runStages(config, { outDir: root, workDir: join(root, '.work') }, opts);
  await removeAbandoned(root);
  const base = await currentVersionDir(root);
  const id = newBuildId();
  const incoming = join(root, BUILDS_DIR, `.incoming-${id}-${process.pid}`);
  await mkdir(incoming, { recursive: true });
  let timings: StageTiming[];
  try {
    if (opts.only && base) {
      // A one-stage build: the other stages' outputs come from the current version unchanged.
      await linkTree(base.dir, incoming, base.id === undefined ? NOT_A_VERSION : new Set(['.work']));
      for (const f of stageOutputs(opts.only, await readManifestOrEmpty(incoming))) await rm(join(incoming, f), { recursive: true, force: true });
    }
    timings = await runStages(config, { outDir: incoming, previous: opts.full ? undefined : base?.dir, workDir: join(root, '.work') }, opts);
    const final = join(root, BUILDS_DIR, id);
    await rename(incoming, final);
    await publishVersion(root, id);
  } catch (e) {
    await rm(incoming, { recursive: true, force: true });
    await rmdir(join(root, BUILDS_DIR)).catch(() => undefined); // only when empty: the first build failed
    throw e;
  }
  const removed = await pruneVersions(root, opts.keep ?? DEFAULT_KEEP_VERSIONS);
  logLine(`build: published ${id} in ${root}${removed.length ? ` (removed old versions ${removed.join(', ')})` : ''} in ${((Date.now() - started) / MS_PER_S).toFixed(1)} s`);
  return timings;
}

/** Run the selected stages into `sc.outDir`, with a timing line each; make sure a manifest exists. */
async function runStages(config: BuildConfig, sc: StageContext, opts: BuildOptions): Promise<StageTiming[]> {
  const timings: StageTiming[] = [];
  for (const stage of STAGES) {
    if (opts.only && opts.only !== stage) continue;
    if (!stageHasWork(config, stage)) {
      logLine(`stage ${stage}: skipped (nothing configured)`);
      continue;
    }
    const t0 = Date.now();
    await runStage(stage, config, sc, opts);
    const tiles = stageTiles(config, stage, await readManifestOrEmpty(sc.outDir));
    const timing: StageTiming = { stage, tiles, seconds: (Date.now() - t0) / MS_PER_S };
    timings.push(timing);
    logLine(timingLine(timing));
  }
  // Make sure a manifest exists even when nothing ran, so `serve` finds a (possibly empty) build.
  await updateManifest(sc.outDir, (m) => opts.manifest?.(m));
  return timings;
}
