/**
 * The distributed build's commands: `plan`, `shard`, `publish` (docs/distributed.md). Failures exit
 * 75 (transient: retry) or 78 (permanent: do not retry), which engines act on.
 */
import type { Argv, CommandModule } from 'yargs';
import { S3_ENDPOINT_OPTION } from '../options.ts';

const plan: CommandModule = {
  command: 'plan',
  describe: 'Start a distributed build: run the vector and elevation stages once and write RUN/run.json for n shards',
  builder: (y: Argv) =>
    y
      .option('config', { alias: 'c', type: 'string', demandOption: true, describe: 'Build config JSON' })
      .option('run', { type: 'string', demandOption: true, describe: 'Run location: a shared folder (NFS, Lustre, EFS) every node reaches' })
      .option('shards', { type: 'number', demandOption: true, describe: 'Number of shards n (the engine runs an array of n tasks)' })
      .option('scratch', { type: 'string', describe: 'Local folder for the work files (default: the system\'s temp folder)' })
      .option('s3-endpoint', S3_ENDPOINT_OPTION),
  handler: async (a) => {
    const { withRunExitCodes } = await import('../../pipeline/exit.ts');
    await withRunExitCodes(async () => {
      const { loadConfig } = await import('../../pipeline/config/index.ts');
      const { plan: run } = await import('../../pipeline/run/plan.ts');
      await run(await loadConfig(a.config as string), { run: a.run as string, shards: a.shards as number, scratch: a.scratch as string | undefined, s3Endpoint: a['s3-endpoint'] as string | undefined });
    });
  },
};

const shard: CommandModule = {
  command: 'shard',
  describe: 'Render one shard of a planned run (index from --index or the engine: JOB_COMPLETION_INDEX, AWS_BATCH_JOB_ARRAY_INDEX, CLOUD_RUN_TASK_INDEX, BATCH_TASK_INDEX, SLURM_ARRAY_TASK_ID, TILEBAKE_SHARD_INDEX)',
  builder: (y: Argv) =>
    y
      .option('run', { type: 'string', demandOption: true, describe: 'Run location (as given to plan)' })
      .option('index', { type: 'number', describe: 'Shard index 0..n-1 (instead of an engine variable)' })
      .option('scratch', { type: 'string', describe: 'Node-local folder for the shard\'s work, DIR/tilebake-shard-<run>-<index>/ (default: the system\'s temp folder); a re-run resumes from it' })
      .option('workers', { type: 'number', describe: 'Render pool size (default: one browser per two CPUs the task was given: SLURM_CPUS_PER_TASK, the cgroup CPU quota or the CPU affinity, the fewest)' })
      .option('s3-endpoint', S3_ENDPOINT_OPTION),
  handler: async (a) => {
    const { withRunExitCodes } = await import('../../pipeline/exit.ts');
    await withRunExitCodes(async () => {
      const { shard: run } = await import('../../pipeline/run/shard.ts');
      await run({ run: a.run as string, index: a.index as number | undefined, scratch: a.scratch as string | undefined, workers: a.workers as number | undefined, s3Endpoint: a['s3-endpoint'] as string | undefined });
    });
  },
};

const publish: CommandModule = {
  command: 'publish',
  describe: 'Merge the shards of a run and publish them as a new version of OUT (refused until all shards are done)',
  builder: (y: Argv) =>
    y
      .option('run', { type: 'string', demandOption: true, describe: 'Run location (as given to plan)' })
      .option('out', { alias: 'o', type: 'string', demandOption: true, describe: 'Output folder the version is published to (what `serve --out` reads)' })
      .option('archive', { type: 'string', describe: 'Merge only this archive (<style>/<scale>x.<format>) into RUN/merged/, for a parallel fan-in' })
      .option('keep', { type: 'number', default: 2, describe: 'Build versions kept in OUT (the current one, versions a running server holds and, on object storage, the previous one are always kept)' })
      .option('s3-endpoint', S3_ENDPOINT_OPTION),
  handler: async (a) => {
    const { withRunExitCodes } = await import('../../pipeline/exit.ts');
    await withRunExitCodes(async () => {
      const { publish: run } = await import('../../pipeline/run/publish.ts');
      const { checkKeep } = await import('../../lib/build-version.ts');
      await run({ run: a.run as string, out: a.out as string, archive: a.archive as string | undefined, keep: checkKeep(a.keep as number), s3Endpoint: a['s3-endpoint'] as string | undefined });
    });
  },
};

/** Registered in cli/index.ts. */
export const runCommands: CommandModule[] = [plan, shard, publish];
