import { randomBytes } from 'node:crypto';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, basename, join } from 'node:path';

/** A temp path beside `finalPath` (same folder, so rename is atomic): `.name.tmp-<pid>-<rand>`. */
export function tempPathFor(finalPath: string): string {
  return join(dirname(finalPath), `.${basename(finalPath)}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`);
}

/** Write `data` to a temp file and rename it onto `finalPath`; nothing half-written is ever visible. */
export async function writeFileAtomic(finalPath: string, data: string | Uint8Array): Promise<void> {
  await mkdir(dirname(finalPath), { recursive: true });
  const tmp = tempPathFor(finalPath);
  try {
    await writeFile(tmp, data);
    await rename(tmp, finalPath);
  } catch (e) {
    await rm(tmp, { force: true });
    throw e;
  }
}

/**
 * Run `produce(tmpPath)` to create a file, then rename it onto `finalPath`.
 * If `produce` throws, the temp file is removed and `finalPath` is left untouched.
 */
export async function produceAtomic<T>(finalPath: string, produce: (tmpPath: string) => Promise<T>): Promise<T> {
  await mkdir(dirname(finalPath), { recursive: true });
  const tmp = tempPathFor(finalPath);
  try {
    const result = await produce(tmp);
    await rename(tmp, finalPath);
    return result;
  } catch (e) {
    await rm(tmp, { force: true, recursive: true });
    throw e;
  }
}
