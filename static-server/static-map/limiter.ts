/**
 * Bounds CPU-heavy work (composing static images, upscaling tiles): at most `concurrency` jobs run,
 * at most `queue` wait; beyond that the request is answered at once with 503 and Retry-After instead
 * of piling up behind the others, so tiles and other routes keep being served under a flood.
 */
import { HttpError } from '../context.ts';
import { HttpStatus } from '../../lib/http-status.ts';

/** Seconds a client is asked to wait after a 503. */
const RETRY_AFTER_S = 1;

export class WorkLimiter {
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(
    readonly concurrency: number,
    readonly queue: number,
    private readonly what: string,
  ) {}

  async run<T>(job: () => Promise<T>): Promise<T> {
    if (this.running >= this.concurrency) {
      if (this.waiting.length >= this.queue) {
        throw new HttpError(
          HttpStatus.Unavailable,
          `too many ${this.what} in progress (${this.running} running, ${this.waiting.length} waiting); retry in ${RETRY_AFTER_S} s`,
          {},
          { 'retry-after': String(RETRY_AFTER_S) },
        );
      }
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    } else this.running++;
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
