/**
 * The shard index of `tilebake shard`, from exactly one engine variable (or --index), and the engine's
 * task count checked against the run's `n` where the engine gives one.
 */
import { permanent } from '../exit.ts';

/** Engine variables that carry a task's index, and the engine each belongs to. */
export const INDEX_VARIABLES = {
  JOB_COMPLETION_INDEX: 'Kubernetes Indexed Job',
  AWS_BATCH_JOB_ARRAY_INDEX: 'AWS Batch array job',
  CLOUD_RUN_TASK_INDEX: 'Cloud Run job',
  BATCH_TASK_INDEX: 'Google Batch',
  SLURM_ARRAY_TASK_ID: 'Slurm job array',
  TILEBAKE_SHARD_INDEX: 'tilebake',
} as const;

type Env = Record<string, string | undefined>;

function wholeNumber(name: string, value: string): number {
  if (!/^\d+$/.test(value.trim())) throw permanent(`${name}: expected a whole number >= 0 (got "${value}")`);
  return Number(value.trim());
}

/** The task count the engine gives, when it gives one that must equal `n` (undefined: none). */
function engineCount(env: Env): { name: string; count: number } | undefined {
  for (const name of ['AWS_BATCH_JOB_ARRAY_SIZE', 'CLOUD_RUN_TASK_COUNT', 'BATCH_TASK_COUNT'] as const) {
    const v = env[name];
    if (v !== undefined && v !== '') return { name, count: wholeNumber(name, v) };
  }
  // A full Slurm array (0-(n-1), step 1) has as many tasks as shards; a partial one (re-running a few
  // indexes with --array=2,5) says nothing about n.
  const { SLURM_ARRAY_TASK_COUNT: c, SLURM_ARRAY_TASK_MIN: min, SLURM_ARRAY_TASK_MAX: max, SLURM_ARRAY_TASK_STEP: step } = env;
  if (c && min === '0' && (step ?? '1') === '1' && max !== undefined && Number(max) + 1 === Number(c)) return { name: 'SLURM_ARRAY_TASK_COUNT', count: wholeNumber('SLURM_ARRAY_TASK_COUNT', c) };
  return undefined;
}

/** Shard index for a run of `n` shards: `--index` or exactly one engine variable; checked against `n`. */
export function shardIndex(n: number, explicit: number | undefined, env: Env = process.env): number {
  const set = Object.keys(INDEX_VARIABLES).filter((k) => env[k] !== undefined && env[k] !== '');
  const sources = [...(explicit !== undefined ? ['--index'] : []), ...set];
  if (sources.length === 0) {
    throw permanent(`no shard index: pass --index or set one of ${Object.keys(INDEX_VARIABLES).join(', ')}`);
  }
  if (sources.length > 1) throw permanent(`shard index given twice (${sources.join(' and ')}): set exactly one`);
  const name = sources[0];
  const index = explicit ?? wholeNumber(name, env[name]!);
  if (!Number.isInteger(index) || index < 0 || index >= n) throw permanent(`${name}: shard index ${index} is not below the run's n = ${n} (valid: 0..${n - 1})`);
  const count = engineCount(env);
  if (count && count.count !== n) throw permanent(`${count.name}: the engine runs ${count.count} tasks but the run has n = ${n} shards (submit an array of ${n})`);
  return index;
}
