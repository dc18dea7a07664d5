/**
 * Bad inputs of `tilebake plan / shard / publish` (docs/distributed.md): each gets a message naming the
 * file or variable and the documented exit code (78 permanent, 75 transient), before any rendering,
 * and publish never leaves a half-published version. The end-to-end runs are in distributed-slurm.test.ts.
 */
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UserError } from '../lib/errors.ts';
import { shardIndex } from '../pipeline/run/engine-index.ts';
import { shard } from '../pipeline/run/shard.ts';
import { runCli as runTilebake, type CliResult } from './fixtures/cli.ts';

/** The engines' index variables: the test's own environment must not choose a shard. */
const ENGINE_VARS = /^(SLURM_|AWS_BATCH_|CLOUD_RUN_|BATCH_TASK_|JOB_COMPLETION_INDEX|TILEBAKE_SHARD_INDEX)/;

/** The CLI without the test's engine variables, with `env`. */
function runCli(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  return runTilebake(args, { env, unset: ENGINE_VARS });
}

const RUN_ID = '20260101T000000Z-abcdef';
const runJson = (n: number) => ({ format: 'tilebake-run/1', run: RUN_ID, n, configHash: 'x', archives: { 's/1x.png': 'f'.repeat(64) }, styles: {}, fonts: false, inputs: [], tilebake: '0.1.0' });
const done = (run: string, index: number, n: number) => ({
  format: 'tilebake-shard/1',
  run,
  index,
  n,
  archives: { 's/1x.png': { path: `shards/${index}/s/1x.png.pmtiles`, bytes: 1, sha256: '0', fingerprint: 'f'.repeat(64), tiles: 1 } },
});

let dir: string;
let run: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tilebake-dist-inputs-'));
  run = join(dir, 'run');
  await mkdir(run);
  await writeFile(join(run, 'run.json'), JSON.stringify(runJson(2)));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('the shard index', () => {
  it('comes from exactly one engine variable or --index, below n, with the engine count checked', () => {
    expect(shardIndex(4, undefined, { SLURM_ARRAY_TASK_ID: '3' })).toBe(3);
    expect(shardIndex(4, undefined, { JOB_COMPLETION_INDEX: '0' })).toBe(0);
    expect(shardIndex(4, 2, {})).toBe(2);
    expect(() => shardIndex(4, undefined, {})).toThrow(/no shard index/);
    expect(() => shardIndex(4, undefined, { SLURM_ARRAY_TASK_ID: '1', TILEBAKE_SHARD_INDEX: '1' })).toThrow(/given twice \(SLURM_ARRAY_TASK_ID and TILEBAKE_SHARD_INDEX\)/);
    expect(() => shardIndex(4, undefined, { AWS_BATCH_JOB_ARRAY_INDEX: '1', AWS_BATCH_JOB_ARRAY_SIZE: '5' })).toThrow(/AWS_BATCH_JOB_ARRAY_SIZE: the engine runs 5 tasks but the run has n = 4/);
    expect(() => shardIndex(4, undefined, { CLOUD_RUN_TASK_INDEX: 'x' })).toThrow(/CLOUD_RUN_TASK_INDEX: expected a whole number/);
    // A full Slurm array must have n tasks; a partial re-run (--array=2) says nothing about n.
    const slurm = (count: number, max: number) => ({ SLURM_ARRAY_TASK_ID: '1', SLURM_ARRAY_TASK_COUNT: String(count), SLURM_ARRAY_TASK_MIN: '0', SLURM_ARRAY_TASK_MAX: String(max) });
    expect(() => shardIndex(4, undefined, slurm(3, 2))).toThrow(/SLURM_ARRAY_TASK_COUNT: the engine runs 3 tasks/);
    expect(shardIndex(4, undefined, slurm(4, 3))).toBe(1);
    expect(shardIndex(4, undefined, { SLURM_ARRAY_TASK_ID: '2', SLURM_ARRAY_TASK_COUNT: '1', SLURM_ARRAY_TASK_MIN: '2', SLURM_ARRAY_TASK_MAX: '2' })).toBe(2);
  });
});

