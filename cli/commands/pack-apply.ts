/** `tilebake pack-apply OLD DELTA --to NEW`: a pack brought up to date by a delta (export/pack-apply.ts). */
import type { Argv } from 'yargs';

/** Adds the `pack-apply` command to the program. */
export function addPackApplyCommand(y: Argv): Argv {
  return y.command(
    'pack-apply <old> <delta>',
    'Apply a delta (tilebake pack --since) to an older pack: the result equals a full pack of the newer build',
    (y) =>
      y
        .positional('old', { type: 'string', demandOption: true, describe: 'The older pack: a pack folder, or one archive file' })
        .positional('delta', { type: 'string', demandOption: true, describe: 'The delta: a pack folder, or one archive file' })
        .option('to', { type: 'string', demandOption: true, describe: 'Where the newer pack goes: a folder (folders given) or a file' }),
    async (a) => {
      const { packApply } = await import('../../export/pack-apply.ts');
      const { logLine } = await import('../../lib/progress.ts');
      const r = await packApply(a.old!, a.delta!, a.to);
      logLine(`tilebake: applied ${r.archives} archive(s) into ${a.to}${r.json ? ` (build ${r.json.build})` : ''}`);
    },
  );
}
