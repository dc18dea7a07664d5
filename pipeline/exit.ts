/**
 * Exit codes of `plan`, `shard` and `publish` that engines act on (sysexits.h): 75 (EX_TEMPFAIL)
 * for failures worth retrying, 78 (EX_CONFIG) for permanent ones.
 */
import { isUserError, UserError } from '../lib/errors.ts';
import { isStoreError } from '../lib/store-read.ts';

/** Bad or foreign run.json, a fingerprint mismatch, inconsistent shards, a bad index: do not retry. */
export const EXIT_PERMANENT = 78;
/** Storage unreachable, a browser that died after its own retries, shards not done yet: try again. */
export const EXIT_TRANSIENT = 75;

/** A permanent problem of a run (bad or foreign run.json, fingerprint mismatch, inconsistent shards). */
export function permanent(message: string): UserError {
  return new UserError(message, { exitCode: EXIT_PERMANENT });
}

/** A problem that may go away by itself (shards still running, storage unreachable). */
export function transient(message: string, cause?: unknown): UserError {
  return new UserError(message, { exitCode: EXIT_TRANSIENT, cause });
}

/**
 * Any failure of a run command as a UserError with an engine exit code: store errors by their
 * `transient` flag; user errors keep 75/78 and are otherwise permanent (bad config, bad arguments);
 * anything else (a renderer crash after its retries, an I/O error) is transient, so an engine retries it
 * a bounded number of times.
 */
export function asRunError(e: unknown): UserError {
  if (isUserError(e)) return e.exitCode === EXIT_TRANSIENT || e.exitCode === EXIT_PERMANENT ? e : permanent(e.message);
  if (isStoreError(e)) return new UserError(e.message, { exitCode: e.transient ? EXIT_TRANSIENT : EXIT_PERMANENT, cause: e });
  const err = e as NodeJS.ErrnoException;
  return transient(`${err?.message ?? String(e)}${err?.code ? ` (${err.code})` : ''}`, e);
}

/** Run `f`, turning every failure into a UserError with an engine exit code. */
export async function withRunExitCodes<T>(f: () => Promise<T>): Promise<T> {
  try {
    return await f();
  } catch (e) {
    throw asRunError(e);
  }
}
