/** Shared helpers of the OSM source tests: the Monaco extract, configs, decoded tiles, osmium look-ups. */
import Database from 'better-sqlite3';
import { execFile } from 'node:child_process';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { gunzipSync } from 'node:zlib';
import { VectorTile } from '@mapbox/vector-tile';
import { PbfReader } from 'pbf';
import { currentVersionDir } from '../lib/build-version.ts';
import { gunzipIfGzipped } from '../lib/gzip.ts';
import { build } from '../pipeline/build.ts';
import { ensureWorld, worldCacheDir } from '../pipeline/osm/world.ts';
import { copyOfFixture, sharedFixture } from './fixtures/cache.ts';
import { SAMPLE_INPUTS } from './fixtures/server/sample.ts';
import { SAMPLE } from './render-helpers.ts';
import { readTile, writeConfig } from './render-helpers.ts';

export const MONACO_PBF = join(SAMPLE, 'monaco-latest.osm.pbf');
/** The extract's header bbox. */
export const MONACO_HEADER_BBOX: [number, number, number, number] = [7.409205, 43.72335, 7.448637, 43.75169];
const ROOT = resolve(import.meta.dirname, '..');

/** A raw build config with one tileset built from `source` (and `tileset` fields merged in). */
export function osmConfig(out: string, source: string, tileset: Record<string, unknown> = {}, rest: Record<string, unknown> = {}): Record<string, unknown> {
  return { out, tilesets: { openmaptiles: { source, attribution: '© OpenStreetMap contributors', ...tileset } }, ...rest };
}

/**
 * The vector stage of Monaco's extract built in a new temp folder (with its config.json): that folder
 * and the archive. The build (tilemaker, ~7 CPU s) is a shared fixture (fixtures/cache.ts): made once
 * for the files that need it, each gets its own copy.
 */
export async function buildMonacoVector(prefix: string): Promise<{ out: string; archive: string }> {
  const built = await sharedFixture('osm-monaco-vector', [...SAMPLE_INPUTS, 'data/naturalearth'], async (out) => {
    const { config } = await writeConfig(out, 'config.json', osmConfig(out, MONACO_PBF));
    await build(config, { out, only: 'vector' });
  });
  const out = await copyOfFixture(built, `tilebake-${prefix}-`);
  return { out, archive: join((await currentVersionDir(out))!.dir, 'data', 'openmaptiles.pmtiles') };
}

/**
 * The world's z0–6 archive (pipeline/osm/world.ts) every OSM build of the run uses: built once into the
 * cache folder vitest.config.ts names (TILEBAKE_WORLD_CACHE, beside the other shared fixtures of
 * fixtures/cache.ts), under its lock, and kept while Natural Earth and the code that cuts it are the same.
 */
export async function worldArchive(): Promise<string> {
  return (await ensureWorld(worldCacheDir(join(ROOT, 'build', 'test-cache')), 'test')).path;
}

/** A stored tile of an archive, decoded. */
export async function vectorTile(archive: string, z: number, x: number, y: number): Promise<VectorTile> {
  const data = Buffer.from(await readTile(archive, z, x, y));
  return new VectorTile(new PbfReader(gunzipIfGzipped(data)));
}

/** Tile z/x/y (XYZ) of an MBTiles file (e.g. the official OpenMapTiles tiles), decoded, or undefined. */
export function mbtilesTile(file: string, z: number, x: number, y: number): VectorTile | undefined {
  const db = new Database(file, { readonly: true });
  try {
    const row = db.prepare('SELECT tile_data FROM tiles WHERE zoom_level = ? AND tile_column = ? AND tile_row = ?').get(z, x, 2 ** z - 1 - y) as { tile_data: Buffer } | undefined;
    return row && new VectorTile(new PbfReader(gunzipSync(row.tile_data)));
  } finally {
    db.close();
  }
}

/** Node locations of OSM ways, read from the extract with osmium: way id → [lon, lat][]. */
export async function wayCoords(pbf: string, ids: number[]): Promise<Map<number, [number, number][]>> {
  const { stdout } = await promisify(execFile)('osmium', ['getid', '-r', '-f', 'opl', pbf, ...ids.map((i) => `w${i}`)], { maxBuffer: 1 << 26 });
  const nodes = new Map<string, [number, number]>();
  const ways = new Map<number, [number, number][]>();
  for (const line of stdout.split('\n')) {
    const n = /^n(\d+) .* x(-?[\d.]+) y(-?[\d.]+)$/.exec(line);
    if (n) nodes.set(n[1], [Number(n[2]), Number(n[3])]);
  }
  for (const line of stdout.split('\n')) {
    const w = /^w(\d+) .* N(\S+)$/.exec(line);
    if (w) ways.set(Number(w[1]), w[2].split(',').map((r) => nodes.get(r.slice(1))!));
  }
  return ways;
}
