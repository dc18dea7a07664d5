/**
 * A build stage as a record: its name, whether the config gives it work, what it reads and writes
 * inside a version, how it runs and how it counts its tiles. `build`, `plan` and `shard` order and run
 * stages through this interface only (pipeline/stages/ holds one module per stage).
 */
import type { Manifest } from '../lib/manifest.ts';
import type { BuildConfig } from './config/index.ts';
import type { ImageryStageOptions } from './imagery/stage.ts';
import type { RenderStageOptions } from './render/stage.ts';
import type { VectorStageOptions } from './vector/stage.ts';

/** Stage names, in the order a build runs them. */
export const STAGE_NAMES = ['vector', 'imagery', 'elevation', 'render'] as const;
export type StageName = (typeof STAGE_NAMES)[number];

/** What every stage gets besides the config: where to write, what it may reuse, where to keep work files. */
export interface StageContext {
  /** The new version's folder. */
  outDir: string;
  /** The current version's folder when the build may reuse it (not with --full). */
  previous?: string;
  /** Resumable work files (journals, OSM intermediates): `<out>/.work`, shared by successive builds. */
  workDir: string;
  /** Render pool size (render stage). */
  workers?: number;
  /** Vector stage only: OSM tilesets whose source is the previous version's with change files applied (`tilebake update`). */
  vectorPatches?: VectorStageOptions['patches'];
  /** Render stage only: one shard of a distributed run (`tilebake shard`), see RenderStageOptions. */
  render?: Pick<RenderStageOptions, 'shard' | 'dataStore' | 'expect'>;
  /** Imagery stage only: which tilesets, one shard of a distributed run, or the tilesets a run's plan leaves to the shards (pipeline/run/). */
  imagery?: Pick<ImageryStageOptions, 'only' | 'shard' | 'planOnly'>;
}

export interface Stage {
  readonly name: StageName;
  /** True when the config gives the stage something to do. */
  hasWork(config: BuildConfig): boolean | Promise<boolean>;
  /** Files and folders of a version (relative paths) the stage reads: other stages' outputs it needs. */
  reads(m: Manifest): string[];
  /** Files and folders of a version (relative paths) the stage writes, according to its manifest. */
  writes(m: Manifest): string[];
  /** Run the stage into `sc.outDir` (its module imports heavy dependencies lazily). */
  run(config: BuildConfig, sc: StageContext): Promise<void>;
  /** Tiles the stage's configured outputs hold according to the manifest (for the timing line). */
  tiles(config: BuildConfig, m: Manifest): number;
}

/** Archives of the manifest's tilesets of one kind (a raster tileset's @2x archive too). */
export function tilesetArchives(m: Manifest, kind: Manifest['tilesets'][string]['kind']): string[] {
  return Object.values(m.tilesets).filter((t) => t.kind === kind).flatMap((t) => [t.archive, ...(t.hidpi ? [t.hidpi.archive] : [])]);
}

/**
 * What each configured tileset's source holds (pipeline/sources/index.ts tilesetSourceKind), in config
 * order: which of the vector and imagery stages builds it.
 */
export async function tilesetSourceKinds(config: BuildConfig): Promise<('vector' | 'raster' | 'imagery')[]> {
  const { namingTileset, tilesetSourceKind } = await import('./sources/index.ts');
  const out: ('vector' | 'raster' | 'imagery')[] = [];
  for (const t of Object.values(config.tilesets)) {
    try {
      out.push(await tilesetSourceKind(t.source));
    } catch (e) {
      throw namingTileset(e, t.id);
    }
  }
  return out;
}
