/**
 * What an HTTP client is told about a failed store read: 504 for a timeout, else 502, with a
 * generic message (never a path or URL; the log has the details). The server and the render
 * page's host answer alike.
 */
import { HttpStatus } from './http-status.ts';
import type { StoreError } from './store-read.ts';

/** The message per kind of failure. */
const STORE_MESSAGES: Readonly<Record<StoreError['kind'], string>> = {
  timeout: 'storage timeout: the build\'s storage did not answer in time',
  'bad-answer': 'storage error: the build\'s storage did not answer properly',
  corrupt: 'storage error: the stored data for this request is unreadable',
};

/** The HTTP status of a failed store read: 504 for a timeout, else 502. */
export function storeErrorStatus(e: StoreError): number {
  return e.kind === 'timeout' ? HttpStatus.GatewayTimeout : HttpStatus.BadGateway;
}

/** The message a client is given for a failed store read. */
export function storeErrorMessage(e: StoreError): string {
  return STORE_MESSAGES[e.kind];
}