describe('bad inputs exit 78 (permanent) or 75 (transient) with a clear message', () => {
  it('a missing run.json', async () => {
    const r = await runCli(['shard', '--run', join(dir, 'nothing'), '--index', '0']);
    expect(r.code).toBe(78);
    expect(r.stderr).toContain(`${join(dir, 'nothing')}/run.json: not found (run \`tilebake plan`);
  });

  it('a foreign run.json', async () => {
    const other = join(dir, 'foreign');
    await mkdir(other);
    await writeFile(join(other, 'run.json'), JSON.stringify({ format: 'tilebake-current/1', build: 'x' }));
    const r = await runCli(['publish', '--run', other, '--out', join(dir, 'out-foreign')]);
    expect(r.code).toBe(78);
    expect(r.stderr).toContain('run.json: field "format": expected "tilebake-run/1" (not a tilebake run)');
  });

  it('an index >= n, two engine variables, a count mismatch', async () => {
    const r = await runCli(['shard', '--run', run], { SLURM_ARRAY_TASK_ID: '2' });
    expect([r.code, r.stderr.trim()]).toEqual([78, "tilebake: SLURM_ARRAY_TASK_ID: shard index 2 is not below the run's n = 2 (valid: 0..1)"]);
    // The same checks in process (each CLI start costs seconds on a loaded machine): exit code 78 too.
    const refused = (env: Record<string, string>) => shard({ run, env }).then(() => undefined, (e: UserError) => [e.exitCode, e.message]);
    expect(await refused({ JOB_COMPLETION_INDEX: '0', AWS_BATCH_JOB_ARRAY_INDEX: '0' })).toEqual([78, 'shard index given twice (JOB_COMPLETION_INDEX and AWS_BATCH_JOB_ARRAY_INDEX): set exactly one']);
    expect(await refused({ CLOUD_RUN_TASK_INDEX: '0', CLOUD_RUN_TASK_COUNT: '3' })).toEqual([78, 'CLOUD_RUN_TASK_COUNT: the engine runs 3 tasks but the run has n = 2 shards (submit an array of 2)']);
  });

  it('publish before all shards are done (75), or with a shard uploaded by another run (78): nothing published', async () => {
    const out = join(dir, 'out');
    await mkdir(join(run, 'shards', '0'), { recursive: true });
    await writeFile(join(run, 'shards', '0', 'DONE.json'), JSON.stringify(done(RUN_ID, 0, 2)));
    let r = await runCli(['publish', '--run', run, '--out', out]);
    expect(r.code).toBe(75);
    expect(r.stderr).toContain('publish: shards 1 of 2 are not done (no shards/1/DONE.json); nothing published');
    await mkdir(join(run, 'shards', '1'), { recursive: true });
    await writeFile(join(run, 'shards', '1', 'DONE.json'), JSON.stringify(done('20250101T000000Z-000000', 1, 2)));
    r = await runCli(['publish', '--run', run, '--out', out]);
    expect(r.code).toBe(78);
    expect(r.stderr).toContain(`shards/1/DONE.json: uploaded by run 20250101T000000Z-000000, not by this run ${RUN_ID}; nothing published`);
    expect(await readdir(out).catch(() => [])).toEqual([]);
  });

  it('plan with a bad shard count, or into a run of another config', async () => {
    const r = await runCli(['plan', '--config', resolve('data/sample/config.json'), '--run', run, '--shards', '0']);
    expect(r.code).toBe(78);
    expect(r.stderr).toContain('--shards: expected a whole number >= 1 (got 0)');
    const again = await runCli(['plan', '--config', resolve('data/sample/config.json'), '--run', run, '--shards', '2']);
    expect(again.code).toBe(78);
    expect(again.stderr).toContain(`already holds run ${RUN_ID} (n = 2) of another config; plan into a new --run location`);
  });
});
