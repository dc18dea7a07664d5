/** Running a command for a benchmark, and the CPU of a cgroup v1 cpuacct group (bench/chromium-start, bench/distributed). */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

/** cgroup v1 cpuacct hierarchy: counts every process of a command's tree, also those its parents never wait for. */
export const CPUACCT = '/sys/fs/cgroup/cpuacct';

/** Runs `cmd` in the checkout; resolves with its stdout and stderr, rejects with their tail on a non-zero exit. */
export function runCommand(cmd: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<string> {
  return new Promise((res, rej) => {
    const p = spawn(cmd, args, { cwd: resolve(import.meta.dirname, '..'), env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.stderr.on('data', (d: Buffer) => (out += d.toString()));
    p.on('exit', (code) => (code === 0 ? res(out) : rej(new Error(`${cmd} ${args.join(' ')} exited ${code}:\n${out.slice(-4000)}`))));
  });
}

/** CPU seconds (user + system) the processes of cpuacct group `cg` have used. */
export function cpuacctSeconds(cg: string): number {
  return Number(readFileSync(join(cg, 'cpuacct.usage'), 'utf8')) / 1e9;
}
