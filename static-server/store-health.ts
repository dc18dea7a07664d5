import type { ReadOutcome, StoreError, StoreFailureKind } from '../lib/store-read.ts';
import type { FailureLog } from './failure-log.ts';

/** Consecutive failed reads (timeouts or bad answers) after which the store counts as failing. */
export const FAILED_READS_TO_FAIL = 3;
/** /health probes the store itself when no read finished for this long (an idle or drained instance). */
export const HEALTH_PROBE_AFTER_MS = 5_000;

/** What /health reports. */
export interface StoreState {
  ok: boolean;
  /** The kind of the last failure while failing. */
  failure?: StoreFailureKind;
  /** Failed reads in a row. */
  consecutiveFailures: number;
}

/**
 * Whether the store answers, from the outcome of every read: failing after FAILED_READS_TO_FAIL
 * transient failures in a row (timeouts, connection errors, HTTP 5xx) or one failed probe, ok again
 * after any successful read. Failures that asking again would not change (a missing file, corrupt
 * bytes) do not count. Every failed read is reported to the rate-limited failure log.
 */
export class StoreHealth {
  private consecutiveFailures = 0;
  private lastFailure?: StoreFailureKind;
  private lastOutcomeAt = Date.now();
  private probing?: Promise<void>;

  /** `probe` is a small read of the store (the manifest); its outcome also arrives through `onRead`. */
  constructor(private readonly probe: () => Promise<unknown>, readonly failures: FailureLog) {}

  /** The store's read listener. */
  readonly onRead = (outcome: ReadOutcome): void => {
    this.lastOutcomeAt = Date.now();
    if (outcome.ok) {
      if (this.failing) this.failures.info('store reads work again', { after: this.consecutiveFailures });
      this.consecutiveFailures = 0;
      this.lastFailure = undefined;
      return;
    }
    const error = outcome.error!;
    this.report(error);
    if (error.transient) {
      this.consecutiveFailures++;
      this.lastFailure = error.kind;
    }
  };

  /** Log a store failure (rate-limited per kind); used for reads and for corrupt data found by readers. */
  report(error: StoreError): void {
    this.failures.report(`store ${error.kind}`, `store read failed (${error.kind}): ${error.message}`);
  }

  private get failing(): boolean {
    return this.consecutiveFailures >= FAILED_READS_TO_FAIL;
  }

  /**
   * The state for /health, answered at once. Starts a probe (one at a time) when the store is failing
   * (to notice recovery without traffic) or no read finished recently (to notice an outage without
   * traffic); a failed probe makes the state failing by itself.
   */
  state(): StoreState {
    if (!this.probing && (this.failing || Date.now() - this.lastOutcomeAt > HEALTH_PROBE_AFTER_MS)) {
      this.probing = this.probe().then(
        () => undefined,
        (e: StoreError) => {
          if (e.transient) this.consecutiveFailures = Math.max(this.consecutiveFailures, FAILED_READS_TO_FAIL);
        },
      );
      void this.probing.finally(() => (this.probing = undefined));
    }
    return { ok: !this.failing, ...(this.failing ? { failure: this.lastFailure } : {}), consecutiveFailures: this.consecutiveFailures };
  }
}
