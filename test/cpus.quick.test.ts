/**
 * lib/cpus.ts: pools are sized from the CPUs the engine gave the process (Slurm variables, a cgroup
 * CPU quota, the affinity mask), not from the machine's cores. The quota cases run a real process in
 * a real cgroup with a CFS quota (cgroup v1 `cpu`, as on this machine, or v2 `cpu.max`) where one can
 * be made (root); the cgroup files of a v2 container are also read from a folder laid out like one.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, rmdir, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { cgroupCpuLimit, cpuBudget } from '../lib/cpus.ts';

const ROOT = resolve(import.meta.dirname, '..');
const NO_CGROUP = { root: '/nonexistent', self: '/nonexistent' };
const cores = availableParallelism();

describe('cpuBudget', () => {
  test('the Slurm allocation caps the affinity count; without one, the affinity count', () => {
    expect(cpuBudget({}, NO_CGROUP)).toEqual({ cpus: cores, from: 'CPU affinity' });
    expect(cpuBudget({ SLURM_CPUS_PER_TASK: '1', SLURM_CPUS_ON_NODE: '8' }, NO_CGROUP)).toEqual({ cpus: 1, from: 'SLURM_CPUS_PER_TASK=1' });
    expect(cpuBudget({ SLURM_CPUS_ON_NODE: '1' }, NO_CGROUP)).toEqual({ cpus: 1, from: 'SLURM_CPUS_ON_NODE=1' });
    // Slurm's compressed per-node form: this node's count first.
    expect(cpuBudget({ SLURM_JOB_CPUS_PER_NODE: '1(x3)' }, NO_CGROUP)).toEqual({ cpus: 1, from: 'SLURM_JOB_CPUS_PER_NODE=1(x3)' });
    // More than the affinity mask allows (no task/affinity plugin): the mask wins; nonsense is ignored.
    expect(cpuBudget({ SLURM_CPUS_PER_TASK: String(cores + 6) }, NO_CGROUP).cpus).toBe(cores);
    expect(cpuBudget({ SLURM_CPUS_PER_TASK: '0', SLURM_CPUS_ON_NODE: 'x' }, NO_CGROUP)).toEqual({ cpus: cores, from: 'CPU affinity' });
  });
});

describe('cgroupCpuLimit', () => {
  const dirs: string[] = [];
  afterAll(async () => {
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  });

  test('cgroup v2: the smallest cpu.max of the process\'s cgroup and its ancestors, rounded up; "max" is no limit', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tilebake-cpus-'));
    dirs.push(dir);
    const leaf = join(dir, 'kubepods.slice', 'pod1', 'ctr');
    await mkdir(leaf, { recursive: true });
    await writeFile(join(dir, 'self'), '0::/kubepods.slice/pod1/ctr\n');
    await writeFile(join(leaf, 'cpu.max'), 'max 100000\n');
    const paths = { root: dir, self: join(dir, 'self') };
    expect(cgroupCpuLimit(paths)).toBeUndefined();
    await writeFile(join(dir, 'kubepods.slice', 'pod1', 'cpu.max'), '150000 100000\n');
    expect(cgroupCpuLimit(paths)).toEqual({ cpus: 2, from: 'cgroup cpu.max 150000/100000' });
    await writeFile(join(leaf, 'cpu.max'), '50000 100000\n');
    expect(cgroupCpuLimit(paths)).toEqual({ cpus: 1, from: 'cgroup cpu.max 50000/100000' });
    expect(cpuBudget({ SLURM_CPUS_PER_TASK: '4' }, paths)).toEqual({ cpus: 1, from: 'cgroup cpu.max 50000/100000' });
  });

  // A real cgroup v1 `cpu` hierarchy with a quota of 1 CPU; a node process started inside it reports 1.
  const v1 = '/sys/fs/cgroup/cpu';
  test.runIf(existsSync(join(v1, 'cpu.cfs_quota_us')) && process.getuid?.() === 0)('a process in a real cgroup with a 1-CPU CFS quota gets 1 CPU', async () => {
    const cg = join(v1, `tilebake-cpus-test-${process.pid}`);
    await mkdir(cg);
    try {
      await writeFile(join(cg, 'cpu.cfs_period_us'), '100000');
      await writeFile(join(cg, 'cpu.cfs_quota_us'), '100000');
      const script = `echo $$ > ${cg}/tasks && exec "${process.execPath}" --import tsx -e "import('./lib/cpus.ts').then((m) => console.log(JSON.stringify(m.cpuBudget({}))))"`;
      const out = await new Promise<string>((res, rej) => execFile('/bin/sh', ['-c', script], { cwd: ROOT }, (e, stdout, stderr) => (e ? rej(new Error(`${e.message}\n${stderr}`)) : res(stdout))));
      expect(JSON.parse(out)).toEqual({ cpus: 1, from: 'cgroup cpu.cfs_quota_us 100000/100000' });
    } finally {
      await rmdir(cg).catch(() => undefined);
    }
  }, 60_000);
});
