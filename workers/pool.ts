import { Piscina } from 'piscina';
import { availableCpus } from '../lib/cpus.ts';

/** True for `--import`/`--loader` flags (the flag's index in argv) that load tsx. */
function isTsxFlag(argv: readonly string[], i: number): boolean {
  const a = argv[i];
  return ((a === '--import' || a === '--loader') && /tsx/.test(argv[i + 1] ?? '')) || /^--(import|loader)=.*tsx/.test(a);
}

/**
 * execArgv for worker threads: the parent's without tsx's loader, plus that loader when `tsx` (a
 * worker module in TypeScript; compiled ones in dist/ and plain JavaScript ones need none).
 */
export function workerExecArgv(tsx: boolean): string[] {
  const argv: string[] = [];
  const parent = process.execArgv;
  for (let i = 0; i < parent.length; i++) {
    if (isTsxFlag(parent, i)) {
      if (parent[i] === '--import' || parent[i] === '--loader') i++;
      continue;
    }
    argv.push(parent[i]);
  }
  if (tsx) argv.push('--import', import.meta.resolve('tsx'));
  return argv;
}

/** Default pool size: one thread per CPU this process may use (lib/cpus.ts: the engine's allocation, the cgroup quota, the affinity). */
export function defaultWorkers(): number {
  return availableCpus();
}

/**
 * Default render pool size: one worker (one headless Chromium) per two CPUs this process may use
 * (lib/cpus.ts: a Slurm task of `-c 2` or a pod limited to 2 CPUs gets one, whatever the node's
 * cores). One Chromium keeps two cores busy: SwiftShader rasterises on a thread per core while MapLibre's main thread and tile worker
 * run beside it. Measured on 2 cores (bench/render), a second browser adds only its start-up (~1.4
 * CPU-s: Chromium, page, MapLibre, the style, compiling MapLibre's code) and parses tiles the first
 * already parsed: the stage is slower with 2 browsers than with 1 at every job size measured.
 */
export function defaultRenderWorkers(): number {
  return Math.max(1, Math.floor(availableCpus() / 2));
}

/** Options of createPool. */
export interface PoolOptions {
  /** Given to every thread (Piscina `workerData`). */
  workerData?: unknown;
  /**
   * Keep idle threads' event loops running: for threads that own work beyond their tasks (a
   * browser starting or running). By default Piscina blocks idle threads in Atomics.wait.
   */
  background?: boolean;
  /**
   * Start threads as tasks come (up to `threads`), not all at once: for threads that start something
   * costly (a browser), so that a job of fewer tasks than threads starts no more than it uses.
   */
  lazy?: boolean;
}

/**
 * A Piscina pool running `filename` (a worker module URL or path) in `threads` threads, one task at a
 * time each. The threads load tsx only for a TypeScript module (the sources; lib/package-root.ts's
 * `moduleUrl` gives the compiled one when this code runs compiled).
 */
export function createPool(filename: string, threads = defaultWorkers(), opts: PoolOptions = {}): Piscina {
  return new Piscina({
    filename,
    minThreads: opts.lazy ? 0 : threads,
    maxThreads: threads,
    concurrentTasksPerWorker: 1,
    idleTimeout: Number.POSITIVE_INFINITY,
    execArgv: workerExecArgv(filename.endsWith('.ts')),
    workerData: opts.workerData,
    ...(opts.background ? { atomics: 'disabled' as const } : {}),
  });
}
