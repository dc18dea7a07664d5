/**
 * Takes batched per event-loop turn, one batch in flight: the takes of one turn go at once when no
 * batch is in flight, else they wait for its answer and go as the next batch (the busier the process,
 * the larger the batches; an idle one sends at once). Used by the Redis limiter of each process.
 */
import type { LimitDecision, LimitedKey, Take } from './limits.ts';

interface Queued extends Take {
  resolve: (d: LimitDecision) => void;
  reject: (e: unknown) => void;
}

export class TurnBatcher {
  private queued: Queued[] = [];
  private inFlight = false;
  private scheduled = false;

  /** `run` decides a batch's takes one after the other, in order. */
  constructor(private readonly run: (takes: readonly Take[]) => Promise<LimitDecision[]>) {}

  take(key: LimitedKey, height: boolean): Promise<LimitDecision> {
    const p = new Promise<LimitDecision>((resolve, reject) => this.queued.push({ key, height, resolve, reject }));
    if (!this.inFlight && !this.scheduled) {
      this.scheduled = true;
      // Once this turn's requests have been read.
      setImmediate(() => {
        this.scheduled = false;
        this.flush();
      });
    }
    return p;
  }

  private flush(): void {
    if (this.inFlight || this.queued.length === 0) return;
    const batch = this.queued;
    this.queued = [];
    this.inFlight = true;
    this.run(batch).then(
      (ds) => batch.forEach((q, i) => q.resolve(ds[i])),
      (e: unknown) => batch.forEach((q) => q.reject(e)),
    ).finally(() => {
      this.inFlight = false;
      this.flush();
    });
  }
}
