/**
 * The world at z0–6 from Natural Earth (natural-earth.ts), as OpenMapTiles' low zooms: 5,461 tiles
 * that do not depend on any extract, built once per Natural Earth version (and version of this code)
 * into a PMTiles archive and reused by every build and every nightly update of every OSM tileset that
 * finds it. An OSM tileset copies the world's tiles as they are and merges its own data into the ones
 * that cover its extract (source.ts, compose.ts).
 *
 * Where: `<output folder>/.work/world/` (beside the build's other work files, kept across builds), or
 * the folder `TILEBAKE_WORLD_CACHE` names, to share one copy between output folders (the tests do).
 * Safe for builds running at once: one builds it under a lock (lib/dir-lock.ts) while the others wait;
 * the archive appears by rename, complete or not at all; a build killed meanwhile leaves its temp folder,
 * which the next one removes.
 */
import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, rm, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { acquire, release } from '../../lib/dir-lock.ts';
import { Compression, openArchiveFile, PMTilesWriter, TileType } from '../../lib/pmtiles/index.ts';
import { logLine } from '../../lib/progress.ts';
import { canonicalEncode, decodeStored } from './canonical.ts';
import { fillLayers } from './compose.ts';
import { tileIndex } from './cut.ts';
import { NATURAL_EARTH_DIR, NE_MAXZOOM, naturalEarthWorld, WORLD } from './natural-earth.ts';
import { runShapeLayers } from './shape-runs.ts';
import { PROFILE_CONFIG, PROFILE_PROCESS } from './tilemaker.ts';
import { findTool, killLeftovers, OSMIUM, TILEMAKER } from './tools.ts';

/** Bump when the world's tiles change for the same Natural Earth data (the cached copies are then built again). */
const WORLD_VERSION = 'tilebake-world/1';
/** The highest zoom the world has. */
export const WORLD_MAXZOOM = NE_MAXZOOM;
const MS_PER_S = 1000;

/** The environment variable naming a world cache folder shared by output folders. */
export const WORLD_CACHE_ENV = 'TILEBAKE_WORLD_CACHE';

/** The world cache folder for builds whose work folder root is `workRoot` (`<out>/.work`). */
export function worldCacheDir(workRoot: string): string {
  return process.env[WORLD_CACHE_ENV] || join(workRoot, 'world');
}

/** The world cache folder of an OSM work folder: beside the `.work` folder it lies in (`worldCacheDir`), else beside it. */
export function worldCacheFor(workDir: string): string {
  for (let dir = workDir; dir !== dirname(dir); dir = dirname(dir)) if (basename(dir) === '.work') return worldCacheDir(dir);
  return worldCacheDir(dirname(workDir));
}

let keyMemo: Promise<string> | undefined;
/** What the world is made of: this code's version, the Natural Earth tables and the profile (a hash). */
export function worldKey(): Promise<string> {
  keyMemo ??= (async () => {
    const h = createHash('sha256').update(`${WORLD_VERSION}\0`);
    for (const name of (await readdir(NATURAL_EARTH_DIR)).filter((n) => n.endsWith('.fgb')).sort()) {
      h.update(`${name}\0`).update(await readFile(join(NATURAL_EARTH_DIR, name))).update('\0');
    }
    for (const f of [PROFILE_CONFIG, PROFILE_PROCESS]) h.update(await readFile(f)).update('\0');
    return h.digest('hex').slice(0, 16);
  })();
  return keyMemo;
}

const exists = (p: string) => stat(p).then(() => true, () => false);

/** What `ensureWorld` found or did. */
export interface WorldArchive {
  path: string;
  /** True when this call built it. */
  built: boolean;
  seconds: number;
}

