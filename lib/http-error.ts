/** The JSON error body of every HTTP error tilebake answers: `{"error": message, "status": status, ...extra}`. */
export function errorBody(status: number, message: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { error: message, status, ...extra };
}

/**
 * Thrown by route handlers; the app's error handler turns it into
 * `{"error": message, "status": status, ...extra}` with `headers`.
 */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly extra: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'HttpError';
  }
}
