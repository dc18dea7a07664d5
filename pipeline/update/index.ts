/**
 * `tilebake update`: bring the OSM tilesets of a build up to the replication server's newest state
 * and publish a new version through the ordinary incremental build.
 *
 * Per OSM tileset, in `<out>/.work/update/<id>/`:
 *
 *     <seq>.osm.pbf       the build's own copy of the extract at replication sequence <seq>
 *     extract.osm.pbf     a link to the copy the build reads (a stable path: an unchanged copy is not re-packed)
 *     diffs/<key>/<seq>.osc.gz  downloaded, verified change files (and <seq>.state.txt); <key>: a hash of the server's URL
 *
 * The current version's manifest (`osm.<id>.sequence`) says which copy is current; the copy
 * at the new sequence is written beside it and becomes current only with the version that shows it.
 * A killed update leaves the current version and its copy as they were; the next run uses the
 * verified downloads and applies them again.
 */
import { copyFile, link, mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { tempPathFor } from '../../lib/atomic.ts';
import { currentVersionDir } from '../../lib/build-version.ts';
import { UserError } from '../../lib/errors.ts';
import { readManifestOrEmpty, setOsmState, type Manifest, type OsmDataState } from '../../lib/manifest.ts';
import { build, type StageTiming } from '../build.ts';
import type { OsmPatch } from '../vector/patch.ts';
import type { BuildConfig } from '../config/index.ts';
import { copyWithHeaderBBox } from '../osm/pbf-bounds.ts';
import { readOsmHeader } from '../osm/pbf-header.ts';
import { findTool, OSMIUM, runTool, ToolError } from '../osm/tools.ts';
import { logLine, stepsText, timeStep, type Step } from '../../lib/progress.ts';
import { linkFile } from '../reuse.ts';
import { downloadChanges, removeAppliedChanges, removeTempFiles } from './diffs.ts';
import { withUpdateLock } from './lock.ts';
import { fetchState, folderUrl, type ReplicationState } from './replication.ts';

/** Options of `tilebake update`. */
export interface UpdateOptions {
  /** Output folder; overrides the config's `out`. */
  out?: string;
  /** Versions kept after publishing. */
  keep?: number;
  /** Render pool size. */
  workers?: number;
}

/** What happened to one OSM tileset. */
export interface TilesetUpdate {
  id: string;
  from: ReplicationState;
  to: ReplicationState;
  /** Change files applied and the objects they change. */
  files: number;
  changes: number;
  /** The replication folder they came from. */
  base: string;
}

/** The result of an update: the tilesets and, when a version was published, the build's stage timings. */
export interface UpdateResult {
  tilesets: TilesetUpdate[];
  published: boolean;
  timings: StageTiming[];
}

/** Folder of the update's work files for tileset `id`. */
export function updateDir(root: string, id: string): string {
  return join(root, '.work', 'update', id);
}

const exists = (p: string) => stat(p).then(() => true, () => false);

/** Where the tileset's replication state and folder come from, or a UserError saying what is missing. */
function replicationOf(config: BuildConfig, id: string, recorded: OsmDataState | undefined): { base: string; current: ReplicationState } {
  const t = config.tilesets[id];
  const base = t.replication ?? recorded?.replication;
  if (!base) {
    throw new UserError(
      `${t.source}: the extract has no replication information (no osmosis_replication_base_url in its header) and none is configured: set $.tilesets.${id}.replication in ${config.file} to the URL of its updates folder (the one holding state.txt)`,
    );
  }
  if (recorded?.sequence === undefined || recorded.timestamp === undefined) {
    throw new UserError(
      `${t.source}: the current build does not record which replication sequence its data shows (the extract's header has no osmosis_replication_sequence_number and timestamp): build from an extract that has them (e.g. Geofabrik's), then update`,
    );
  }
  return { base: folderUrl(base), current: { sequence: recorded.sequence, timestamp: recorded.timestamp } };
}

/** The build's copy of the extract at `seq`: made from the configured source the first time (when it is at that sequence). */
async function currentCopy(dir: string, source: string, seq: number): Promise<string> {
  const copy = join(dir, `${seq}.osm.pbf`);
  if (await exists(copy)) return copy;
  const at = (await readOsmHeader(source).catch(() => undefined))?.replication?.sequence;
  if (at !== seq) {
    throw new UserError(`${copy}: missing, and ${source} is at sequence ${at ?? 'unknown'}, not the current build's ${seq}: run \`tilebake build\` with the extract again, then update`);
  }
  const tmp = tempPathFor(copy);
  await mkdir(dir, { recursive: true });
  await copyFile(source, tmp);
  await rename(tmp, copy);
  return copy;
}

/** Write the copy at `to` from the copy at `from` and the change files (osmium apply-changes; the header keeps the extract's bbox). */
async function applyChanges(osmium: string, dir: string, fromCopy: string, files: string[], to: ReplicationState, base: string, changes: number): Promise<string> {
  const next = join(dir, `${to.sequence}.osm.pbf`);
  if (changes === 0) {
    // Nights without a change: the same data under the new sequence (a link, nothing rewritten or re-packed).
    await linkFile(fromCopy, next);
    return next;
  }
  const applied = tempPathFor(next);
  const final = tempPathFor(next);
  try {
    await runTool(osmium, [
      'apply-changes', '--no-progress', '-O', '-f', 'pbf', '-o', applied,
      `--output-header=osmosis_replication_sequence_number=${to.sequence}`,
      `--output-header=osmosis_replication_timestamp=${to.timestamp}`,
      `--output-header=osmosis_replication_base_url=${base.replace(/\/$/, '')}`,
      fromCopy, ...files,
    ], { pidFile: join(dir, '.pids') });
    const bbox = (await readOsmHeader(fromCopy)).bbox;
    if (bbox) await copyWithHeaderBBox(applied, final, bbox);
    else await rename(applied, final);
    await rename(final, next);
  } catch (e) {
    if (e instanceof ToolError) throw new UserError(`${fromCopy}: osmium apply-changes failed (${e.message})`, { cause: e });
    throw e;
  } finally {
    await rm(applied, { force: true });
    await rm(final, { force: true });
    await rm(join(dir, '.pids'), { force: true });
  }
  return next;
}

/** Point `<dir>/extract.osm.pbf` (what the build reads) at `copy`. */
async function useCopy(dir: string, copy: string): Promise<string> {
  const source = join(dir, 'extract.osm.pbf');
  const tmp = tempPathFor(source);
  await link(copy, tmp).catch(() => copyFile(copy, tmp));
  await rename(tmp, source);
  return source;
}

/** Remove the copies other than the one at `keep` (after the version showing it is published). */
async function removeOtherCopies(dir: string, keep: number): Promise<void> {
  for (const name of await readdir(dir)) {
    const m = /^(\d+)\.osm\.pbf$/.exec(name);
    if (m && Number(m[1]) !== keep) await rm(join(dir, name), { force: true });
  }
}

/** OSM tilesets of the config: an `.osm.pbf` source, or one the current version records replication state of. */
function osmTilesets(config: BuildConfig, recorded: Manifest['osm'] = {}): string[] {
  return Object.values(config.tilesets).filter((t) => /\.osm\.pbf$/i.test(t.source) || recorded[t.id]).map((t) => t.id);
}

/** Run `tilebake update` (see the module comment). */
export async function update(config: BuildConfig, opts: UpdateOptions = {}): Promise<UpdateResult> {
  const root = resolve(opts.out ?? config.out);
  const current = await currentVersionDir(root);
  if (!current) throw new UserError(`${root}: no build to update (run \`tilebake build --config ${config.file}\` first)`);
  return withUpdateLock(root, () => updateLocked(config, root, current.dir, opts));
}

/** `update` once it holds the output folder's update lock. */
async function updateLocked(config: BuildConfig, root: string, currentDir: string, opts: UpdateOptions): Promise<UpdateResult> {
  const manifest = await readManifestOrEmpty(currentDir);
  const ids = osmTilesets(config, manifest.osm);
  if (ids.length === 0) throw new UserError(`${config.file}: no OpenStreetMap tileset to update ($.tilesets has no .osm.pbf source)`);
  const osmium = await findTool(OSMIUM);

  const sources: Record<string, string> = {};
  const updates: TilesetUpdate[] = [];
  const patches: Record<string, OsmPatch> = {};
  const states: Record<string, OsmDataState> = {};
  for (const id of ids) {
    const label = `update ${id}`;
    const { base, current: from } = replicationOf(config, id, manifest.osm?.[id]);
    const dir = updateDir(root, id);
    await removeTempFiles(dir);
    const fromCopy = await currentCopy(dir, config.tilesets[id].source, from.sequence);
    const newest = await fetchState(`${base}state.txt`);
    if (newest.sequence < from.sequence) {
      throw new UserError(
        `${base}state.txt: the server's newest state (sequence ${newest.sequence}, ${newest.timestamp}) is older than the build's data (sequence ${from.sequence}, ${from.timestamp}): is ${base} the replication folder of this extract?`,
      );
    }
    if (newest.sequence === from.sequence) {
      logLine(`${label}: up to date (sequence ${from.sequence}, ${from.timestamp})`);
      sources[id] = await useCopy(dir, fromCopy);
      continue;
    }
    const steps: Step[] = [];
    const files = await timeStep(steps, 'download and check', () => downloadChanges(osmium, base, dir, from, newest, label));
    const to = files[files.length - 1].state;
    const changes = files.reduce((n, f) => n + f.changes, 0);
    const next = await timeStep(steps, 'apply', () => applyChanges(osmium, dir, fromCopy, files.map((f) => f.path), to, base, changes));
    logLine(`${label}: sequence ${from.sequence} → ${to.sequence} (${to.timestamp}): ${files.length} change files, ${changes} changed objects (${stepsText(steps)})`);
    sources[id] = await useCopy(dir, next);
    // The vector stage generates only the tiles these files can change (when the current archive shows fromCopy).
    if (changes > 0) patches[id] = { previous: fromCopy, changes: files.map((f) => f.path) };
    updates.push({ id, from, to, files: files.length, changes, base });
    states[id] = { sequence: to.sequence, timestamp: to.timestamp, replication: base };
  }
  if (updates.length === 0) return { tilesets: updates, published: false, timings: [] };

  // The build reads the update's copy of each extract (the search index too, when it is made from the tileset's extract).
  const copyOf = (id: string, t: BuildConfig['tilesets'][string]) => ({ ...t, source: sources[id], ...(t.search?.source === t.source ? { search: { source: sources[id] } } : {}) });
  const tilesets = Object.fromEntries(Object.entries(config.tilesets).map(([id, t]) => [id, sources[id] ? copyOf(id, t) : t]));
  const timings = await build({ ...config, tilesets }, {
    out: root,
    keep: opts.keep,
    workers: opts.workers,
    vectorPatches: patches,
    manifest: (m) => {
      for (const [id, s] of Object.entries(states)) setOsmState(m, id, s);
    },
  });
  for (const u of updates) {
    const dir = updateDir(root, u.id);
    await removeOtherCopies(dir, u.to.sequence);
    await removeAppliedChanges(dir, u.base, u.to.sequence);
  }
  return { tilesets: updates, published: true, timings };
}
