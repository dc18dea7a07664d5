/**
 * The one bounded queue of heavy work (composing static images, rendering tiles on demand): at most
 * `concurrency` jobs run, at most `queue` wait in order; beyond that a job is refused at once with
 * 503 and Retry-After instead of piling up behind the others, so tiles and other routes keep being
 * served under a flood.
 */
import { HttpError } from '../lib/http-error.ts';
import { HttpStatus } from '../lib/http-status.ts';

export interface BoundedQueueOptions {
  /** Jobs running at once. */
  concurrency: number;
  /** Jobs waiting beyond those. */
  queue: number;
  /** What the jobs are, plural, for the 503's message ("static images"). */
  what: string;
  /** Seconds a refused client is asked to wait (Retry-After). */
  retryAfterS: number;
}

export class BoundedQueue {
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(readonly options: BoundedQueueOptions) {}

  /** Jobs running or waiting. */
  get size(): number {
    return this.running + this.waiting.length;
  }

  /**
   * Run `job` when a slot is free. A full queue refuses at once: the 503 HttpError is thrown by this
   * call itself, before anything is queued, so that a caller can tell a refusal from a failed job.
   */
  run<T>(job: () => Promise<T>): Promise<T> {
    const { concurrency, queue, what, retryAfterS } = this.options;
    if (this.running >= concurrency && this.waiting.length >= queue) {
      throw new HttpError(
        HttpStatus.Unavailable,
        `too many ${what} in progress (${this.running} running, ${this.waiting.length} waiting); retry in ${retryAfterS} s`,
        {},
        { 'retry-after': String(retryAfterS) },
      );
    }
    return this.runAdmitted(job);
  }

  private async runAdmitted<T>(job: () => Promise<T>): Promise<T> {
    if (this.running >= this.options.concurrency) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.running++;
    try {
      return await job();
    } finally {
      // Hand the slot to the next waiter (running stays the same), or free it.
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }
}
