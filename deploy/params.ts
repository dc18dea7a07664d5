/**
 * What every engine definition (Kubernetes, Argo, AWS Batch) is generated from: the image, the run and
 * output locations, the shard count and the node resources, and the one place that spells tilebake's
 * command lines and exit codes for them. Documented in docs/distributed-engines.md.
 */

import { EXIT_PERMANENT, EXIT_TRANSIENT } from '../pipeline/exit.ts';

/** The exit codes engines act on (pipeline/exit.ts): 75 transient (retry), 78 permanent (do not). */
export { EXIT_PERMANENT, EXIT_TRANSIENT };

/** Parameters of the generated definitions (`node --import tsx deploy/generate.ts --help`). */
export interface DeployParams {
  /** Container image with tilebake (deploy/container/Containerfile). */
  image: string;
  /** The run: `s3://bucket/prefix` written by `tilebake plan --run`. */
  run: string;
  /** Where `tilebake publish` publishes the build (`s3://bucket/prefix`, served by `tilebake serve --out`). */
  out: string;
  /** Shards of the run (`plan --shards N`); the engine's array size. */
  shards: number;
  /** Shards rendering at once (Kubernetes `parallelism`, Argo `parallelism`). */
  parallelism: number;
  /** Node-local scratch for one shard's partial archives and journals (Kubernetes quantity, e.g. `20Gi`). */
  scratch: string;
  /** CPUs and memory of one shard or publish task (Kubernetes quantities; AWS Batch takes vCPUs and MiB). */
  cpu: string;
  memory: string;
  /** S3-compatible endpoint (`--s3-endpoint`); empty for AWS S3. */
  s3Endpoint: string;
  /**
   * Kubernetes: name of the Secret holding AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (empty: use the
   * pod's service account / IRSA). AWS Batch uses the job role instead.
   */
  s3Secret: string;
  /** Tries of one shard after a transient failure (exit 75) or an evicted pod, per index. */
  retries: number;
  /** AWS Batch: job queue and the IAM role the tasks run as (S3 access). */
  batchJobQueue: string;
  batchJobRoleArn: string;
}

/** The values of the committed definitions; every one is a placeholder to override. */
export const DEFAULT_PARAMS: Readonly<DeployParams> = Object.freeze({
  image: 'registry.example.com/tilebake:latest',
  run: 's3://tilebake-runs/runs/example',
  out: 's3://tilebake-public/tiles',
  shards: 4,
  parallelism: 4,
  scratch: '20Gi',
  cpu: '2',
  memory: '4Gi',
  s3Endpoint: '',
  s3Secret: 'tilebake-s3',
  retries: 3,
  batchJobQueue: 'tilebake',
  batchJobRoleArn: 'arn:aws:iam::123456789012:role/tilebake-batch',
});

/** Where a shard writes its scratch files inside the container. */
export const SCRATCH_DIR = '/scratch';

/** `--s3-endpoint URL` when one is set. */
function endpointArgs(p: Pick<DeployParams, 's3Endpoint'>): string[] {
  return p.s3Endpoint ? ['--s3-endpoint', p.s3Endpoint] : [];
}

/** `tilebake shard` as every engine runs it: the index comes from the engine's own variable. */
export function shardArgs(p: Pick<DeployParams, 'run' | 's3Endpoint'>): string[] {
  return ['shard', '--run', p.run, '--scratch', SCRATCH_DIR, ...endpointArgs(p)];
}

/** `tilebake publish`, once every shard is done. */
export function publishArgs(p: Pick<DeployParams, 'run' | 'out' | 's3Endpoint'>): string[] {
  return ['publish', '--run', p.run, '--out', p.out, ...endpointArgs(p)];
}

/** Check parameters given on the command line; throws with the parameter's name. */
export function checkParams(p: DeployParams): DeployParams {
  const fail = (name: string, what: string) => {
    throw new Error(`--${name}: ${what}`);
  };
  if (!Number.isInteger(p.shards) || p.shards < 1) fail('shards', `expected a whole number >= 1 (got ${p.shards})`);
  if (!Number.isInteger(p.parallelism) || p.parallelism < 1) fail('parallelism', `expected a whole number >= 1 (got ${p.parallelism})`);
  // AWS Batch allows 1 to 10 attempts.
  if (!Number.isInteger(p.retries) || p.retries < 0 || p.retries > 9) fail('retries', `expected a whole number 0..9 (got ${p.retries})`);
  for (const [name, v] of [['run', p.run], ['out', p.out]] as const) if (!/^s3:\/\/[a-z0-9.-]{3,63}(\/|$)/.test(v)) fail(name, `expected s3://bucket/prefix (got "${v}")`);
  if (p.s3Endpoint && !/^https?:\/\//.test(p.s3Endpoint)) fail('s3-endpoint', `expected an http(s):// URL (got "${p.s3Endpoint}")`);
  if (!/^\d+(\.\d+)?(Ki|Mi|Gi|Ti)?$/.test(p.scratch)) fail('scratch', `expected a Kubernetes quantity such as 20Gi (got "${p.scratch}")`);
  if (!/^\d+(\.\d+)?(Ki|Mi|Gi|Ti)$/.test(p.memory)) fail('memory', `expected a Kubernetes quantity such as 4Gi (got "${p.memory}")`);
  if (!/^\d+(\.\d+)?$/.test(p.cpu)) fail('cpu', `expected a number of CPUs (got "${p.cpu}")`);
  return p;
}
