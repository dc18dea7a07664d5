/**
 * Reads from a build store with a deadline, retries and typed failures: the one place that decides
 * what a failed read is (a timeout, a bad answer, corrupt data), for HTTP statuses, /health, logs and
 * metrics, which subscribe to every read's outcome through a `ReadListener` (static-server/serve.ts).
 */
import { HttpStatus } from './http-status.ts';

/** What went wrong with a store read. */
export type StoreFailureKind = 'timeout' | 'bad-answer' | 'corrupt';

/**
 * A read from the store failed. The message names the file or URL and the cause, for logs and the
 * CLI; HTTP clients get a generic message (see static-server/errors.ts).
 */
export abstract class StoreError extends Error {
  abstract readonly kind: StoreFailureKind;
  /**
   * True when the store itself looks unavailable (timeouts, connection failures, HTTP 5xx/429, a full
   * file table): worth a retry, and what /health counts. False for answers that will not change by
   * asking again (404, corrupt bytes).
   */
  readonly transient: boolean;

  constructor(message: string, options: { cause?: unknown; transient: boolean }) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.transient = options.transient;
  }
}

/** The store did not answer within the read's deadline (retries included). */
export class StoreTimeoutError extends StoreError {
  readonly kind = 'timeout';
  constructor(message: string, cause?: unknown) {
    super(message, { cause, transient: true });
    this.name = 'StoreTimeoutError';
  }
}

/** The store could not be reached or answered with an error (HTTP status, I/O error, missing file). */
export class StoreBadAnswerError extends StoreError {
  readonly kind = 'bad-answer';
  constructor(message: string, options: { cause?: unknown; transient: boolean }) {
    super(message, options);
    this.name = 'StoreBadAnswerError';
  }
}

/** The store answered, but the bytes are not a valid archive or index (truncated, flipped bytes). */
export class StoreCorruptError extends StoreError {
  readonly kind = 'corrupt';
  constructor(message: string, cause?: unknown) {
    super(message, { cause, transient: false });
    this.name = 'StoreCorruptError';
  }
}

/** True for any StoreError. */
export function isStoreError(e: unknown): e is StoreError {
  return e instanceof StoreError;
}

/** How long reads may take and how often failed ones are tried again. */
export interface ReadPolicy {
  /** Longest a read may take, retries and backoff included, in ms. */
  timeoutMs: number;
  /** Extra attempts after a transient failure (never after a timeout: the deadline is spent). */
  retries: number;
  /** Backoff before the first retry, in ms; doubled for each further one, with jitter. */
  backoffMs: number;
}

/** Defaults of `tilebake serve` (`--store-timeout-ms`, `--store-retries`). */
export const DEFAULT_READ_POLICY: Readonly<ReadPolicy> = Object.freeze({ timeoutMs: 5000, retries: 2, backoffMs: 100 });

/** The outcome of one read (after its retries), as listeners see it. */
export interface ReadOutcome {
  ok: boolean;
  /** Set when `ok` is false. */
  error?: StoreError;
  /** Attempts made (1 when the first one answered). */
  attempts: number;
  /** Wall time of the whole read, in ms. */
  ms: number;
  /** Bytes the read returned (reads of bytes that answered; unset for opens and failures). */
  bytes?: number;
}

/** Called once per store read with its outcome: health tracking, and the hook for metrics. */
export type ReadListener = (outcome: ReadOutcome) => void;

/** An HTTP answer with an unexpected status (thrown by one attempt, classified by `toStoreError`). */
export class HttpStatusError extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
    this.name = 'HttpStatusError';
  }
}

