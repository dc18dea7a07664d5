/**
 * The one mapping from errors to HTTP answers: every error is `{"error": message, "status": N, ...}`
 * with `Cache-Control: no-store`, whether it comes from a route, fastify itself, the store or Node's
 * HTTP parser. Store failures are 502/504 with a generic message (the log has the details).
 */
import { STATUS_CODES, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { storeErrorMessage, storeErrorStatus } from '../lib/store-answer.ts';
import { isStoreError } from '../lib/store-read.ts';
import { errorBody } from '../lib/http-error.ts';
import { HttpError, type ServerContext } from './context.ts';
import { HttpStatus } from '../lib/http-status.ts';

/** Largest request head (request line and headers) accepted, in bytes; 431 beyond. */
export const MAX_HEADER_BYTES = 16 * 1024;

export { errorBody } from '../lib/http-error.ts';

/**
 * Answer `err`: HttpError as given; fastify's own 4xx with its status; store failures 502/504
 * (corrupt data is logged here, failed reads were logged by the store's listener); anything else
 * 500, logged rate-limited.
 */
export function sendError(ctx: ServerContext, err: FastifyError | Error, req: FastifyRequest, reply: FastifyReply): void {
  reply.header('cache-control', 'no-store');
  if (err instanceof HttpError || err.name === 'HttpError') {
    const e = err as HttpError;
    reply.headers(e.headers).code(e.status).send(errorBody(e.status, e.message, e.extra));
    return;
  }
  if (isStoreError(err)) {
    if (err.kind === 'corrupt') ctx.health.report(err);
    const status = storeErrorStatus(err);
    reply.code(status).send(errorBody(status, storeErrorMessage(err)));
    return;
  }
  const status = (err as FastifyError).statusCode;
  if (status !== undefined && status >= HttpStatus.BadRequest && status < HttpStatus.Internal) {
    reply.code(status).send(errorBody(status, err.message));
    return;
  }
  ctx.health.failures.report('internal', `request failed: ${req.method} ${req.url.split('?')[0]}: ${err.message}`, { err });
  reply.code(HttpStatus.Internal).send(errorBody(HttpStatus.Internal, 'internal server error'));
}

/**
 * Fastify's `clientErrorHandler`: requests Node's HTTP parser refuses (malformed, headers over
 * MAX_HEADER_BYTES, too slow) get the same JSON body, written on the socket, which is then closed.
 */
export function clientErrorHandler(cors: string): (err: NodeJS.ErrnoException, socket: Duplex) => void {
  return (err, socket) => {
    if (err.code === 'ECONNRESET' || socket.destroyed) return;
    // As Node does: once a response has started on this socket (e.g. an error answered before the
    // body was read, then the body's leftovers fail to parse), a second answer would corrupt it.
    if ((socket as Duplex & { _httpMessage?: ServerResponse })._httpMessage?.headersSent) {
      socket.destroy();
      return;
    }
    const [status, message] =
      err.code === 'HPE_HEADER_OVERFLOW'
        ? [HttpStatus.HeaderTooLarge, `request headers larger than ${MAX_HEADER_BYTES} bytes`]
        : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? [HttpStatus.RequestTimeout, 'request not received in time']
          : [HttpStatus.BadRequest, 'malformed HTTP request'];
    const body = JSON.stringify(errorBody(status, message));
    const head = [
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}`,
      'Content-Type: application/json; charset=utf-8',
      `Content-Length: ${Buffer.byteLength(body)}`,
      'Cache-Control: no-store',
      ...(cors !== '' ? [`Access-Control-Allow-Origin: ${cors}`] : []),
      'Connection: close',
    ];
    if (socket.writable) socket.write(`${head.join('\r\n')}\r\n\r\n${body}`);
    socket.destroy();
  };
}
