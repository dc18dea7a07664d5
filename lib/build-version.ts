/**
 * Which build version of an output folder is current: the one rule shared by `build` (publish,
 * prune), `serve` (follow), `export` and metrics.
 *
 * Layout of an output folder `DIR` (local, or the same files under an http(s):// base URL):
 *
 *     DIR/current.json            {"format":"tilebake-current/1","build":"<id>","path":"builds/<id>",...}
 *     DIR/builds/<id>/            one complete build: manifest.json and the files it names
 *     DIR/leases/<pid>.json       versions a `serve` process on this host holds open (pruning skips them;
 *                                 object storage has no leases: its pruning keeps the previous version)
 *     DIR/.work/                  resumable work of an unfinished build (journals); never served
 *
 * A build writes `builds/<id>/` and then replaces `current.json` with one atomic rename: readers
 * see the old version or the new one, never a mix. A folder without `current.json` but with a
 * `manifest.json` at its root is a legacy (pre-version) build and is served as it is, id `undefined`.
 */
import { randomBytes, randomInt } from 'node:crypto';
import { readdir, readFile, rm, stat } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { writeFileAtomic } from './atomic.ts';
import { findManifest, type Manifest } from './manifest.ts';
import { alive } from './process-tree.ts';
import { UserError } from './errors.ts';
import type { WritableStore } from './object-store.ts';
import { LocalStore, SubStore, type Store } from './storage.ts';
import { uploadTree } from './store-tree.ts';

/** The pointer file, relative to the output folder. */
export const POINTER_FILE = 'current.json';
/** Folder of the versions, relative to the output folder. */
export const BUILDS_DIR = 'builds';
/** Folder of the serving processes' lease files, relative to the output folder. */
export const LEASES_DIR = 'leases';
/** Format tag of the pointer file. */
const POINTER_FORMAT = 'tilebake-current/1';
/** Versions kept by default when a build prunes (the current one and the one before). */
export const DEFAULT_KEEP_VERSIONS = 2;

/** Check a `--keep` value: a whole number of versions >= 1 (a bad command line, exit 2, otherwise). */
export function checkKeep(keep: number): number {
  if (!Number.isInteger(keep) || keep < 1) throw new UserError(`--keep: expected a whole number of versions >= 1 (got ${keep})`, { exitCode: 2 });
  return keep;
}

/** The content of `current.json`. */
export interface BuildPointer {
  format: typeof POINTER_FORMAT;
  /** The build id (a folder name under `builds/`). */
  build: string;
  /** Its folder relative to the output folder: `builds/<id>`. */
  path: string;
  /** ISO time of publication. */
  publishedAt: string;
}

/** The version a reader should use. */
export interface CurrentVersion {
  /** The build id; undefined for a legacy folder (manifest.json at its root). */
  id: string | undefined;
  /** The version's folder relative to the output folder (`builds/<id>`, or `` for legacy). */
  path: string;
  /** Validator of the pointer as read (for `pollCurrentVersion`). */
  etag?: string;
}

/** `20250102T030405Z` of a time (whole seconds). */
function idTime(d: Date): string {
  return d.toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
}

const ID = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z-([0-9a-f]{6})$/;
const MAX_SUFFIX = 0xffffff;

/**
 * Ids sort by time: `20250102T030405Z-1a2b3c`. Given the id of the version the new one follows
 * (`after`), the new id sorts after it also within the same second (a random suffix above `after`'s,
 * else the next second): "newest" by id is then the order of publishing, which pruning relies on.
 */
export function newBuildId(now = new Date(), after?: string): string {
  const id = `${idTime(now)}-${randomBytes(3).toString('hex')}`;
  const m = after === undefined ? null : ID.exec(after);
  if (!m || id > after!) return id;
  const [, y, mo, d, h, mi, s, suffix] = m;
  const time = `${y}${mo}${d}T${h}${mi}${s}Z`;
  const n = parseInt(suffix, 16);
  if (n < MAX_SUFFIX) return `${time}-${randomInt(n + 1, MAX_SUFFIX + 1).toString(16).padStart(6, '0')}`;
  const next = new Date(Date.UTC(+y, +mo - 1, +d, +h, +mi, +s) + 1000);
  return `${idTime(next)}-${randomBytes(3).toString('hex')}`;
}

/** `builds/<id>`. */
export function versionPath(id: string): string {
  return `${BUILDS_DIR}/${id}`;
}

/** Check a pointer file's shape; `where` names it in errors. */
export function parsePointer(text: string, where: string): BuildPointer {
  let o: Partial<BuildPointer>;
  try {
    o = JSON.parse(text) as Partial<BuildPointer>;
  } catch (e) {
    throw new UserError(`${where}: not valid JSON (${(e as Error).message})`);
  }
  if (typeof o !== 'object' || o === null || o.format !== POINTER_FORMAT) throw new UserError(`${where}: field "format": expected "${POINTER_FORMAT}"`);
  if (typeof o.build !== 'string' || !/^[\w.-]+$/.test(o.build)) throw new UserError(`${where}: field "build": expected a build id`);
  if (o.path !== versionPath(o.build)) throw new UserError(`${where}: field "path": expected "${versionPath(o.build)}"`);
  return o as BuildPointer;
}

