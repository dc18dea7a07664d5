/** Copying folder trees to and from a writable store (uploads in sorted order: deterministic). */
import { readdir } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import type { WritableStore } from './object-store.ts';

/** Files under local `dir`, sorted, as absolute paths. */
async function filesUnder(dir: string): Promise<string[]> {
  return (await readdir(dir, { withFileTypes: true, recursive: true })).filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name)).sort();
}

/** Upload every file under local `dir` to `prefix` of `store` (same relative paths). */
export async function uploadTree(store: WritableStore, dir: string, prefix: string): Promise<void> {
  for (const f of await filesUnder(dir)) await store.putFile(`${prefix}${relative(dir, f).split(sep).join('/')}`, f);
}

/** Download every object under `prefix` of `store` into local `dir` (same relative paths); returns how many. */
export async function downloadTree(store: WritableStore, prefix: string, dir: string): Promise<number> {
  const objects = await store.list(prefix);
  for (const o of objects) await store.getFile(o.path, join(dir, ...o.path.slice(prefix.length).split('/')));
  return objects.length;
}
