/** `tilebake inspect ARCHIVE`: a PMTiles archive's header, tiles per zoom and metadata (pipeline/inspect.ts). */
import type { Argv } from 'yargs';

/** Adds the `inspect` command to the program. */
export function addInspectCommand(y: Argv): Argv {
  return y.command(
    'inspect <archive>',
    'Print a PMTiles archive\'s header, tile count per zoom and metadata',
    (y) =>
      y
        .positional('archive', { type: 'string', demandOption: true, describe: 'A .pmtiles file' })
        .option('json', { type: 'boolean', default: false, describe: 'Print JSON' }),
    async (a) => {
      const { inspect } = await import('../../pipeline/inspect.ts');
      await inspect(a.archive, { json: a.json });
    },
  );
}
