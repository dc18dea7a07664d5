/**
 * The search index as a file SQLite can open. From a local build folder, the file itself. From object
 * storage (an http(s):// or s3:// `--out`), where SQLite cannot read, a copy in the server's cache
 * folder (`--search-cache`), downloaded once per index content: named by the sha256 the manifest
 * records, checked against it before it is used, written as a temp file and renamed; workers that need
 * it at once wait for the one downloading it. The cache keeps the most recently used copies only.
 */
import { createHash } from 'node:crypto';
import { open, readdir, rename, rm, stat, utimes } from 'node:fs/promises';
import { mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tempPathFor } from '../../lib/atomic.ts';
import { acquire, release } from '../../lib/dir-lock.ts';
import type { SearchIndexEntry } from '../../lib/manifest.ts';
import { asStoreError, StoreBadAnswerError, StoreCorruptError } from '../../lib/store-read.ts';
import type { Store } from '../../lib/storage.ts';

/** Default cache folder. */
export const DEFAULT_SEARCH_CACHE = join(tmpdir(), 'tilebake-search-cache');
/** Copies the cache keeps (the newest by use); older ones are removed after a download. */
export const SEARCH_CACHE_FILES = 6;
/** Bytes read per request while downloading. */
const CHUNK_BYTES = 4 * 1024 * 1024;
const SUFFIX = '.search.sqlite';

const exists = (p: string) => stat(p).then((s) => s, () => undefined);

/** Remove all but the SEARCH_CACHE_FILES most recently used copies (`keep` stays). */
async function prune(dir: string, keep: string): Promise<void> {
  const files = (await readdir(dir)).filter((n) => n.endsWith(SUFFIX));
  const dated = await Promise.all(files.map(async (n) => ({ path: join(dir, n), mtime: (await exists(join(dir, n)))?.mtimeMs ?? 0 })));
  dated.sort((a, b) => b.mtime - a.mtime);
  // An open database stays readable after its file is removed (POSIX): a server using an old copy is not disturbed.
  for (const f of dated.slice(SEARCH_CACHE_FILES)) if (f.path !== keep) await rm(f.path, { force: true });
}

/** Download `entry.index` of `store` to `dest`, checking its size and sha256. */
async function download(store: Store, entry: SearchIndexEntry, dest: string): Promise<void> {
  const where = `${store.location.replace(/\/?$/, '/')}${entry.index}`;
  const src = await store.openRange(entry.index);
  const tmp = tempPathFor(dest);
  const out = await open(tmp, 'w');
  try {
    const h = createHash('sha256');
    let offset = 0;
    while (offset < entry.bytes) {
      const bytes = await src.getBytes(offset, Math.min(CHUNK_BYTES, entry.bytes - offset));
      if (bytes.length === 0) throw new StoreCorruptError(`${where}: ends at byte ${offset}, the manifest says ${entry.bytes}`);
      h.update(bytes);
      await out.write(bytes);
      offset += bytes.length;
    }
    const sha = h.digest('hex');
    if (sha !== entry.sha256) throw new StoreCorruptError(`${where}: sha256 ${sha.slice(0, 12)}… differs from the manifest's ${entry.sha256.slice(0, 12)}…`);
    await out.close();
    await rename(tmp, dest);
  } finally {
    await out.close().catch(() => undefined);
    await rm(tmp, { force: true });
    await src.close();
  }
}

/** A local path of the index `entry` of `store` (see the module comment); StoreErrors when it cannot be had. */
export async function localIndexFile(store: Store, entry: SearchIndexEntry, cacheDir = DEFAULT_SEARCH_CACHE): Promise<string> {
  const local = store.localPath?.(entry.index);
  if (local !== undefined) {
    if (!(await exists(local))) throw new StoreBadAnswerError(`${local}: listed in the manifest but missing (ENOENT)`, { transient: false });
    return local;
  }
  if (!/^[0-9a-f]{64}$/.test(entry.sha256)) throw new StoreCorruptError(`${store.location}: the manifest's search index ${entry.index} has no sha256`);
  await mkdir(cacheDir, { recursive: true });
  const dest = join(cacheDir, `${entry.sha256}${SUFFIX}`);
  const lock = `${dest}.lock`;
  try {
    if (!(await exists(dest)) && (await acquire(lock, dest))) {
      try {
        if (!(await exists(dest))) await download(store, entry, dest);
      } finally {
        await release(lock);
      }
      await prune(cacheDir, dest);
    }
  } catch (e) {
    throw asStoreError(entry.index, e);
  }
  const now = new Date();
  await utimes(dest, now, now).catch(() => undefined);
  return dest;
}
