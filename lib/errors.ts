/**
 * An error caused by the user's input (a file, a config field, a request), not by a bug.
 * The CLI prints its message alone (no stack) and exits with `exitCode`.
 */
export class UserError extends Error {
  /** Process exit code for the CLI. */
  readonly exitCode: number;
  constructor(message: string, options?: { cause?: unknown; exitCode?: number }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'UserError';
    this.exitCode = options?.exitCode ?? 1;
  }
}

/** True when `e` is a UserError (works across module copies). */
export function isUserError(e: unknown): e is UserError {
  return e instanceof Error && e.name === 'UserError';
}
