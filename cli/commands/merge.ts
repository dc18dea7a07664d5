/** `tilebake merge OUT PARTIAL...`: the partial archives of one archive merged, as publish does (pipeline/merge.ts). */
import type { Argv } from 'yargs';

/** Adds the `merge` command to the program. */
export function addMergeCommand(y: Argv): Argv {
  return y.command(
    'merge <output> <partials..>',
    'Merge the partial archives of one archive from the shards of a run (what `publish` does per archive) into one PMTiles archive',
    (y) =>
      y
        .positional('output', { type: 'string', demandOption: true, describe: 'Final .pmtiles file' })
        .positional('partials', { type: 'string', array: true, demandOption: true, describe: 'Partial .pmtiles files' }),
    async (a) => {
      const { mergeArchives } = await import('../../pipeline/merge.ts');
      await mergeArchives(a.partials as string[], a.output);
    },
  );
}
