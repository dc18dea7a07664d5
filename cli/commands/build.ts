/** `tilebake build --config F`: the vector, imagery, elevation and render stages into a new version (pipeline/build.ts). */
import type { Argv } from 'yargs';

/** Adds the `build` command to the program. */
export function addBuildCommand(y: Argv): Argv {
  return y.command(
    'build',
    'Run the build described by a config file (vector, imagery, elevation, render stages) into a new version <out>/builds/<id>/, reusing what is unchanged, and make it current',
    (y) =>
      y
        .option('config', { alias: 'c', type: 'string', demandOption: true, describe: 'Build config JSON' })
        .option('out', { alias: 'o', type: 'string', describe: 'Output folder (default: the config\'s "out")' })
        .option('only', { choices: ['vector', 'imagery', 'render', 'elevation'] as const, describe: 'Run one stage only' })
        .option('workers', { type: 'number', describe: 'Render pool size: browsers rendering at once (default: one per two CPUs this process may use: the Slurm allocation, the cgroup CPU quota or the CPU affinity, the fewest)' })
        .option('full', { type: 'boolean', default: false, describe: 'Build everything again instead of reusing the current version for unchanged inputs' })
        .option('keep', { type: 'number', default: 2, describe: 'Build versions kept in <out>/builds/ (the current one and versions a running server holds are always kept)' }),
    async (a) => {
      const { loadConfig } = await import('../../pipeline/config/index.ts');
      const { build } = await import('../../pipeline/build.ts');
      const { checkKeep } = await import('../../lib/build-version.ts');
      const config = await loadConfig(a.config);
      await build(config, { out: a.out, only: a.only, workers: a.workers, full: a.full, keep: checkKeep(a.keep) });
    },
  );
}
