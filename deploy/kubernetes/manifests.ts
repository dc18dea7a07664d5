/**
 * Kubernetes and Argo definitions of a distributed build, as typed objects (kubernetes-models,
 * @kubernetes-models/argo-workflows): TypeScript's excess-property checks catch unknown fields and
 * `validate()` checks them against the API schemas. deploy/generate.ts writes them as YAML.
 *
 * - shard-job.yaml: an Indexed Job, one pod per shard; Kubernetes sets JOB_COMPLETION_INDEX. A pod
 *   that exits 78 (permanent) fails its index and, with maxFailedIndexes 0, the Job; exit 75 and other
 *   failures are retried up to backoffLimitPerIndex times; evictions and preemptions are not counted.
 * - publish-job.yaml: one pod running `tilebake publish` once the shard Job is Complete.
 * - workflow.yaml: an Argo Workflow doing both: the shards as a fan-out (withSequence), publish as the
 *   fan-in that runs only when every shard succeeded.
 */
import { Job } from 'kubernetes-models/batch/v1';
import type { IContainer } from 'kubernetes-models/v1/Container';
import type { IVolume } from 'kubernetes-models/v1/Volume';
import type { IPodFailurePolicy } from 'kubernetes-models/batch/v1/PodFailurePolicy';
import type { IJobSpec } from 'kubernetes-models/batch/v1/JobSpec';
import { Workflow } from '@kubernetes-models/argo-workflows/argoproj.io/v1alpha1';
import type { IRetryStrategy } from '@kubernetes-models/argo-workflows/argoproj.io/v1alpha1/RetryStrategy';
import { EXIT_PERMANENT, EXIT_TRANSIENT, publishArgs, SCRATCH_DIR, shardArgs, type DeployParams } from '../params.ts';

/** Labels of every object and pod. */
const LABELS = { 'app.kubernetes.io/name': 'tilebake', 'app.kubernetes.io/component': 'distributed-build' };
/** Container names (podFailurePolicy rules name them). */
const SHARD = 'shard';
const PUBLISH = 'publish';
/** Size of /dev/shm for Chromium (the container default of 64 MiB makes it crash). */
const SHM_SIZE = '1Gi';

/** The volumes of a tilebake pod: node-local scratch and a memory-backed /dev/shm. */
function volumes(p: DeployParams): IVolume[] {
  return [
    { name: 'scratch', emptyDir: { sizeLimit: p.scratch } },
    { name: 'dshm', emptyDir: { medium: 'Memory', sizeLimit: SHM_SIZE } },
  ];
}

/** A tilebake container running `args`, with S3 credentials from the Secret (when named). */
function container(name: string, p: DeployParams, args: string[], env: IContainer['env'] = []): IContainer {
  return {
    name,
    image: p.image,
    args,
    ...(env && env.length > 0 ? { env } : {}),
    ...(p.s3Secret ? { envFrom: [{ secretRef: { name: p.s3Secret } }] } : {}),
    resources: { requests: { cpu: p.cpu, memory: p.memory }, limits: { memory: p.memory } },
    volumeMounts: [
      { name: 'scratch', mountPath: SCRATCH_DIR },
      { name: 'dshm', mountPath: '/dev/shm' },
    ],
    securityContext: { allowPrivilegeEscalation: false, runAsNonRoot: true },
  };
}

/** Fail the index (or Job) at once on a permanent failure; do not count disruptions as failures. */
function failurePolicy(containerName: string, action: 'FailIndex' | 'FailJob'): IPodFailurePolicy {
  return {
    rules: [
      { action, onExitCodes: { containerName, operator: 'In', values: [EXIT_PERMANENT] } },
      { action: 'Ignore', onPodConditions: [{ type: 'DisruptionTarget', status: 'True' }] },
    ],
  };
}

/** A Job of one tilebake container running `args`; `spec` adds the Job's completion and retry fields. */
function tilebakeJob(name: string, containerName: string, p: DeployParams, args: string[], spec: Omit<IJobSpec, 'template'>): Job {
  return new Job({
    metadata: { name, labels: LABELS },
    spec: {
      ...spec,
      template: {
        metadata: { labels: LABELS },
        spec: { restartPolicy: 'Never', containers: [container(containerName, p, args)], volumes: volumes(p) },
      },
    },
  });
}

/** The Indexed Job of the shards. */
export function shardJob(p: DeployParams): Job {
  return tilebakeJob('tilebake-shards', SHARD, p, shardArgs(p), {
    completionMode: 'Indexed',
    completions: p.shards,
    parallelism: Math.min(p.parallelism, p.shards),
    backoffLimitPerIndex: p.retries,
    // One permanently failed shard dooms the run: stop the others instead of rendering on.
    maxFailedIndexes: 0,
    podFailurePolicy: failurePolicy(SHARD, 'FailIndex'),
  });
}

/** The Job that publishes once the shard Job is Complete. */
export function publishJob(p: DeployParams): Job {
  return tilebakeJob('tilebake-publish', PUBLISH, p, publishArgs(p), {
    completions: 1,
    backoffLimit: p.retries,
    podFailurePolicy: failurePolicy(PUBLISH, 'FailJob'),
  });
}

/** Workflow parameter references. */
const param = (name: string) => `{{workflow.parameters.${name}}}`;

/**
 * The Argo Workflow: `shards` fan out (each with TILEBAKE_SHARD_INDEX = its item, retried on exit 75
 * and on pod errors such as evictions, never on 78), then one publish. image, run, out, shards and
 * s3-endpoint are workflow parameters (`argo submit workflow.yaml -p run=s3://… -p shards=16`).
 */
export function workflow(p: DeployParams): Workflow {
  const templated: DeployParams = { ...p, image: param('image'), run: param('run'), out: param('out') };
  // Transient failures (75) and lost pods are retried; a permanent failure (78) is final.
  const retry: IRetryStrategy = { limit: String(p.retries), retryPolicy: 'Always', expression: `asInt(lastRetry.exitCode) == ${EXIT_TRANSIENT} || lastRetry.status == "Error"` };
  return new Workflow({
    metadata: { generateName: 'tilebake-build-', labels: LABELS },
    spec: {
      entrypoint: 'build',
      parallelism: p.parallelism,
      podGC: { strategy: 'OnWorkflowSuccess' },
      arguments: {
        parameters: [
          { name: 'image', value: p.image },
          { name: 'run', value: p.run },
          { name: 'out', value: p.out },
          { name: 'shards', value: String(p.shards) },
        ],
      },
      volumes: volumes(p),
      templates: [
        {
          name: 'build',
          dag: {
            tasks: [
              {
                name: 'shards',
                template: 'shard',
                arguments: { parameters: [{ name: 'index', value: '{{item}}' }] },
                withSequence: { count: param('shards') },
              },
              { name: 'publish', template: 'publish', dependencies: ['shards'] },
            ],
          },
        },
        {
          name: 'shard',
          inputs: { parameters: [{ name: 'index' }] },
          retryStrategy: retry,
          container: container(SHARD, templated, shardArgs(templated), [{ name: 'TILEBAKE_SHARD_INDEX', value: '{{inputs.parameters.index}}' }]),
        },
        {
          name: 'publish',
          retryStrategy: retry,
          container: container(PUBLISH, templated, publishArgs(templated)),
        },
      ],
    },
  });
}
