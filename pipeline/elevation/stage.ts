/**
 * Elevation stage: DEM files → quantised elevation index (`data/elevation.tbei`) and, optionally,
 * terrain-RGB tiles, contour lines, hillshade and colour relief (`data/<id>.pmtiles`), all recorded
 * in the manifest.
 * Inputs are fingerprinted by content: an unchanged DEM set keeps its index, unchanged outputs are
 * kept, and a killed build resumes (index chunks, tile batches) where it stopped.
 */
import { join } from 'node:path';
import { rm, stat } from 'node:fs/promises';
import { availableCpus } from '../../lib/cpus.ts';
import type { IndexMeta } from '../../lib/elevation/format.ts';
import { ElevationIndex } from '../../lib/elevation/reader.ts';
import { UserError } from '../../lib/errors.ts';
import { readManifestOrEmpty, updateManifest, type TilesetEntry } from '../../lib/manifest.ts';
import { moduleUrl } from '../../lib/package-root.ts';
import { FileRangeSource } from '../../lib/storage.ts';
import { createPool } from '../../workers/pool.ts';
import type { ElevationTask, GridOut, GridTask, IndexRef, TileOut } from '../../workers/elevation-tiles.ts';
import type { EncodedBlock } from '../../lib/elevation/codec.ts';
import type { BuildConfig } from '../config/index.ts';
import type { ContoursConfig, HillshadeConfig, ReliefConfig, TerrainConfig } from '../config/elevation.ts';
import { renderSchema } from '../config/render.ts';
import type { EncoderSettings } from '../../lib/raster-encode.ts';
import { IndexCheckpoint } from './checkpoint.ts';
import { writeContourTiles } from './contours.ts';
import { describeInputs, indexFingerprint } from './fingerprint.ts';
import type { DemInfo } from './grid.ts';
import { expandSources, probeDem, readDem, type DemSource } from './sources.ts';
import { DEFAULT_RELIEF_RAMP, readRamp } from './relief-ramp.ts';
import { writeHillshadeTiles, writeReliefTiles } from './shaded.ts';
import { defaultTerrainMaxzoom, writeTerrainTiles } from './terrain.ts';
import type { IndexTileset, TileJobResult } from './tiles.ts';
import { planLayers, writeIndex, type BlockEncoder } from './writer.ts';
import { createProgress, logLine } from '../../lib/progress.ts';
import { hashInputs, linkFile, readDeps, recordDeps } from '../reuse.ts';

/** Index file, relative to the output folder. */
export const ELEVATION_INDEX_PATH = 'data/elevation.tbei';
/** Work files of a running (or killed) elevation build, relative to the output folder. */
const WORK_DIR = '.work/elevation';
/** Decoded index blocks each pool thread keeps while making tiles. */
const WORKER_BLOCK_CACHE_BYTES = 256 * 1024 * 1024;
/** DEM files probed at once. */
const PROBE_CONCURRENCY = 8;
const MB = 1024 * 1024;

/** What the stage needs besides the sources. */
export interface ElevationOptions {
  precision: number;
  /** Terrain tiles; `maxzoom` defaults to the DEMs' resolution. */
  terrain: TerrainConfig | false;
  contours?: ContoursConfig | false;
  /** Hillshade tiles (GDAL); zooms default to the terrain tiles' minzoom … the DEMs' resolution. */
  hillshade?: HillshadeConfig | false;
  /** Colour-relief tiles (GDAL) with the ramp file `ramp` (default: DEFAULT_RELIEF_RAMP). */
  relief?: ReliefConfig | false;
  /** PNG/WebP settings of hillshade and relief tiles (default: the render stage's defaults). */
  encode?: EncoderSettings;
  attribution?: string;
  /** Bound on the DEM grids held while indexing (default 1 GiB, or `TILEBAKE_ELEVATION_CACHE_MB`). */
  gridCacheBytes?: number;
  /** Pool threads (default: one per core). */
  threads?: number;
  /** How often a killed index build's progress is recorded, ms (default 2000). */
  checkpointMs?: number;
}

