/**
 * The layout of a distributed run (a folder or object-storage prefix `RUN`) and its two documents:
 *
 *     RUN/run.json                       written last by `plan`: id, n, config hash, fingerprints, inputs
 *     RUN/inputs/                        what a shard needs to render: config.json, styles, sprites, fonts,
 *                                        and `imagery/<id>/` the images of the imagery tilesets it warps
 *     RUN/base/                          the version `plan` built: manifest.json, tileset archives,
 *                                        elevation index, prepared styles and fonts (shards read the
 *                                        tileset archives from here by ranged reads)
 *     RUN/shards/<i>/<style>/<s>x.<f>.pmtiles   shard i's partial archives (deterministic keys)
 *     RUN/shards/<i>/data/<id>[@2x].pmtiles      shard i's share of an imagery tileset no style draws
 *     RUN/shards/<i>/DONE.json           written last by shard i: every partial with size, sha256, fingerprint
 *     RUN/merged/<style>/<s>x.<f>.pmtiles (+ .json)   `publish --archive` fan-in results
 */
import type { StyleEntry } from '../../lib/manifest.ts';
import type { WritableStore } from '../../lib/object-store.ts';
import type { RasterFormat } from '../../lib/raster-encode.ts';
import { permanent } from '../exit.ts';

export const RUN_FILE = 'run.json';
export const INPUTS_DIR = 'inputs';
export const BASE_DIR = 'base';
const RUN_FORMAT = 'tilebake-run/1';
const DONE_FORMAT = 'tilebake-shard/1';

/** An input of the run (config, tileset sources, DEMs, styles) and its hash when planned. */
export interface RunInput {
  path: string;
  sha256: string;
}

/** `RUN/run.json`. */
export interface RunFile {
  format: typeof RUN_FORMAT;
  /** Run id (a build id: time-sortable); every DONE.json names it. */
  run: string;
  /** Number of shards. */
  n: number;
  /** sha256 of the config file as planned. */
  configHash: string;
  /** Render fingerprint of each raster archive, by `<style>/<scale>x.<format>`. */
  archives: Record<string, string>;
  /**
   * The imagery archives the shards warp (tilesets no style draws; plan warps the others, which the
   * shards' renders read), by `data/<id>` and `data/<id>@2x`: the fingerprint each records.
   */
  imagery?: Record<string, string>;
  /** Style entries of the manifest without archives (publish adds the merged ones), in config order. */
  styles: Record<string, StyleEntry>;
  /** Whether the version has fonts (`fonts/`). */
  fonts: boolean;
  inputs: RunInput[];
  /** tilebake's version. */
  tilebake: string;
}

/** One partial archive as DONE.json lists it. */
export interface ShardArchive {
  /** Its key in the run's store. */
  path: string;
  bytes: number;
  sha256: string;
  fingerprint: string;
  tiles: number;
}

/** `RUN/shards/<i>/DONE.json`: deterministic (no times, no hosts), so two runs of one index write the same bytes. */
export interface DoneFile {
  format: typeof DONE_FORMAT;
  run: string;
  index: number;
  n: number;
  archives: Record<string, ShardArchive>;
  /** The shard's share of each of the run's `imagery` archives. */
  imagery?: Record<string, ShardArchive>;
}

export function newRunFile(fields: Omit<RunFile, 'format'>): RunFile {
  return { format: RUN_FORMAT, ...fields };
}

export function newDoneFile(fields: Omit<DoneFile, 'format'>): DoneFile {
  return { format: DONE_FORMAT, ...fields };
}

/** `<style>/<s>x.<f>` → style id, scale, format. */
export function parseArchiveKey(key: string): { style: string; scale: number; format: RasterFormat } {
  const m = /^(.+)\/([12])x\.(png|jpg|webp)$/.exec(key);
  if (!m) throw permanent(`run.json: field "archives": bad archive key "${key}"`);
  return { style: m[1], scale: Number(m[2]), format: m[3] as RasterFormat };
}

/** `data/<id>[@2x]` (a key of `RunFile.imagery`) → tileset id and scale. */
export function parseImageryKey(key: string): { id: string; scale: 1 | 2 } {
  const m = /^data\/(.+?)(@2x)?$/.exec(key);
  if (!m) throw permanent(`run.json: field "imagery": bad archive key "${key}"`);
  return { id: m[1], scale: m[2] ? 2 : 1 };
}

/** `shards/<i>/DONE.json`. */
export function donePath(index: number): string {
  return `shards/${index}/DONE.json`;
}

/** `shards/<i>/<style>/<s>x.<f>.pmtiles`: where shard `index` uploads its partial of archive `key`. */
export function partialPath(index: number, key: string): string {
  return `shards/${index}/${key}.pmtiles`;
}

