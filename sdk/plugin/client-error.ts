import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { ERRORS, errorBody, type ErrorCode } from './errors.ts';

/** Where a refused request is recorded: a logger's debug level (no secrets: only the CID and Node's error code). */
export interface ClientErrorLog {
  debug(fields: Record<string, unknown>, message: string): void;
}

/**
 * Fastify's `clientErrorHandler` for a listener: requests Node's parser refuses (a malformed
 * request line, bytes not allowed in a header, headers over the size limit) and requests not
 * received whole within the listener's `requestTimeout` never reach a route. They are answered
 * here, on the socket, with svc's error body and a CID like every other answer, and the
 * connection is closed.
 */
export function clientErrorReply(nextCid: () => string, log: ClientErrorLog) {
  return (err: NodeJS.ErrnoException, socket: Duplex): void => {
    if (err.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const code: ErrorCode = err.code === 'HPE_HEADER_OVERFLOW' ? 'HEADERS_TOO_LARGE' : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 'REQUEST_TIMEOUT' : 'MALFORMED_REQUEST';
    const { status, message } = ERRORS[code];
    const cid = nextCid();
    const body = JSON.stringify(errorBody(cid, message));
    log.debug({ cid, code: err.code }, 'request refused by the HTTP parser');
    socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nx-svc-cid: ${cid}\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
  };
}

/** What frameworkErrorReply answers with: Fastify's reply, as far as it is used here. */
export interface FrameworkReply {
  header(name: string, value: string): unknown;
  code(status: number): { send(body: unknown): unknown };
}

/**
 * Fastify's `frameworkErrors` for a listener: a URL its router cannot decode (a bad %-escape,
 * FST_ERR_BAD_URL) never reaches a route or the not-found handler, and Fastify's own answer has
 * neither svc's body nor a CID. `cidOf` gives the request's CID (the listener's request id, or a new one).
 */
export function frameworkErrorReply<R>(cidOf: (request: R) => string, log: ClientErrorLog) {
  return (err: Error & { code?: string }, request: R, reply: FrameworkReply): void => {
    const { status, message } = ERRORS.MALFORMED_REQUEST;
    const cid = cidOf(request);
    log.debug({ cid, code: err.code }, 'request refused by the router');
    reply.header('x-svc-cid', cid);
    reply.code(status).send(errorBody(cid, `${message}: the URL is not valid (a malformed %-escape)`));
  };
}

/**
 * Node's server options for a listener whose clients get `requestTimeoutMs` to send a whole
 * request (0: no limit). They must reach Node's server when it is made: Fastify sets its own
 * `requestTimeout` on the server afterwards, which Node then applies to headers but not to a
 * body still arriving (checked on Node 20). Headers get at most as long as the whole request,
 * which Node requires. Node looks for expired requests every 30 s by default, so a 2 s limit
 * would fire after up to 32 s: it looks at a tenth of the limit, between 250 ms and 30 s.
 */
export function listenerTimeouts(requestTimeoutMs: number): { requestTimeout: number; headersTimeout?: number; connectionsCheckingInterval: number } {
  if (requestTimeoutMs <= 0) return { requestTimeout: 0, connectionsCheckingInterval: 30_000 };
  return {
    requestTimeout: requestTimeoutMs,
    headersTimeout: Math.min(60_000, requestTimeoutMs),
    connectionsCheckingInterval: Math.min(30_000, Math.max(250, Math.floor(requestTimeoutMs / 10))),
  };
}
