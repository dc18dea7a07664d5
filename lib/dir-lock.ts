/**
 * A lock shared by processes on one machine: a folder made with mkdir (atomic) holding its owner's
 * pid; the lock of an owner that died is taken over. Used where several builds (or test files) may
 * make the same expensive file at once: one makes it, the others wait and use it.
 */
import { mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { alive } from './process-tree.ts';

const LOCK_POLL_MS = 200;

const exists = (path: string) => stat(path).then(() => true, () => false);

/**
 * Take `lock` (a folder holding its owner's pid); a lock whose owner died is taken over. False (and
 * no lock taken) once `done` exists: someone else made what the lock guards.
 */
export async function acquire(lock: string, done: string): Promise<boolean> {
  for (;;) {
    try {
      await mkdir(lock);
      await writeFile(join(lock, 'pid'), String(process.pid));
      return true;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    if (await exists(done)) return false;
    const owner = Number(await readFile(join(lock, 'pid'), 'utf8').catch(() => ''));
    if (owner && !alive(owner)) await rm(lock, { recursive: true, force: true });
    else await sleep(LOCK_POLL_MS);
  }
}

/** Release a lock taken with `acquire`. */
export async function release(lock: string): Promise<void> {
  await rm(lock, { recursive: true, force: true });
}
