import type { Logger } from 'pino';

/** Default interval: at most one line per failure kind in this many ms. */
export const FAILURE_LOG_INTERVAL_MS = 10_000;

interface KindState {
  /** When the last line for this kind was written. */
  at: number;
  /** Failures since then that were not written. */
  suppressed: number;
  timer?: NodeJS.Timeout;
}

/**
 * Error lines rate-limited per failure kind: the first failure of a kind is written at once (its
 * message, no stack), later ones within the interval are counted and summed up in one line at the
 * interval's end. A dead store failing 1,000 requests a second writes a line per interval, not 1,000.
 */
export class FailureLog {
  private readonly kinds = new Map<string, KindState>();

  constructor(private readonly log: Pick<Logger, 'error' | 'info'>, private readonly intervalMs = FAILURE_LOG_INTERVAL_MS) {}

  /** Report one failure of `kind`; `fields` go into the log line when it is written. */
  report(kind: string, message: string, fields: Record<string, unknown> = {}): void {
    const now = Date.now();
    const state = this.kinds.get(kind);
    if (!state || (now - state.at >= this.intervalMs && !state.timer)) {
      this.kinds.set(kind, { at: now, suppressed: 0 });
      this.log.error({ kind, ...fields }, message);
      return;
    }
    state.suppressed++;
    state.timer ??= setTimeout(() => this.flush(kind), Math.max(0, state.at + this.intervalMs - now)).unref();
  }

  /** Write the summary line of `kind` (when anything was suppressed) and start a new interval. */
  private flush(kind: string): void {
    const state = this.kinds.get(kind);
    if (!state) return;
    state.timer = undefined;
    if (state.suppressed === 0) return;
    const seconds = Math.round((Date.now() - state.at) / 1000);
    this.log.error({ kind, failures: state.suppressed }, `${state.suppressed} more ${kind} failures in the last ${seconds} s`);
    state.at = Date.now();
    state.suppressed = 0;
  }

  /** An informational line (not rate-limited): e.g. recovery. */
  info(message: string, fields: Record<string, unknown> = {}): void {
    this.log.info(fields, message);
  }

  /** Write pending summaries now and stop the timers (on close). */
  close(): void {
    for (const [kind, state] of this.kinds) {
      if (state.timer) {
        clearTimeout(state.timer);
        this.flush(kind);
      }
    }
  }
}
