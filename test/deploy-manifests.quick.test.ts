// The engine definitions under deploy/: the Kubernetes and Argo objects pass their API schemas
// (validate()), the committed YAML/JSON is exactly what deploy/generate.ts writes, and the retry and
// failure rules say what the exit codes mean (75 transient, 78 permanent). Unknown fields are caught
// by TypeScript's excess-property checks (tsc runs in `make test`; see the @ts-expect-error below).
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Job } from 'kubernetes-models/batch/v1';
import { Workflow } from '@kubernetes-models/argo-workflows/argoproj.io/v1alpha1';
import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mebibytes, publishDefinition, publishSubmission, shardArrayJob, shardDefinition, SHARD_JOB_ID } from '../deploy/aws-batch/definitions.ts';
import { DEPLOY_DIR, generatedFiles, paramsFromArgs } from '../deploy/generate.ts';
import { publishJob, shardJob, workflow } from '../deploy/kubernetes/manifests.ts';
import { DEFAULT_PARAMS, EXIT_PERMANENT, EXIT_TRANSIENT, publishArgs, shardArgs, type DeployParams } from '../deploy/params.ts';
import { ROOT } from './fixtures/server/helpers.ts';

const P: DeployParams = { ...DEFAULT_PARAMS };
/** Another setup: an S3-compatible endpoint, more shards, no Secret. */
const OTHER: DeployParams = { ...DEFAULT_PARAMS, shards: 16, parallelism: 6, s3Endpoint: 'http://minio.storage:9000', s3Secret: '', retries: 1 };
let tmp: string;

beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'tilebake-deploy-'));
});

afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

describe('Kubernetes and Argo objects', () => {
  it('pass their API schemas', () => {
    for (const p of [P, OTHER]) for (const o of [shardJob(p), publishJob(p), workflow(p)]) expect(() => o.validate()).not.toThrow();
  });

  it('validate() refuses a field of the wrong type, and tsc refuses an unknown field', () => {
    const bad = new Job({ metadata: { name: 'x' }, spec: { completions: 'four' as unknown as number, template: {} } });
    expect(() => bad.validate()).toThrow(/completions/);
    const badWorkflow = new Workflow({ metadata: { name: 'x' }, spec: { templates: [{ name: 'a', retryStrategy: { retryPolicy: 'Sometimes' as 'Always' } }] } });
    expect(() => badWorkflow.validate()).toThrow(/retryPolicy/);
    // @ts-expect-error: a misspelt field is a compile error (excess-property check), not a silently ignored key.
    const typo = new Job({ metadata: { name: 'x' }, spec: { completionMod: 'Indexed', template: {} } });
    expect(typo.spec).toBeDefined();
  });

  it('shards run as an Indexed Job that fails an index on exit 78 and ignores disruptions', () => {
    const job = shardJob(OTHER);
    const spec = job.spec!;
    expect(spec.completionMode).toBe('Indexed');
    expect(spec.completions).toBe(16);
    expect(spec.parallelism).toBe(6);
    expect(spec.backoffLimitPerIndex).toBe(1);
    expect(spec.maxFailedIndexes).toBe(0);
    expect(spec.template.spec!.restartPolicy).toBe('Never');
    expect(spec.podFailurePolicy!.rules).toEqual([
      { action: 'FailIndex', onExitCodes: { containerName: 'shard', operator: 'In', values: [EXIT_PERMANENT] } },
      { action: 'Ignore', onPodConditions: [{ type: 'DisruptionTarget', status: 'True' }] },
    ]);
    const c = spec.template.spec!.containers[0];
    expect(c.name).toBe('shard');
    expect(c.args).toEqual(['shard', '--run', OTHER.run, '--scratch', '/scratch', '--s3-endpoint', 'http://minio.storage:9000']);
    expect(c.envFrom).toBeUndefined();
    // Kubernetes gives the index (JOB_COMPLETION_INDEX) itself; nothing else may set one.
    expect(c.env).toBeUndefined();
    expect(shardJob(P).spec!.template.spec!.containers[0].envFrom).toEqual([{ secretRef: { name: 'tilebake-s3' } }]);
    const pub = publishJob(P).spec!;
    expect(pub.template.spec!.containers[0].args).toEqual(publishArgs(P));
    expect(pub.podFailurePolicy!.rules[0]).toEqual({ action: 'FailJob', onExitCodes: { containerName: 'publish', operator: 'In', values: [EXIT_PERMANENT] } });
  });

  it('the Argo Workflow fans the shards out and publishes only after all of them', () => {
    const wf = workflow(P);
    const dag = wf.spec.templates!.find((t) => t.name === 'build')!.dag!;
    const shards = dag.tasks.find((t) => t.name === 'shards')!;
    expect(shards.withSequence).toEqual({ count: '{{workflow.parameters.shards}}' });
    expect(dag.tasks.find((t) => t.name === 'publish')!.dependencies).toEqual(['shards']);
    const shard = wf.spec.templates!.find((t) => t.name === 'shard')!;
    expect(shard.container!.env).toEqual([{ name: 'TILEBAKE_SHARD_INDEX', value: '{{inputs.parameters.index}}' }]);
    expect(shard.container!.args).toEqual(shardArgs({ ...P, run: '{{workflow.parameters.run}}' }));
    expect(shard.retryStrategy!.expression).toBe(`asInt(lastRetry.exitCode) == ${EXIT_TRANSIENT} || lastRetry.status == "Error"`);
    expect(wf.spec.arguments!.parameters!.map((a) => [a.name, a.value])).toEqual([
      ['image', P.image],
      ['run', P.run],
      ['out', P.out],
      ['shards', '4'],
    ]);
  });
});

