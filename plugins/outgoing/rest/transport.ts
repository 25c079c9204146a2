import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Pool } from 'undici';
import type { OutgoingRequest, OutgoingResponse } from '../../capabilities.ts';
import type { OutgoingEntry } from './schema.ts';
import { Deadline } from '../../../sdk/plugin/index.ts';

/**
 * Why an attempt got no response. `sent`: the request may have reached the upstream (it matters
 * for repeating a non-idempotent call).
 */
export type FailureKind = 'timeout' | 'connection' | 'tls' | 'too_large' | 'cancelled';

export class TransportFailure extends Error {
  constructor(
    readonly kind: FailureKind,
    message: string,
    readonly sent: boolean,
  ) {
    super(message);
  }
}

const NOT_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);
const TLS = /^(ERR_TLS_|CERT_|DEPTH_ZERO_|SELF_SIGNED_|UNABLE_TO_(GET|VERIFY)_|ERR_SSL_)/;

/** One undici pool per connection (keep-alive, capped sockets); built when config loads. */
export class HttpTransport {
  private readonly pool: Pool;

  constructor(private readonly entry: OutgoingEntry) {
    const tls = entry.tls;
    this.pool = new Pool(new URL(entry.address).origin, {
      connections: entry.max_connections,
      // A socket kept idle past the server's own idle timeout is closed by the server, and a call
      // sent just then is lost with it: keep_alive_ms bounds even a longer Keep-Alive: timeout.
      keepAliveTimeout: entry.keep_alive_ms,
      keepAliveMaxTimeout: entry.keep_alive_ms,
      connect: tls && {
        rejectUnauthorized: tls.reject_unauthorized,
        // Relative to the working directory, like server.data_dir.
        ca: tls.ca_file ? readFileSync(resolve(tls.ca_file)) : undefined,
        servername: tls.server_name,
      },
    });
  }

  /** One attempt: resolves the response, or throws TransportFailure. */
  async send(request: OutgoingRequest, timeoutMs: number, cancel: AbortSignal): Promise<OutgoingResponse> {
    const deadline = new Deadline(cancel, timeoutMs);
    const signal = deadline.signal;
    let sent = false;
    try {
      const res = await this.pool.request({
        path: request.url.pathname + request.url.search,
        method: request.method as 'GET',
        headers: request.headers,
        body: request.body,
        signal,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      });
      sent = true;
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of res.body as AsyncIterable<Buffer>) {
        size += chunk.length;
        if (size > this.entry.max_response_bytes) {
          res.body.destroy();
          throw new TransportFailure('too_large', `the response is larger than max_response_bytes (${this.entry.max_response_bytes})`, true);
        }
        chunks.push(chunk);
      }
      return { status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks, size) };
    } catch (err) {
      if (err instanceof TransportFailure) throw err;
      if (cancel.aborted) throw new TransportFailure('cancelled', 'the calling request ended', sent);
      const code = String((err as { code?: unknown }).code ?? (err as { cause?: { code?: unknown } }).cause?.code ?? '');
      if (deadline.timedOut || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') throw new TransportFailure('timeout', `no response within ${timeoutMs} ms`, true);
      if (TLS.test(code)) throw new TransportFailure('tls', `TLS failure (${code})`, false);
      if (NOT_SENT.has(code)) throw new TransportFailure('connection', `cannot connect (${code})`, false);
      throw new TransportFailure('connection', `connection failed (${code || (err as Error).message})`, true);
    } finally {
      deadline.end();
    }
  }

  /** Waits for requests in flight, then closes the sockets. */
  close(): Promise<void> {
    return this.pool.close();
  }
}