/** errno codes of failures that may pass when tried again. */
const TRANSIENT_CODES = new Set(['EMFILE', 'ENFILE', 'EAGAIN', 'EBUSY', 'ECONNRESET', 'ECONNREFUSED', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED', 'UND_ERR_CONNECT_TIMEOUT']);
/** HTTP statuses worth a retry. */
const TRANSIENT_STATUS = (s: number) => s >= HttpStatus.Internal || s === HttpStatus.TooManyRequests || s === HttpStatus.RequestTimeout;

/** The errno-style code of an error or of its cause (fetch wraps socket errors as `TypeError: fetch failed`). */
function codeOf(e: unknown): { code?: string; text: string } {
  const err = e as { code?: unknown; message?: unknown; cause?: unknown };
  const cause = err?.cause as { code?: unknown; message?: unknown } | undefined;
  const code = typeof err?.code === 'string' ? err.code : typeof cause?.code === 'string' ? cause.code : undefined;
  const text = typeof cause?.message === 'string' && cause.message !== '' ? cause.message : typeof err?.message === 'string' ? err.message : String(e);
  return { code, text };
}

/** Classify an attempt's failure; `what` names the file or URL (and range) in the message. */
export function toStoreError(what: string, e: unknown): StoreError {
  if (isStoreError(e)) return e;
  if (e instanceof HttpStatusError) {
    return new StoreBadAnswerError(`${what}: ${e.message}`, { cause: e, transient: TRANSIENT_STATUS(e.status) });
  }
  const { code, text } = codeOf(e);
  if (e instanceof TypeError && text !== (e as Error).message) {
    // fetch: "fetch failed" / "terminated" with the socket error as the cause.
    return new StoreBadAnswerError(`${what}: cannot reach the store (${text})`, { cause: e, transient: true });
  }
  return new StoreBadAnswerError(`${what}: ${code && !text.includes(code) ? `${code} ` : ''}${text}`, {
    cause: e,
    transient: code !== undefined && TRANSIENT_CODES.has(code),
  });
}

/** Resolve with `p`, or reject when `signal` aborts first (for work that cannot be cancelled, e.g. a file read). */
function untilAborted<T>(p: Promise<T>, signal: AbortSignal, dispose?: (late: T) => void): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    if (signal.aborted) onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        if (signal.aborted) dispose?.(v);
        else resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}

/** Wait `ms`, or reject when `signal` aborts. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return untilAborted(new Promise<void>((r) => setTimeout(r, ms)), signal);
}

/** Marker reason of the deadline's abort. */
const DEADLINE = Symbol('store read deadline');

/**
 * Run `attempt` until it answers, within `policy.timeoutMs` in total. Each attempt gets an AbortSignal
 * that fires at the deadline (fetch stops and frees its socket; a file read is abandoned, its late
 * result handed to `dispose`). Transient failures are retried after exponential backoff with jitter
 * while the deadline allows. Throws a StoreError; reports the outcome to `listener`.
 * `what` describes the read for messages (called only on failure).
 */
export async function guardedRead<T>(
  what: () => string,
  policy: ReadPolicy,
  attempt: (signal: AbortSignal) => Promise<T>,
  listener?: ReadListener,
  dispose?: (late: T) => void,
): Promise<T> {
  const started = Date.now();
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(DEADLINE), policy.timeoutMs);
  const fail = (error: StoreError): never => {
    listener?.({ ok: false, error, attempts, ms: Date.now() - started });
    throw error;
  };
  const timedOut = (cause: unknown) =>
    new StoreTimeoutError(`${what()}: no answer within ${policy.timeoutMs} ms${attempts > 1 ? ` (${attempts} attempts)` : ''}`, cause === DEADLINE ? undefined : cause);
  let attempts = 0;
  let last: unknown;
  try {
    while (!ctl.signal.aborted) {
      attempts++;
      try {
        const value = await untilAborted(attempt(ctl.signal), ctl.signal, dispose);
        if (listener) listener({ ok: true, attempts, ms: Date.now() - started, bytes: value instanceof Uint8Array ? value.byteLength : undefined });
        return value;
      } catch (e) {
        if (ctl.signal.aborted) return fail(timedOut(e));
        const error = toStoreError(what(), e);
        const wait = policy.backoffMs * 2 ** (attempts - 1) * (0.5 + Math.random() / 2);
        if (!error.transient || attempts > policy.retries || Date.now() + wait >= started + policy.timeoutMs) return fail(error);
        last = error;
        await sleep(wait, ctl.signal).catch(() => undefined);
      }
    }
    return fail(timedOut(last));
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A StoreError for any failure of reading or decoding a stored file: failed reads stay what they
 * are; anything else (a reader's "corrupt header", a decoder's RangeError) is corrupt data.
 */
export function asStoreError(path: string, e: unknown): StoreError {
  if (isStoreError(e)) return e;
  return new StoreCorruptError(`${path}: ${e instanceof Error ? e.message : String(e)}`, e);
}