/** The world archive in `cacheDir`, built first when it is not there (see the module comment). */
export async function ensureWorld(cacheDir: string, label: string): Promise<WorldArchive> {
  const t0 = performance.now();
  const key = await worldKey();
  const path = join(cacheDir, `world-${key}.pmtiles`);
  const found = () => ({ path, built: false, seconds: (performance.now() - t0) / MS_PER_S });
  if (await exists(path)) return found();
  await mkdir(cacheDir, { recursive: true });
  const lock = `${path}.lock`;
  if (!(await acquire(lock, path))) return found();
  try {
    if (await exists(path)) return found();
    logLine(`${label}: building the world's z0-${WORLD_MAXZOOM} from Natural Earth once, into ${path}`);
    const work = `${path}.work`;
    const pidFile = join(work, 'pids');
    await killLeftovers(pidFile, work);
    await rm(work, { recursive: true, force: true });
    await mkdir(work, { recursive: true });
    try {
      const tiles = await buildWorld(path, work, pidFile, label);
      logLine(`${label}: the world's z0-${WORLD_MAXZOOM}: ${tiles} tiles in ${((performance.now() - t0) / MS_PER_S).toFixed(1)} s`);
    } finally {
      await rm(work, { recursive: true, force: true });
    }
    await pruneOthers(cacheDir, path);
    return { path, built: true, seconds: (performance.now() - t0) / MS_PER_S };
  } finally {
    await release(lock);
  }
}

/** Remove worlds of other keys (older code or data) that no build is making or reading now. */
async function pruneOthers(cacheDir: string, keep: string): Promise<void> {
  for (const name of await readdir(cacheDir)) {
    const m = /^(world-[0-9a-f]{16}\.pmtiles)(\.work)?$/.exec(name);
    const path = join(cacheDir, name);
    if (!m || join(cacheDir, m[1]) === keep || (await exists(join(cacheDir, `${m[1]}.lock`)))) continue;
    await rm(path, { recursive: true, force: true });
  }
}

/** Build the world archive at `output`: Natural Earth cut and written as shapefiles, tilemaker runs, fills, canonical tiles. */
async function buildWorld(output: string, work: string, pidFile: string, label: string): Promise<number> {
  const [tilemaker, osmium] = [await findTool(TILEMAKER), await findTool(OSMIUM)];
  const { layers, fills } = await naturalEarthWorld(work);
  const made = await runShapeLayers({ tilemaker, osmium, box: WORLD, layers, workDir: work, pidFile, label: `${label} world` });
  const writer = await PMTilesWriter.create(output, {
    tileType: TileType.Mvt,
    tileCompression: Compression.Gzip,
    metadata: { name: 'Natural Earth', description: `tilebake's world at z0-${WORLD_MAXZOOM}`, attribution: 'Made with Natural Earth', key: await worldKey() },
    bounds: WORLD,
    center: [0, 0, 0],
  });
  let n = 0;
  try {
    for (let z = 0; z <= WORLD_MAXZOOM; z++) {
      for (let y = 0; y < 2 ** z; y++) {
        for (let x = 0; x < 2 ** z; x++) {
          const t = made.get(`${z}/${x}/${y}`);
          const f = fills.get(z)?.get(tileIndex(z, x, y));
          const data = canonicalEncode([...(t ? [decodeStored(t)] : []), ...(f ? [fillLayers(f)] : [])], x, y);
          if (!data) continue;
          await writer.addTile(z, x, y, data);
          n++;
        }
      }
    }
    await writer.finish();
  } catch (e) {
    await writer.abort();
    throw e;
  }
  return n;
}

/** The world's tiles, read as they are stored (canonical, gzipped). */
export interface WorldTiles {
  get(z: number, x: number, y: number): Promise<Uint8Array | undefined>;
  close(): Promise<void>;
}

/** Open the world archive at `path`. */
export async function openWorld(path: string): Promise<WorldTiles> {
  const archive = await openArchiveFile(path);
  return {
    get: (z, x, y) => archive.getTile(z, x, y),
    close: () => archive.close(),
  };
}
