import { availableParallelism } from 'node:os';
import { Piscina } from 'piscina';

/** execArgv for worker threads: the parent's, plus the tsx loader so workers can import .ts files. */
export function workerExecArgv(): string[] {
  const argv = [...process.execArgv];
  const hasTsx = argv.some((a, i) => (a === '--import' || a === '--loader') && /tsx/.test(argv[i + 1] ?? '')) || argv.some((a) => /^--(import|loader)=.*tsx/.test(a));
  if (!hasTsx) argv.push('--import', import.meta.resolve('tsx'));
  return argv;
}

/** Default pool size: one thread per core. */
export function defaultWorkers(): number {
  return availableParallelism();
}

/**
 * Default render pool size: one worker (one headless Chromium) per two cores. One Chromium keeps two
 * cores busy: SwiftShader rasterises on a thread per core while MapLibre's main thread and tile worker
 * run beside it. Measured on 2 cores (bench/render), a second browser adds only its start-up (~1.4
 * CPU-s: Chromium, page, MapLibre, the style, compiling MapLibre's code) and parses tiles the first
 * already parsed: the stage is slower with 2 browsers than with 1 at every job size measured.
 */
export function defaultRenderWorkers(): number {
  return Math.max(1, Math.floor(availableParallelism() / 2));
}

/** A Piscina pool running `filename` (a .ts worker module URL or path) in `threads` threads, one task at a time each. */
export function createPool(filename: string, threads = defaultWorkers()): Piscina {
  return new Piscina({
    filename,
    minThreads: threads,
    maxThreads: threads,
    concurrentTasksPerWorker: 1,
    idleTimeout: Number.POSITIVE_INFINITY,
    execArgv: workerExecArgv(),
  });
}
