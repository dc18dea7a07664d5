import { mkdir } from 'node:fs/promises';
import { resolve } from 'node:path';
import { readManifestOrEmpty, updateManifest, type Manifest } from '../lib/manifest.ts';
import type { BuildConfig } from './config/index.ts';
import { logLine } from './progress.ts';

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
async function runStage(stage: Stage, config: BuildConfig, outDir: string, opts: BuildOptions): Promise<void> {
  switch (stage) {
    case 'vector': {
      const { runVectorStage } = await import('./vector.ts');
      await runVectorStage(config, outDir);
      return;
    }
    case 'elevation': {
      const { runElevationStage } = await import('./elevation.ts');
      await runElevationStage(config, outDir);
      return;
    }
    case 'render': {
      const { runRenderStage } = await import('./render.ts');
      await runRenderStage(config, outDir, { shard: opts.shard, workers: opts.workers });
      return;
    }
  }
}

/** `stage vector: 23 tiles in 0.4 s` (Planetiler style). */
export function timingLine(t: StageTiming): string {
  return `stage ${t.stage}: ${t.tiles} tiles in ${t.seconds.toFixed(1)} s`;
}

/**
 * Run the build: vector → elevation → render, each skipped when its config section is empty
 * or `--only` names another stage; every stage records its outputs in `<out>/manifest.json`.
 */
export async function build(config: BuildConfig, opts: BuildOptions = {}): Promise<StageTiming[]> {
  const outDir = resolve(opts.out ?? config.out);
  await mkdir(outDir, { recursive: true });
  const timings: StageTiming[] = [];
  const started = Date.now();
  for (const stage of STAGES) {
    if (opts.only && opts.only !== stage) continue;
    if (!stageHasWork(config, stage)) {
      logLine(`stage ${stage}: skipped (nothing configured)`);
      continue;
    }
    const t0 = Date.now();
    await runStage(stage, config, outDir, opts);
    const tiles = stageTiles(config, stage, await readManifestOrEmpty(outDir));
    const timing: StageTiming = { stage, tiles, seconds: (Date.now() - t0) / MS_PER_S };
    timings.push(timing);
    logLine(timingLine(timing));
  }
  // Make sure a manifest exists even when nothing ran, so `serve` finds a (possibly empty) build.
  await updateManifest(outDir, () => {});
  logLine(`build: ${outDir} in ${((Date.now() - started) / MS_PER_S).toFixed(1)} s`);
  return timings;
}