function pointerWhere(store: Store): string {
  return `${store.location.replace(/\/$/, '')}/${POINTER_FILE}`;
}

function versionOf(bytes: Uint8Array, etag: string | undefined, store: Store): CurrentVersion {
  const p = parsePointer(Buffer.from(bytes).toString('utf8'), pointerWhere(store));
  return { id: p.build, path: p.path, etag };
}

/**
 * The current version of a build folder (local or HTTP store): the one `current.json` names, else
 * the legacy layout when `manifest.json` is at the root. Throws a UserError when there is neither.
 */
export async function resolveCurrentVersion(store: Store): Promise<CurrentVersion> {
  const r = await store.readFileIfChanged(POINTER_FILE);
  if (r && r !== 'unchanged') return versionOf(r.bytes, r.etag, store);
  if (await store.readFile('manifest.json')) return { id: undefined, path: '' };
  throw new UserError(`${pointerWhere(store)}: not found, and no manifest.json either (run \`tilebake build\` first)`);
}

/**
 * Check whether the current version changed since `known` (HTTP: conditional GET with the pointer's
 * ETag, so an unchanged pointer costs a 304). Returns the new version, or undefined when unchanged.
 */
export async function pollCurrentVersion(store: Store, known: CurrentVersion): Promise<CurrentVersion | undefined> {
  const r = await store.readFileIfChanged(POINTER_FILE, known.etag);
  if (r === 'unchanged') return undefined;
  const next = r ? versionOf(r.bytes, r.etag, store) : await resolveCurrentVersion(store);
  return next.path === known.path ? (known.etag = next.etag, undefined) : next;
}

/**
 * The versions kept in a build folder (local or object storage; ids sort by time), or undefined where
 * a store cannot be listed (a plain HTTP base). A version counts once its manifest is there.
 */
export async function keptVersions(store: Store): Promise<string[] | undefined> {
  if (store instanceof LocalStore) {
    const ids = (await readdir(join(store.location, BUILDS_DIR)).catch(() => [] as string[])).filter((n) => !n.startsWith('.'));
    const kept = await Promise.all(ids.map((id) => stat(join(store.location, BUILDS_DIR, id, 'manifest.json')).then(() => id, () => undefined)));
    return kept.filter((id): id is string => id !== undefined).sort();
  }
  if ('list' in store && typeof (store as WritableStore).list === 'function') {
    const objects = await (store as WritableStore).list(`${BUILDS_DIR}/`);
    return objects.map((o) => /^builds\/([^/]+)\/manifest\.json$/.exec(o.path)?.[1]).filter((id): id is string => id !== undefined && !id.startsWith('.')).sort();
  }
  return undefined;
}

/**
 * Version `id` of a build folder (its store and manifest), or a UserError that says which versions are
 * kept (`what` says what the version was asked for, e.g. `--since 2025…`).
 */
export async function openVersion(root: Store, id: string, what: string): Promise<{ store: Store; manifest: Manifest }> {
  const store = versionStore(root, { path: versionPath(id) });
  const manifest = /^[\w.-]+$/.test(id) ? await findManifest(store) : undefined;
  if (manifest) return { store, manifest };
  const kept = await keptVersions(root);
  const current = await resolveCurrentVersion(root).then((v) => v.id, () => undefined);
  const list = kept === undefined ? 'the versions of an HTTP store cannot be listed' : `kept: ${kept.length ? kept.join(', ') : 'none'}`;
  throw new UserError(`${what}: build ${id} is not kept in ${root.location} (${list}${current ? `; current: ${current}` : ''})`);
}

/** The files of one version as a store of their own (its `manifest.json` at the root). */
export function versionStore(store: Store, v: Pick<CurrentVersion, 'path'>): Store {
  return v.path === '' ? store : new SubStore(store, v.path);
}

// ---- Local folders: what `build` uses. ----