describe('AWS Batch definitions', () => {
  it('retry exit 75 and lost hosts, end on exit 78 and anything else', () => {
    for (const def of [shardDefinition(P), publishDefinition(P)]) {
      expect(def.retryStrategy!.attempts).toBe(P.retries + 1);
      expect(def.retryStrategy!.evaluateOnExit).toEqual([
        { onExitCode: '75', action: 'RETRY' },
        { onExitCode: '78', action: 'EXIT' },
        { onStatusReason: 'Host EC2*', action: 'RETRY' },
        { onReason: '*', action: 'EXIT' },
      ]);
      expect(def.containerProperties!.resourceRequirements).toEqual([
        { type: 'VCPU', value: '2' },
        { type: 'MEMORY', value: '4096' },
      ]);
    }
    expect(shardDefinition(P).containerProperties!.command).toEqual(['shard', '--run', 'Ref::run', '--scratch', '/scratch']);
    expect(publishDefinition(OTHER).containerProperties!.command).toEqual(['publish', '--run', 'Ref::run', '--out', 'Ref::out', '--s3-endpoint', OTHER.s3Endpoint]);
  });

  it('an array job of n children, and a publish job that depends on the whole array', () => {
    expect(shardArrayJob(OTHER)).toMatchObject({ jobDefinition: 'tilebake-shard', arrayProperties: { size: 16 }, parameters: { run: OTHER.run } });
    // Batch arrays have at least 2 children: one shard is a plain job with its index set.
    const one = shardArrayJob({ ...P, shards: 1 });
    expect(one.arrayProperties).toBeUndefined();
    expect(one.containerOverrides!.environment).toEqual([{ name: 'TILEBAKE_SHARD_INDEX', value: '0' }]);
    expect(publishSubmission(P)).toMatchObject({ jobDefinition: 'tilebake-publish', dependsOn: [{ jobId: SHARD_JOB_ID }], parameters: { run: P.run, out: P.out } });
    expect(mebibytes('1.5Gi')).toBe(1536);
    expect(() => mebibytes('4GB')).toThrow(/--memory/);
  });
});

describe('deploy/generate.ts', () => {
  it('the committed files are what it generates', async () => {
    const files = generatedFiles(DEFAULT_PARAMS);
    expect(files.length).toBe(7);
    for (const f of files) expect(await readFile(join(DEPLOY_DIR, f.path), 'utf8'), f.path).toBe(f.text);
    // And the YAML reads back as the objects.
    expect(parse(await readFile(join(DEPLOY_DIR, 'kubernetes/shard-job.yaml'), 'utf8'))).toEqual(JSON.parse(JSON.stringify(shardJob(P))));
  });

  it('writes definitions for other parameters and names a bad one', async () => {
    const run = promisify(execFile);
    const args = ['--import', 'tsx', join(ROOT, 'deploy/generate.ts'), '--dir', tmp, '--shards', '16', '--parallelism', '6', '--s3-endpoint', OTHER.s3Endpoint, '--s3-secret', '', '--retries', '1'];
    await run(process.execPath, args, { cwd: ROOT });
    expect(parse(await readFile(join(tmp, 'kubernetes/shard-job.yaml'), 'utf8'))).toEqual(JSON.parse(JSON.stringify(shardJob(OTHER))));
    expect(JSON.parse(await readFile(join(tmp, 'aws-batch/shard-array-job.json'), 'utf8')).arrayProperties).toEqual({ size: 16 });
    expect(() => paramsFromArgs(['--shards', 'many'])).toThrow(/--shards: expected a whole number >= 1 \(got NaN\)/);
    expect(() => paramsFromArgs(['--run', '/local/folder'])).toThrow(/--run: expected s3:\/\/bucket\/prefix/);
    expect(() => paramsFromArgs(['--retries', '12'])).toThrow(/--retries/);
    expect(() => paramsFromArgs(['--nonsense', 'x'])).toThrow(/nonsense/);
    const failed = await run(process.execPath, [...args.slice(0, 3), '--memory', '4GB'], { cwd: ROOT }).then(
      () => undefined,
      (e: { code: number; stderr: string }) => e,
    );
    expect(failed?.code).toBe(2);
    expect(failed?.stderr).toBe('deploy/generate.ts: --memory: expected a Kubernetes quantity such as 4Gi (got "4GB")\n');
  });
});
