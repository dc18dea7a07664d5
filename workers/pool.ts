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