/** The current version's folder of a local output folder, or undefined when it has no build yet. */
export async function currentVersionDir(dir: string): Promise<{ id: string | undefined; dir: string } | undefined> {
  let text: string;
  try {
    text = await readFile(join(dir, POINTER_FILE), 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    const legacy = await stat(join(dir, 'manifest.json')).then(() => true, () => false);
    return legacy ? { id: undefined, dir } : undefined;
  }
  const p = parsePointer(text, join(dir, POINTER_FILE));
  return { id: p.build, dir: join(dir, p.path) };
}

/** Make version `id` (already complete under `DIR/builds/<id>/`) current: one atomic rename of the pointer. */
export async function publishVersion(dir: string, id: string): Promise<void> {
  await writeFileAtomic(join(dir, POINTER_FILE), pointerText(id));
}

/** The pointer file's content for version `id`. */
function pointerText(id: string): string {
  const pointer: BuildPointer = { format: POINTER_FORMAT, build: id, path: versionPath(id), publishedAt: new Date().toISOString() };
  return `${JSON.stringify(pointer)}\n`;
}

/**
 * Publish the complete version in local folder `dir` as version `id` of a writable store (folder or
 * object storage): every file under `builds/<id>/` first, `current.json` last, so readers see the old
 * version or the new one, never a mix. Returns the id of the version that was current until then.
 */
export async function publishVersionToStore(store: WritableStore, id: string, dir: string): Promise<{ previous?: string }> {
  await uploadTree(store, dir, `${versionPath(id)}/`);
  // Read just before the switch (after the upload: a store that refuses writes is named by the upload's error).
  const pointer = await store.readFile(POINTER_FILE);
  const previous = pointer ? parsePointer(Buffer.from(pointer).toString('utf8'), pointerWhere(store)).build : undefined;
  await store.putBytes(POINTER_FILE, pointerText(id));
  return { previous };
}

/** A lease: the versions one serving process holds open. */
interface LeaseFile {
  pid: number;
  host: string;
  builds: string[];
}

/**
 * Record that this process serves `builds` of local folder `dir` (`DIR/leases/<host>-<pid>.json`;
 * an empty list removes the lease). Pruning never removes a leased version of a live process.
 */
export async function writeLease(dir: string, builds: (string | undefined)[]): Promise<void> {
  const ids = [...new Set(builds.filter((b): b is string => b !== undefined))];
  const file = join(dir, LEASES_DIR, `${hostname()}-${process.pid}.json`);
  if (ids.length === 0) {
    await rm(file, { force: true });
    return;
  }
  const lease: LeaseFile = { pid: process.pid, host: hostname(), builds: ids };
  await writeFileAtomic(file, `${JSON.stringify(lease)}\n`);
}

/** Versions leased by live processes on this host; leases of dead processes are removed. */
async function leasedVersions(dir: string): Promise<Set<string>> {
  const out = new Set<string>();
  const folder = join(dir, LEASES_DIR);
  for (const name of await readdir(folder).catch(() => [] as string[])) {
    if (!name.endsWith('.json')) continue;
    let lease: LeaseFile;
    try {
      lease = JSON.parse(await readFile(join(folder, name), 'utf8')) as LeaseFile;
    } catch {
      continue; // being replaced right now, or torn: keep it, decide next time
    }
    if (lease.host === hostname() && !alive(lease.pid)) {
      await rm(join(folder, name), { force: true });
      continue;
    }
    // A lease from another host (shared disk) cannot be checked: it is honoured.
    for (const b of lease.builds ?? []) out.add(b);
  }
  return out;
}

/**
 * The retention rule of every output, a local folder or object storage: of the versions `ids`, keep
 * the `keep` newest (ids sort by time), always the current one and every version a server may still
 * read (`held`); versions newer than the current one are unfinished builds or publishes that may be
 * writing right now, and are left alone. Returns the ids to remove, oldest first.
 */
export function versionsToPrune(ids: readonly string[], current: string | undefined, keep: number, held: ReadonlySet<string>): string[] {
  const sorted = [...new Set(ids)].sort();
  const kept = new Set(sorted.slice(Math.max(0, sorted.length - Math.max(1, keep))));
  if (current) kept.add(current);
  return sorted.filter((id) => !kept.has(id) && !held.has(id) && !(current && id > current));
}

/**
 * Remove old versions of local folder `dir` (versionsToPrune): held are the versions a live `serve`
 * process holds a lease on. Returns the removed ids.
 */
export async function pruneVersions(dir: string, keep = DEFAULT_KEEP_VERSIONS): Promise<string[]> {
  const current = await currentVersionDir(dir);
  const ids = (await readdir(join(dir, BUILDS_DIR)).catch(() => [] as string[])).filter((n) => !n.startsWith('.'));
  const removed = versionsToPrune(ids, current?.id, keep, await leasedVersions(dir));
  for (const id of removed) await rm(join(dir, BUILDS_DIR, id), { recursive: true, force: true });
  return removed;
}

/**
 * Remove old versions of an output on object storage (versionsToPrune), after a publish moved
 * `current.json` from `previous` to `current`. Servers there leave no leases, and one may still read
 * the version it served until its next poll of the pointer: `previous` is held. Each pruned version's
 * `manifest.json` goes first (what is left of an interrupted prune is no version anyone opens; the next
 * prune removes the rest). Returns the removed ids.
 */
export async function pruneStoreVersions(store: WritableStore, keep: number, current: string, previous: string | undefined): Promise<string[]> {
  const objects = await store.list(`${BUILDS_DIR}/`);
  const idOf = (path: string) => path.slice(BUILDS_DIR.length + 1).split('/')[0];
  const ids = objects.map((o) => idOf(o.path)).filter((id) => id !== '' && !id.startsWith('.'));
  const removed = versionsToPrune(ids, current, keep, new Set(previous ? [previous] : []));
  for (const id of removed) {
    const paths = objects.filter((o) => idOf(o.path) === id).map((o) => o.path);
    const manifest = `${versionPath(id)}/manifest.json`;
    for (const p of [...paths.filter((x) => x === manifest), ...paths.filter((x) => x !== manifest)]) await store.delete(p);
  }
  return removed;
}
