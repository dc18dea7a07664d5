/**
 * Elevation stage: DEM files → quantised elevation index (`data/elevation.tbei`) and, optionally,
 * terrain-RGB tiles (`data/<id>.pmtiles`), both recorded in the manifest.
 */
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { encodeBlock } from '../lib/elevation/codec.ts';
import { ElevationIndex } from '../lib/elevation/reader.ts';
import { UserError } from '../lib/errors.ts';
import { readManifestOrEmpty, updateManifest } from '../lib/manifest.ts';
import { FileRangeSource } from '../lib/storage.ts';
import { createPool } from '../workers/pool.ts';
import type { QuantiseTask } from '../workers/quantise-block.ts';
import type { BuildConfig } from './config/index.ts';
import type { TerrainConfig } from './config/elevation.ts';
import { expandSources, readDem, type DemSource } from './elevation/sources.ts';
import { writeTerrainTiles } from './elevation/terrain.ts';
import { planLayers, writeIndex, type BlockEncoder, type PrioritisedGrid } from './elevation/writer.ts';
import { createProgress, logLine } from './progress.ts';
import { hashInputs, linkFile, readDeps, recordDeps } from './reuse.ts';

/** Index file, relative to the output folder. */
export const ELEVATION_INDEX_PATH = 'data/elevation.tbei';
/** Decoded blocks kept while rendering terrain tiles. */
const TERRAIN_CACHE_BYTES = 512 * 1024 * 1024;
/** Quantise threads (the stage is I/O- and zlib-bound; two are plenty). */
const MAX_QUANTISE_THREADS = 2;
/** Below this many blocks the pool's start-up costs more than it saves. */
const POOL_MIN_BLOCKS = 16;

/** What the stage needs besides the sources. */
export interface ElevationOptions {
  precision: number;
  terrain: TerrainConfig | false;
  attribution?: string;
}

/** Build the index (and terrain tiles) from `sources` into `outDir` and record them in its manifest. */
export async function buildElevation(outDir: string, sources: DemSource[], opts: ElevationOptions): Promise<void> {
  if (sources.length === 0) throw new UserError('elevation: no DEM files given');
  const files = await expandSources(sources);
  const reading = createProgress('elevation: read DEMs', files.length, 'files');
  const grids: PrioritisedGrid[] = [];
  for (let i = 0; i < files.length; i++) {
    grids.push({ grid: await readDem(files[i]), priority: files[i].priority ?? 0, order: i });
    reading.tick();
  }
  reading.done();
  const plans = planLayers(grids);
  const blocks = plans.reduce((n, p) => n + p.layer.blockRows * p.layer.blockCols, 0);
  const indexPath = join(outDir, ELEVATION_INDEX_PATH);
  const pool = blocks >= POOL_MIN_BLOCKS ? createPool(new URL('../workers/quantise-block.ts', import.meta.url).href, Math.min(MAX_QUANTISE_THREADS, availableParallelism())) : undefined;
  const encode: BlockEncoder = pool
    ? (heights, rows, cols, where) => pool.run({ heights, rows, cols, precision: opts.precision, where } satisfies QuantiseTask, { transferList: [heights.buffer as ArrayBuffer] })
    : async (heights, rows, cols, where) => encodeBlock(heights, rows, cols, opts.precision, where);
  const progress = createProgress('elevation: index', blocks, 'blocks');
  let written;
  try {
    written = await writeIndex(indexPath, plans, opts.precision, encode, progress);
  } finally {
    progress.done();
    await pool?.destroy();
  }
  const { meta, bytes } = written;
  let terrainEntry: Awaited<ReturnType<typeof writeTerrainTiles>> | undefined;
  if (opts.terrain) {
    const index = await ElevationIndex.open(await FileRangeSource.open(indexPath), TERRAIN_CACHE_BYTES);
    try {
      terrainEntry = await writeTerrainTiles(index, opts.terrain, join(outDir, 'data', `${opts.terrain.id}.pmtiles`), opts.attribution);
    } finally {
      await index.close();
    }
  }
  const terrain = opts.terrain;
  await updateManifest(outDir, (m) => {
    m.elevation = { index: ELEVATION_INDEX_PATH, sources: files.map((f) => f.path), bounds: meta.bounds, precision: opts.precision, bytes };
    if (terrain && terrainEntry) m.tilesets[terrain.id] = { archive: `data/${terrain.id}.pmtiles`, ...terrainEntry };
  });
}

/** Version of the index and terrain encoders; bump when their output changes, so they are built again. */
const ELEVATION_VERSION = 'tilebake-elevation/1';

/**
 * `build` stage: the config's elevation section. When the DEM files' bytes and the settings equal
 * those of the previous version (`previous`), its index and terrain tiles are linked, not rebuilt.
 */
export async function runElevationStage(config: BuildConfig, outDir: string, opts: { previous?: string } = {}): Promise<void> {
  const e = config.elevation;
  if (!e) return;
  const settings = { precision: e.precision, terrain: e.terrain, attribution: config.attribution, sources: e.sources };
  const files = await expandSources(e.sources);
  const fingerprint = `${ELEVATION_VERSION}:${await hashInputs(files.map((f) => f.path))}:${JSON.stringify(settings)}`;
  if (opts.previous && (await reuseElevation(opts.previous, outDir, fingerprint, e.terrain ? e.terrain.id : undefined))) return;
  await buildElevation(outDir, e.sources, { precision: e.precision, terrain: e.terrain, attribution: config.attribution });
  await recordDeps(outDir, { elevation: fingerprint });
}

/** Link the previous version's index and terrain archive when its fingerprint matches; false when it does not. */
async function reuseElevation(previous: string, outDir: string, fingerprint: string, terrainId: string | undefined): Promise<boolean> {
  if ((await readDeps(previous)).elevation !== fingerprint) return false;
  const prev = await readManifestOrEmpty(previous);
  const terrain = terrainId === undefined ? undefined : prev.tilesets[terrainId];
  if (!prev.elevation || (terrainId !== undefined && terrain?.kind !== 'terrain')) return false;
  await linkFile(join(previous, prev.elevation.index), join(outDir, prev.elevation.index));
  if (terrain) await linkFile(join(previous, terrain.archive), join(outDir, terrain.archive));
  await updateManifest(outDir, (m) => {
    m.elevation = prev.elevation;
    if (terrainId !== undefined && terrain) m.tilesets[terrainId] = terrain;
  });
  await recordDeps(outDir, { elevation: fingerprint });
  logLine('elevation: DEM files and settings unchanged, index and terrain tiles reused from the previous build');
  return true;
}

/** `tilebake elevation --out DIR DEM...`: the same from files alone. */
export async function elevationCommand(outDir: string, dems: string[], opts: { precision: number; terrain: TerrainConfig | false }): Promise<void> {
  await buildElevation(outDir, dems.map((path) => ({ path })), opts);
}
