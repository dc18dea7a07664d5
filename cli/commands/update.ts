import type { Argv, CommandModule } from 'yargs';

interface UpdateArgs {
  config: string;
  out?: string;
  keep: number;
  workers?: number;
}

/** `tilebake update --config F [--out DIR]` (pipeline/update/index.ts). */
export const updateCommand: CommandModule<object, UpdateArgs> = {
  command: 'update',
  describe: 'Apply the OpenStreetMap changes published since the current build (replication server: https:// or file://) and publish a new version, rebuilding only what changed',
  builder: (y: Argv) =>
    y
      .option('config', { alias: 'c', type: 'string', demandOption: true, describe: 'Build config JSON (the one the build was made with)' })
      .option('out', { alias: 'o', type: 'string', describe: 'Output folder (default: the config\'s "out")' })
      .option('keep', { type: 'number', default: 2, describe: 'Build versions kept in <out>/builds/' })
      .option('workers', { type: 'number', describe: 'Render pool size (default: one per two cores)' }) as unknown as Argv<UpdateArgs>,
  handler: async (a) => {
    const { checkKeep } = await import('../../lib/build-version.ts');
    checkKeep(a.keep);
    const { loadConfig } = await import('../../pipeline/config/index.ts');
    const { update } = await import('../../pipeline/update/index.ts');
    const { logLine } = await import('../../lib/progress.ts');
    const r = await update(await loadConfig(a.config), { out: a.out, keep: a.keep, workers: a.workers });
    if (!r.published) logLine('update: nothing new on the replication server; the current version stays');
  },
};
