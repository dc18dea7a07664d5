/**
 * Reusing a previous build version's files in a new one: hard links (the previous version's files are
 * never written again: every writer replaces its output by a rename), a copy across file systems.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { copyFile, link, mkdir, readdir, readFile, rm, stat } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { writeFileAtomic } from '../lib/atomic.ts';

/** Link `src` to `dst` (replacing `dst`); copy when a link is impossible (another file system). */
export async function linkFile(src: string, dst: string): Promise<void> {
  await mkdir(dirname(dst), { recursive: true });
  await rm(dst, { force: true });
  try {
    await link(src, dst);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== 'EXDEV' && code !== 'EPERM' && code !== 'EMLINK') throw e;
    await copyFile(src, dst);
  }
}

/** Link every file under `src` into `dst` (same relative paths), skipping names in `skip` at the top. */
export async function linkTree(src: string, dst: string, skip: ReadonlySet<string> = new Set()): Promise<void> {
  for (const e of await readdir(src, { withFileTypes: true, recursive: true })) {
    if (!e.isFile()) continue;
    const path = join(e.parentPath, e.name);
    const rel = relative(src, path);
    if (skip.has(rel.split(/[\\/]/)[0])) continue;
    await linkFile(path, join(dst, rel));
  }
}

/** SHA-256 of files (names relative to `base` and contents, streamed), in sorted order. */
export async function hashInputs(paths: string[], base = '/'): Promise<string> {
  const h = createHash('sha256');
  const files: string[] = [];
  for (const p of paths) {
    const s = await stat(p).catch(() => undefined);
    if (!s) {
      files.push(p);
      continue;
    }
    if (s.isDirectory()) {
      for (const e of await readdir(p, { withFileTypes: true, recursive: true })) if (e.isFile()) files.push(join(e.parentPath, e.name));
    } else files.push(p);
  }
  for (const f of files.sort()) {
    h.update(`${relative(base, f)}\0`);
    const s = await stat(f).catch(() => undefined);
    if (!s) {
      h.update('missing\0');
      continue;
    }
    h.update(`${s.size}\0`);
    for await (const chunk of createReadStream(f)) h.update(chunk as Buffer);
  }
  return h.digest('hex');
}

/** `<version>/.deps.json`: fingerprints of what each stage's outputs were built from. */
export const DEPS_FILE = '.deps.json';

/** The recorded input fingerprints of a version: `vector:<id>`, `elevation` → hash. */
export type Deps = Record<string, string>;

/** Read a version's deps (empty when absent or unreadable: nothing is reused). */
export async function readDeps(versionDir: string | undefined): Promise<Deps> {
  if (!versionDir) return {};
  try {
    return JSON.parse(await readFile(join(versionDir, DEPS_FILE), 'utf8')) as Deps;
  } catch {
    return {};
  }
}

let depsQueue: Promise<unknown> = Promise.resolve();
/** Record fingerprints in a version's deps file (serialised, atomic). */
export function recordDeps(versionDir: string, deps: Deps): Promise<void> {
  const run = async () => {
    const all = { ...(await readDeps(versionDir)), ...deps };
    await writeFileAtomic(join(versionDir, DEPS_FILE), `${JSON.stringify(all, null, 2)}\n`);
  };
  const next = depsQueue.then(run, run);
  depsQueue = next.catch(() => undefined);
  return next;
}
