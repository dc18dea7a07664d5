import { copyFile, mkdir, readdir, rm, stat } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import { produceAtomic, writeFileAtomic } from './atomic.ts';
import { UserError } from './errors.ts';
import { S3Store } from './s3-store.ts';
import { LocalStore } from './storage.ts';
import type { StoredObject, StoreOptions, WritableStore } from './store-types.ts';

export type { StoredObject, WritableStore } from './store-types.ts';

/** A folder on a local or shared filesystem. */
export class FolderStore extends LocalStore implements WritableStore {
  constructor(dir: string, opts: StoreOptions = {}) {
    super(dir, opts);
  }

  private pathOf(relPath: string): string {
    return join(this.location, ...relPath.split('/'));
  }

  async putBytes(relPath: string, bytes: Uint8Array | string): Promise<void> {
    await writeFileAtomic(this.pathOf(relPath), bytes);
  }

  async putFile(relPath: string, localPath: string): Promise<StoredObject> {
    const dest = this.pathOf(relPath);
    await produceAtomic(dest, (tmp) => copyFile(localPath, tmp));
    return { path: relPath, bytes: (await stat(dest)).size };
  }

  async getFile(relPath: string, localPath: string): Promise<boolean> {
    try {
      await stat(this.pathOf(relPath));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false;
      throw e;
    }
    await mkdir(dirname(localPath), { recursive: true });
    await produceAtomic(localPath, (tmp) => copyFile(this.pathOf(relPath), tmp));
    return true;
  }

  async list(prefix: string): Promise<StoredObject[]> {
    // Walk only the deepest folder the prefix names, then filter by the full prefix.
    const folder = prefix.includes('/') ? prefix.slice(0, prefix.lastIndexOf('/')) : '';
    const out: StoredObject[] = [];
    const walk = async (dir: string): Promise<void> => {
      let entries;
      try {
        entries = await readdir(dir, { withFileTypes: true });
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
        throw e;
      }
      for (const e of entries) {
        const p = join(dir, e.name);
        if (e.isDirectory()) await walk(p);
        else if (e.isFile() && !/^\..*\.tmp-\d+-[0-9a-f]+$/.test(e.name)) {
          const rel = relative(this.location, p).split(sep).join('/');
          if (rel.startsWith(prefix)) out.push({ path: rel, bytes: (await stat(p)).size });
        }
      }
    };
    await walk(this.pathOf(folder));
    return out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  }

  async delete(relPath: string): Promise<void> {
    await rm(this.pathOf(relPath), { force: true });
  }
}

/**
 * A writable store for `--run` / `--out`: a folder path, or `s3://bucket/prefix` (S3-compatible object
 * storage; endpoint from --s3-endpoint or AWS_ENDPOINT_URL, credentials from the standard AWS chain).
 */
export function openWritableStore(location: string, opts: StoreOptions = {}): WritableStore {
  if (/^s3:\/\//i.test(location)) return new S3Store(location, opts);
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(location)) {
    throw new UserError(`${location}: expected a folder or s3://bucket/prefix`, { exitCode: 2 });
  }
  return new FolderStore(location, opts);
}
