import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { alive } from '../../lib/process-tree.ts';
import { UserError } from '../../lib/errors.ts';

/**
 * Run `fn` holding `<root>/.work/update.lock` (the pid): a second update of the same output folder
 * fails at once naming the first; the lock of a process that is gone (killed) is taken over.
 */
export async function withUpdateLock<T>(root: string, fn: () => Promise<T>): Promise<T> {
  const file = join(root, '.work', 'update.lock');
  await mkdir(dirname(file), { recursive: true });
  for (let attempt = 0; ; attempt++) {
    try {
      await writeFile(file, `${process.pid}\n`, { flag: 'wx' });
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 0) throw e;
      const pid = Number((await readFile(file, 'utf8').catch(() => '')).trim());
      if (pid > 0 && pid !== process.pid && alive(pid)) throw new UserError(`${file}: another \`tilebake update\` (pid ${pid}) is running on this output folder`);
      await rm(file, { force: true });
    }
  }
  try {
    return await fn();
  } finally {
    await rm(file, { force: true });
  }
}
