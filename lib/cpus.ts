/**
 * How many CPUs this process may use: what the engine gave it, not the machine's core count. A Slurm
 * task of `--cpus-per-task=2` on a 64-core node, or a Kubernetes pod limited to 2 CPUs, has 2; pools
 * sized from the core count there would start 32 browsers on 2 CPUs. The one rule every default pool
 * size uses (render browsers, worker threads, HTTP workers).
 */
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';

/** CPUs available and what said so (for log lines). */
export interface CpuBudget {
  cpus: number;
  /** e.g. `SLURM_CPUS_PER_TASK=2`, `cgroup cpu.max 200000/100000`, `CPU affinity`. */
  from: string;
}

/** Where the cgroup filesystems are (tests point it at a real cgroup they made). */
export interface CgroupPaths {
  /** Mount point of the cgroup filesystems (v2 unified, or the v1 controllers beneath it). */
  root: string;
  /** This process's /proc/<pid>/cgroup. */
  self: string;
}

const CGROUP: CgroupPaths = { root: '/sys/fs/cgroup', self: '/proc/self/cgroup' };

function read(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch {
    return undefined;
  }
}

/** A whole number ≥ 1 at the start of `s` (Slurm's "2(x3)" or "4,2" give 2 and 4), else undefined. */
function leadingCount(s: string | undefined): number | undefined {
  const m = s === undefined ? null : /^\s*(\d+)/.exec(s);
  const n = m ? Number(m[1]) : 0;
  return n >= 1 ? n : undefined;
}

/** The CPUs a Slurm job step gave this task: --cpus-per-task, else the job's CPUs on this node. */
function slurmCpus(env: NodeJS.ProcessEnv): CpuBudget | undefined {
  for (const name of ['SLURM_CPUS_PER_TASK', 'SLURM_CPUS_ON_NODE', 'SLURM_JOB_CPUS_PER_NODE']) {
    const n = leadingCount(env[name]);
    if (n !== undefined) return { cpus: n, from: `${name}=${env[name]}` };
  }
  return undefined;
}

/** `quota/period` as whole CPUs (at least 1), or undefined for no limit. */
function quotaCpus(quota: number, period: number): number | undefined {
  return Number.isFinite(quota) && quota > 0 && period > 0 ? Math.max(1, Math.ceil(quota / period)) : undefined;
}

/** `dir` and its ancestors up to `root` (a limit on any of them applies). */
function upFrom(root: string, path: string): string[] {
  const parts = path.split('/').filter(Boolean);
  return Array.from({ length: parts.length + 1 }, (_, i) => join(root, ...parts.slice(0, parts.length - i)));
}

/**
 * The CPU quota of this process's cgroup and its ancestors (the smallest): cgroup v2 `cpu.max`
 * ("200000 100000"), v1 `cpu.cfs_quota_us` / `cpu.cfs_period_us` (Kubernetes CPU limits, Docker
 * `--cpus`, systemd CPUQuota). Undefined without a limit or where nothing can be read.
 */
export function cgroupCpuLimit(paths: CgroupPaths = CGROUP): CpuBudget | undefined {
  const self = read(paths.self);
  if (!self) return undefined;
  let best: CpuBudget | undefined;
  const consider = (cpus: number | undefined, from: string) => {
    if (cpus !== undefined && (!best || cpus < best.cpus)) best = { cpus, from };
  };
  for (const line of self.split('\n')) {
    const [, controllers, path] = /^\d+:([^:]*):(.*)$/.exec(line) ?? [];
    if (path === undefined) continue;
    if (controllers === '') {
      // cgroup v2 (in a container the namespace's root is the mount's root: `path` is "/").
      for (const dir of upFrom(paths.root, path)) {
        const [quota, period] = (read(join(dir, 'cpu.max')) ?? '').split(/\s+/);
        if (quota && quota !== 'max') consider(quotaCpus(Number(quota), Number(period)), `cgroup cpu.max ${quota}/${period}`);
      }
    } else if (controllers.split(',').includes('cpu')) {
      // cgroup v1: the cpu controller's mount is named after its controllers ("cpu,cpuacct" or "cpu").
      for (const mount of new Set([controllers, 'cpu'])) {
        for (const dir of upFrom(join(paths.root, mount), path)) {
          const quota = Number(read(join(dir, 'cpu.cfs_quota_us')));
          const period = Number(read(join(dir, 'cpu.cfs_period_us')));
          consider(quotaCpus(quota, period), `cgroup cpu.cfs_quota_us ${quota}/${period}`);
        }
      }
    }
  }
  return best;
}

/**
 * The CPUs this process may use: the fewest of the Slurm allocation (SLURM_CPUS_PER_TASK,
 * SLURM_CPUS_ON_NODE, SLURM_JOB_CPUS_PER_NODE), the cgroup CPU quota and the CPUs its affinity mask
 * allows (`os.availableParallelism()`, which honours `taskset` and Slurm's task/affinity but not
 * quotas); at least 1.
 */
export function cpuBudget(env: NodeJS.ProcessEnv = process.env, paths: CgroupPaths = CGROUP): CpuBudget {
  let best: CpuBudget = { cpus: Math.max(1, availableParallelism()), from: 'CPU affinity' };
  // A tie names the engine's setting: that is what sized the pool.
  for (const b of [slurmCpus(env), cgroupCpuLimit(paths)]) if (b && b.cpus <= best.cpus) best = b;
  return best;
}

/** `cpuBudget().cpus`. */
export function availableCpus(env: NodeJS.ProcessEnv = process.env): number {
  return cpuBudget(env).cpus;
}
