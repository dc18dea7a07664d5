/** Running a command for a benchmark, with its tree's peak RSS (bench/chromium-start, bench/distributed, bench/osm, bench/region). */
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { sampleTreeRss } from '../test/fixtures/measure.ts';
const MB = 1024 * 1024;
const MS_PER_S = 1000;

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

/** Run a command, sampling the memory of its process tree; resolves with its stdout and peak RSS. */
export function runSampled(command: string, args: string[]): Promise<{ stdout: string; seconds: number; peakMb: number }> {
  return new Promise((ok, fail) => {
    const t0 = performance.now();
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, TILEBAKE_QUIET: '1' } });
    const rss = sampleTreeRss(child.pid, 100);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr = (stderr + c).slice(-4000)));
    child.once('error', fail);
    child.once('close', (code) => {
      const peakMb = rss.stop() / MB;
      if (code !== 0) fail(new Error(`${command} ${args.join(' ')} exited with ${code}: ${stderr}`));
      else ok({ stdout, seconds: (performance.now() - t0) / MS_PER_S, peakMb });
    });
  });
}