/** What a run did (for logs, tests and the benchmark). */
export interface ElevationStats {
  /** True when the index was up to date and kept. */
  indexKept: boolean;
  /** Index chunks written by this run, and kept from a killed earlier run. */
  chunks: number;
  resumedChunks: number;
  /** DEM grids read while indexing. */
  gridLoads: number;
  indexSeconds: number;
  terrain?: TileJobResult & { seconds: number };
  contours?: TileJobResult & { seconds: number };
  hillshade?: TileJobResult & { seconds: number };
  relief?: TileJobResult & { seconds: number };
}

/** The metadata of an existing index, or undefined (none, or unreadable). */
async function readIndexMeta(path: string): Promise<IndexMeta | undefined> {
  const src = await FileRangeSource.open(path).catch(() => undefined);
  if (!src) return undefined;
  try {
    return (await ElevationIndex.open(src, 0)).meta;
  } catch {
    return undefined;
  } finally {
    await src.close();
  }
}

/** Probe every file (where its posts lie), a few at once. */
async function probeAll(files: DemSource[]): Promise<DemInfo[]> {
  const out: DemInfo[] = new Array(files.length);
  let next = 0;
  const lane = async () => {
    while (next < files.length) {
      const i = next++;
      out[i] = await probeDem(files[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(PROBE_CONCURRENCY, files.length) }, lane));
  return out;
}

/** Read a source's heights, checking they lie where the probe said (the file may have changed since). */
async function loadChecked(file: DemSource, info: DemInfo) {
  const g = await readDem(file);
  if (g.rows !== info.rows || g.cols !== info.cols || g.originLat !== info.originLat || g.originLon !== info.originLon) {
    throw new UserError(`${file.path}: changed while the index was being built (rerun the build)`);
  }
  return g;
}

function gridCacheBytes(opts: ElevationOptions): number | undefined {
  if (opts.gridCacheBytes) return opts.gridCacheBytes;
  const env = Number(process.env.TILEBAKE_ELEVATION_CACHE_MB);
  return env > 0 ? env * MB : undefined;
}

const seconds = (t0: number) => (performance.now() - t0) / 1000;

/**
 * Zooms of a hillshade or relief tileset: as configured, else from the terrain tiles' minzoom (0
 * without them) to their maxzoom or the DEMs' resolution, whichever is deeper.
 */
export function shadedZooms(cfg: { minzoom?: number; maxzoom?: number }, terrain: { minzoom: number; maxzoom: number } | undefined, meta: IndexMeta): { minzoom: number; maxzoom: number } {
  const minzoom = cfg.minzoom ?? terrain?.minzoom ?? 0;
  const maxzoom = cfg.maxzoom ?? Math.max(minzoom, terrain?.maxzoom ?? 0, defaultTerrainMaxzoom(meta));
  return { minzoom, maxzoom };
}

/** Build the index (and terrain and contour tiles) from `sources` into `outDir` and record them in its manifest. */
export async function buildElevation(outDir: string, sources: DemSource[], opts: ElevationOptions): Promise<ElevationStats> {
  if (sources.length === 0) throw new UserError('elevation: no DEM files given');
  const files = await expandSources(sources);
  // A bad ramp stops the build before any work.
  const rampText = opts.relief ? (opts.relief.ramp ? await readRamp(opts.relief.ramp) : DEFAULT_RELIEF_RAMP) : undefined;
  const indexPath = join(outDir, ELEVATION_INDEX_PATH);
  const workDir = join(outDir, WORK_DIR);
  const threads = opts.threads ?? availableCpus();
  // The pool's threads start while the inputs are checked.
  const pool = createPool(moduleUrl('workers/elevation-tiles.ts'), threads);
  const stats: ElevationStats = { indexKept: false, chunks: 0, resumedChunks: 0, gridLoads: 0, indexSeconds: 0 };
  const entries: Record<string, TilesetEntry> = {};
  let meta: IndexMeta, bytes: number, fingerprint: string;
  try {
    const t0 = performance.now();
    const previous = await readIndexMeta(indexPath);
    const checking = createProgress('elevation: fingerprint DEMs', files.length, 'files');
    const inputs = await describeInputs(files, previous?.inputs, () => checking.tick());
    checking.done();
    fingerprint = indexFingerprint(files, inputs, opts.precision);
    if (previous?.fingerprint === fingerprint) {
      logLine(`elevation: ${indexPath} is up to date (same DEM contents and settings), kept`);
      stats.indexKept = true;
      meta = previous;
      bytes = (await stat(indexPath)).size;
    } else {
      const infos = await probeAll(files);
      const plans = planLayers(infos.map((dem, order) => ({ dem, priority: files[order].priority ?? 0, order })));
      const encode: BlockEncoder = (heights, rows, cols, where) =>
        pool.run({ op: 'quantise', heights, rows, cols, precision: opts.precision, where } satisfies ElevationTask, { transferList: [heights.buffer as ArrayBuffer] }) as Promise<EncodedBlock>;
      const progress = createProgress('elevation: index', files.length, 'files');
      let written;
      try {
        written = await writeIndex(indexPath, plans, {
          precision: opts.precision,
          encode,
          load: (order) => loadChecked(files[order], infos[order]),
          gridCacheBytes: gridCacheBytes(opts),
          progress,
          extra: { fingerprint, inputs },
          checkpoint: await IndexCheckpoint.resumable(workDir, fingerprint, opts.checkpointMs),
        });
      } finally {
        progress.done();
      }
      if (written.resumedChunks > 0) {
        logLine(`elevation: resumed the index build: ${written.resumedChunks} of ${written.resumedChunks + written.chunks} chunks were already written by an earlier run`);
      }
      ({ meta, bytes } = written);
      Object.assign(stats, { chunks: written.chunks, resumedChunks: written.resumedChunks, gridLoads: written.gridLoads });
    }
    stats.indexSeconds = seconds(t0);
    if (opts.terrain || opts.contours || opts.hillshade || opts.relief) {
      const index: IndexRef = { path: indexPath, id: fingerprint, cacheBytes: WORKER_BLOCK_CACHE_BYTES };
      const src = await FileRangeSource.open(indexPath);
      const boxes = await (await ElevationIndex.open(src, 0)).dataBoxes().finally(() => src.close());
      const job = <Task, Out = TileOut>(id: string, run: (task: Task) => ElevationTask): IndexTileset<Task, Out> => ({
        index, meta, boxes, threads, attribution: opts.attribution,
        archive: join(outDir, 'data', `${id}.pmtiles`),
        journal: join(workDir, `${id}.journal`),
        run: (task) => pool.run(run(task)) as Promise<Out[]>,
      });
      const grids = (id: string) => job<GridTask, GridOut>(id, (t) => ({ op: 'grids', ...t }));
      type Written = Awaited<ReturnType<typeof writeTerrainTiles>>;
      const outputs: { id: string; kind: 'terrain' | 'contours' | 'hillshade' | 'relief'; write: () => Promise<Written> }[] = [];
      const terrainZooms = opts.terrain ? { minzoom: opts.terrain.minzoom, maxzoom: opts.terrain.maxzoom ?? Math.max(opts.terrain.minzoom, defaultTerrainMaxzoom(meta)) } : undefined;
      if (opts.terrain) {
        const cfg = { ...opts.terrain, maxzoom: terrainZooms!.maxzoom };
        outputs.push({ id: cfg.id, kind: 'terrain', write: () => writeTerrainTiles(cfg, job(cfg.id, (t) => ({ op: 'terrain', ...t }))) });
      }
      if (opts.contours) {
        const cfg = opts.contours;
        outputs.push({ id: cfg.id, kind: 'contours', write: () => writeContourTiles(cfg, job(cfg.id, (t) => ({ op: 'contours', ...t }))) });
      }
      const encode = opts.encode ?? renderSchema.parse({});
      if (opts.hillshade) {
        const cfg = { ...opts.hillshade, ...shadedZooms(opts.hillshade, terrainZooms, meta) };
        outputs.push({ id: cfg.id, kind: 'hillshade', write: () => writeHillshadeTiles(cfg, grids(cfg.id), encode) });
      }
      if (opts.relief && rampText !== undefined) {
        const { ramp: _file, ...relief } = opts.relief;
        const cfg = { ...relief, rampText, ...shadedZooms(relief, terrainZooms, meta) };
        outputs.push({ id: cfg.id, kind: 'relief', write: () => writeReliefTiles(cfg, grids(cfg.id), encode) });
      }
      for (const o of outputs) {
        const t1 = performance.now();
        const { result, ...entry } = await o.write();
        entries[o.id] = { archive: `data/${o.id}.pmtiles`, ...entry };
        stats[o.kind] = { ...result, seconds: seconds(t1) };
      }
    }
  } finally {
    await pool.destroy();
  }
  await rm(workDir, { recursive: true, force: true });
  await updateManifest(outDir, (m) => {
    // Tilesets an earlier run of this stage wrote and this one did not (turned off or renamed) go.
    for (const id of m.elevation?.tilesets ?? []) if (!entries[id]) delete m.tilesets[id];
    m.elevation = { index: ELEVATION_INDEX_PATH, sources: files.map((f) => f.path), bounds: meta.bounds, precision: opts.precision, bytes, fingerprint, tilesets: Object.keys(entries) };
    Object.assign(m.tilesets, entries);
  });
  return stats;
}

/** Version of the index, terrain, contour, hillshade and relief encoders; bump when their output changes, so they are built again. */
const ELEVATION_VERSION = 'tilebake-elevation/2';

/**
 * `build` stage: the config's elevation section. When the DEM files' bytes and the settings equal
 * those of the previous version (`previous`), its index, terrain and contour tiles are linked, not
 * rebuilt (undefined is returned then, as without an elevation section).
 */
export async function runElevationStage(config: BuildConfig, outDir: string, opts: { previous?: string } = {}): Promise<ElevationStats | undefined> {
  const e = config.elevation;
  if (!e) return undefined;
  const attribution = e.attribution ?? config.attribution;
  const { png, jpeg, webp } = config.render;
  const shaded = e.hillshade || e.relief ? { png, jpeg, webp } : undefined;
  const settings = { precision: e.precision, terrain: e.terrain, contours: e.contours, hillshade: e.hillshade, relief: e.relief, shaded, attribution, sources: e.sources };
  const files = await expandSources(e.sources);
  // The relief's ramp file by content, beside the DEMs.
  const ramp = e.relief && e.relief.ramp ? [e.relief.ramp] : [];
  const fingerprint = `${ELEVATION_VERSION}:${await hashInputs([...files.map((f) => f.path), ...ramp])}:${JSON.stringify(settings)}`;
  if (opts.previous && (await reuseElevation(opts.previous, outDir, fingerprint))) return undefined;
  const stats = await buildElevation(outDir, e.sources, { precision: e.precision, terrain: e.terrain, contours: e.contours, hillshade: e.hillshade, relief: e.relief, encode: shaded, attribution });
  await recordDeps(outDir, { elevation: fingerprint });
  return stats;
}

/** Link the previous version's index and elevation tilesets when its fingerprint matches; false when it does not. */
async function reuseElevation(previous: string, outDir: string, fingerprint: string): Promise<boolean> {
  if ((await readDeps(previous)).elevation !== fingerprint) return false;
  const prev = await readManifestOrEmpty(previous);
  if (!prev.elevation) return false;
  const ids = prev.elevation.tilesets ?? [];
  if (ids.some((id) => !prev.tilesets[id])) return false;
  await linkFile(join(previous, prev.elevation.index), join(outDir, prev.elevation.index));
  for (const id of ids) await linkFile(join(previous, prev.tilesets[id].archive), join(outDir, prev.tilesets[id].archive));
  await updateManifest(outDir, (m) => {
    m.elevation = prev.elevation;
    for (const id of ids) m.tilesets[id] = prev.tilesets[id];
  });
  await recordDeps(outDir, { elevation: fingerprint });
  logLine(`elevation: DEM files and settings unchanged, index and ${ids.length ? ids.join(', ') : 'no'} tiles reused from the previous build`);
  return true;
}

/** `tilebake elevation --out DIR DEM...`: the same from files alone. */
export async function elevationCommand(outDir: string, dems: string[], opts: Omit<ElevationOptions, 'attribution'>): Promise<ElevationStats> {
  return buildElevation(outDir, dems.map((path) => ({ path })), opts);
}
