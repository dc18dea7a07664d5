/** Work folders of a build under `<out>/.work`: removing what a stage leaves empty there. */
import { rmdir } from 'node:fs/promises';
import { basename, dirname } from 'node:path';

/** Remove the folders between a stage's work folder and its `.work` ancestor (inclusive) that are empty (other stages may use them). */
export async function removeEmptyWorkParents(workDir: string): Promise<void> {
  const between: string[] = [];
  for (let dir = dirname(workDir); dir !== dirname(dir); dir = dirname(dir)) {
    between.push(dir);
    if (basename(dir) === '.work') {
      for (const d of between) await rmdir(d).catch(() => undefined);
      return;
    }
  }
}
