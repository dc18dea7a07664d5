/**
 * AWS Batch definitions of a distributed build, typed with @aws-sdk/client-batch's request types
 * (excess-property checks catch unknown fields); deploy/generate.ts writes them as the JSON that
 * `aws batch register-job-definition|submit-job --cli-input-json` reads (deploy/aws-batch/submit.sh).
 *
 * - job-definition-shard.json / job-definition-publish.json: the container (image, vCPUs, memory,
 *   /dev/shm for Chromium, scratch volume) and the retry rules: exit 75 (transient) is retried, exit
 *   78 (permanent) and anything else ends the job; a lost Spot host is retried.
 * - shard-array-job.json: the array job, one child per shard (Batch sets AWS_BATCH_JOB_ARRAY_INDEX;
 *   an AWS_BATCH_JOB_ARRAY_SIZE, when set, is checked against run.json).
 * - publish-job.json: `dependsOn` the whole array, so it starts only when every child succeeded.
 *   submit.sh puts the array job's id in place of SHARD_ARRAY_JOB_ID.
 */
import type { RegisterJobDefinitionCommandInput, RetryStrategy, SubmitJobCommandInput } from '@aws-sdk/client-batch';
import { EXIT_PERMANENT, EXIT_TRANSIENT, publishArgs, SCRATCH_DIR, shardArgs, type DeployParams } from '../params.ts';

/** Placeholder of the shard array job's id in publish-job.json (submit.sh replaces it). */
export const SHARD_JOB_ID = 'SHARD_ARRAY_JOB_ID';
/** MiB of /dev/shm for Chromium. */
const SHM_MIB = 1024;
/** Job definition names. */
const SHARD_DEFINITION = 'tilebake-shard';
const PUBLISH_DEFINITION = 'tilebake-publish';

/** MiB of a Kubernetes memory quantity (4Gi -> 4096). */
export function mebibytes(quantity: string): number {
  const m = /^(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti)$/.exec(quantity);
  if (!m) throw new Error(`--memory: expected a quantity such as 4Gi (got "${quantity}")`);
  const scale = { Ki: 1 / 1024, Mi: 1, Gi: 1024, Ti: 1024 * 1024 }[m[2] as 'Ki' | 'Mi' | 'Gi' | 'Ti'];
  return Math.ceil(Number(m[1]) * scale);
}

/**
 * Retry on the transient exit code and on lost hosts; exit on the permanent one and on anything else
 * (the first matching rule wins; Batch matches exit codes as strings with `*` globs).
 */
export function retryStrategy(p: DeployParams): RetryStrategy {
  return {
    attempts: p.retries + 1,
    evaluateOnExit: [
      { onExitCode: String(EXIT_TRANSIENT), action: 'RETRY' },
      { onExitCode: String(EXIT_PERMANENT), action: 'EXIT' },
      { onStatusReason: 'Host EC2*', action: 'RETRY' },
      { onReason: '*', action: 'EXIT' },
    ],
  };
}

/**
 * A job definition running `tilebake <command>` with the run (and output) as Batch parameters
 * (`Ref::run`, `Ref::out`), so one registration serves every run: submit-job sets them.
 */
function jobDefinition(name: string, p: DeployParams, command: string[], parameters: Record<string, string>): RegisterJobDefinitionCommandInput {
  return {
    jobDefinitionName: name,
    type: 'container',
    platformCapabilities: ['EC2'],
    parameters,
    containerProperties: {
      image: p.image,
      command,
      jobRoleArn: p.batchJobRoleArn,
      resourceRequirements: [
        { type: 'VCPU', value: p.cpu },
        { type: 'MEMORY', value: String(mebibytes(p.memory)) },
      ],
      linuxParameters: { sharedMemorySize: SHM_MIB, initProcessEnabled: true },
      // A Docker volume per container on the instance's storage: node-local scratch.
      volumes: [{ name: 'scratch', host: {} }],
      mountPoints: [{ sourceVolume: 'scratch', containerPath: SCRATCH_DIR, readOnly: false }],
    },
    retryStrategy: retryStrategy(p),
    propagateTags: true,
    tags: { app: 'tilebake' },
  };
}

/** The shard job definition. */
export function shardDefinition(p: DeployParams): RegisterJobDefinitionCommandInput {
  return jobDefinition(SHARD_DEFINITION, p, shardArgs({ ...p, run: 'Ref::run' }), { run: p.run });
}

/** The publish job definition. */
export function publishDefinition(p: DeployParams): RegisterJobDefinitionCommandInput {
  return jobDefinition(PUBLISH_DEFINITION, p, publishArgs({ ...p, run: 'Ref::run', out: 'Ref::out' }), { run: p.run, out: p.out });
}

/**
 * The shard array job. Batch arrays have 2 to 10,000 children; a one-shard run is a single job that
 * names its index itself.
 */
export function shardArrayJob(p: DeployParams): SubmitJobCommandInput {
  return {
    jobName: 'tilebake-shards',
    jobQueue: p.batchJobQueue,
    jobDefinition: SHARD_DEFINITION,
    parameters: { run: p.run },
    ...(p.shards > 1 ? { arrayProperties: { size: p.shards } } : { containerOverrides: { environment: [{ name: 'TILEBAKE_SHARD_INDEX', value: '0' }] } }),
  };
}

/** The publish job, after every child of the array job succeeded. */
export function publishSubmission(p: DeployParams): SubmitJobCommandInput {
  return {
    jobName: 'tilebake-publish',
    jobQueue: p.batchJobQueue,
    jobDefinition: PUBLISH_DEFINITION,
    parameters: { run: p.run, out: p.out },
    dependsOn: [{ jobId: SHARD_JOB_ID }],
  };
}