/** `merged/<style>/<s>x.<f>.pmtiles`: a merged archive of `publish --archive`. */
export function mergedPath(key: string): string {
  return `merged/${key}.pmtiles`;
}

function where(store: WritableStore, rel: string): string {
  return `${store.location.replace(/\/$/, '')}/${rel}`;
}

function parseJson(text: string, file: string): Record<string, unknown> {
  try {
    const o = JSON.parse(text) as unknown;
    if (typeof o === 'object' && o !== null && !Array.isArray(o)) return o as Record<string, unknown>;
  } catch (e) {
    throw permanent(`${file}: not valid JSON (${(e as Error).message})`);
  }
  throw permanent(`${file}: expected a JSON object`);
}

/** Read and check `RUN/run.json` (exit 78 when missing or not a tilebake run). */
export async function readRunFile(store: WritableStore): Promise<RunFile> {
  const file = where(store, RUN_FILE);
  const bytes = await store.readFile(RUN_FILE);
  if (!bytes) throw permanent(`${file}: not found (run \`tilebake plan --run ${store.location}\` first)`);
  const o = parseJson(Buffer.from(bytes).toString('utf8'), file);
  if (o.format !== RUN_FORMAT) throw permanent(`${file}: field "format": expected "${RUN_FORMAT}" (not a tilebake run)`);
  if (typeof o.run !== 'string' || !/^[\w.-]+$/.test(o.run)) throw permanent(`${file}: field "run": expected a run id`);
  if (!Number.isInteger(o.n) || (o.n as number) < 1) throw permanent(`${file}: field "n": expected a whole number >= 1`);
  if (typeof o.archives !== 'object' || o.archives === null) throw permanent(`${file}: field "archives": expected an object`);
  if (typeof o.styles !== 'object' || o.styles === null) throw permanent(`${file}: field "styles": expected an object`);
  return o as unknown as RunFile;
}

/** Read shard `index`'s DONE.json; undefined when it has not finished. */
export async function readDoneFile(store: WritableStore, index: number): Promise<DoneFile | undefined> {
  const bytes = await store.readFile(donePath(index));
  if (!bytes) return undefined;
  const file = where(store, donePath(index));
  const o = parseJson(Buffer.from(bytes).toString('utf8'), file);
  if (o.format !== DONE_FORMAT || typeof o.run !== 'string' || typeof o.archives !== 'object' || o.archives === null) {
    throw permanent(`${file}: not a tilebake shard record (field "format": expected "${DONE_FORMAT}")`);
  }
  return o as unknown as DoneFile;
}

/**
 * Why shard `index`'s DONE.json does not belong to `run` (undefined when it does): another run's
 * shard, another index or n, other fingerprints or archives.
 */
export function doneMismatch(done: DoneFile, run: RunFile, index: number): string | undefined {
  if (done.run !== run.run) return `uploaded by run ${done.run}, not by this run ${run.run}`;
  if (done.index !== index || done.n !== run.n) return `records shard ${done.index}/${done.n}, expected ${index}/${run.n}`;
  const want = Object.keys(run.archives).sort();
  const got = Object.keys(done.archives).sort();
  if (want.join() !== got.join()) return `lists archives ${got.join(', ') || 'none'}, the run has ${want.join(', ')}`;
  for (const k of want) {
    if (done.archives[k].fingerprint !== run.archives[k]) return `archive ${k} has render fingerprint ${done.archives[k].fingerprint.slice(0, 12)}…, the run ${run.archives[k].slice(0, 12)}…`;
    if (done.archives[k].path !== partialPath(index, k)) return `archive ${k} is at ${done.archives[k].path}, expected ${partialPath(index, k)}`;
  }
  const wantImagery = Object.keys(run.imagery ?? {}).sort();
  const gotImagery = Object.keys(done.imagery ?? {}).sort();
  if (wantImagery.join() !== gotImagery.join()) return `lists imagery archives ${gotImagery.join(', ') || 'none'}, the run has ${wantImagery.join(', ') || 'none'}`;
  for (const k of wantImagery) {
    const a = done.imagery![k];
    if (a.fingerprint !== run.imagery![k]) return `imagery archive ${k} has fingerprint ${a.fingerprint.slice(0, 12)}…, the run ${run.imagery![k].slice(0, 12)}…`;
    if (a.path !== partialPath(index, k)) return `imagery archive ${k} is at ${a.path}, expected ${partialPath(index, k)}`;
  }
  return undefined;
}

/** Every partial archive a shard's DONE.json lists (renders, then imagery), by key. */
export function shardArchives(done: DoneFile): Record<string, ShardArchive> {
  return { ...done.archives, ...done.imagery };
}
