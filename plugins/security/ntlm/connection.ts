import type { Socket } from 'node:net';
import { buildConnector, Client } from 'undici';
import type { OutgoingRequest, OutgoingResponse } from '../../capabilities.ts';

/** Headers undici refuses or that belong to the connection, not the request. */
const CONNECTION_HEADERS = new Set(['host', 'connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'trailer', 'content-length']);
// NTLM's own header: a caller's Authorization would break the handshake.
const OWN_HEADERS = new Set([...CONNECTION_HEADERS, 'authorization']);
// Idle sockets are kept this long unless the server's Keep-Alive header says less: every new
// socket costs a handshake (two extra round trips).
const KEEP_ALIVE_MS = 30_000;

/**
 * One keep-alive socket to one origin (an undici Client, pipelining 1), and whether the socket
 * now open is the one NTLM authenticated. Callers serialize their use of it.
 */
export class NtlmConnection {
  private readonly client: Client;
  private socket: Socket | undefined;
  private authenticatedSocket: Socket | undefined;

  constructor(origin: string) {
    const connector = buildConnector({});
    this.client = new Client(origin, {
      pipelining: 1,
      keepAliveTimeout: KEEP_ALIVE_MS,
      keepAliveMaxTimeout: 10 * KEEP_ALIVE_MS,
      // The socket itself is what NTLM authenticates: keep hold of it to know when it changed.
      connect: (options, callback) =>
        connector(options, (...args) => {
          if (args[1] !== null) this.socket = args[1];
          callback(...args);
        }),
    });
  }

  /**
   * The socket now open was authenticated. Closed (undici closes it as soon as a response says
   * `Connection: close`), or replaced, it is not: the next request needs a handshake.
   */
  get authenticated(): boolean {
    return this.socket !== undefined && this.socket === this.authenticatedSocket && !this.socket.destroyed;
  }

  /** The socket the last response came on. */
  get currentSocket(): Socket | undefined {
    return this.socket;
  }

  markAuthenticated(socket: Socket | undefined): void {
    if (socket !== undefined && socket === this.socket && !socket.destroyed) this.authenticatedSocket = socket;
  }

  /** Sends one request and reads the whole answer. `body` replaces the request's own when given. */
  async request(request: OutgoingRequest, authorization: string | undefined, signal: AbortSignal, body: Buffer | undefined = request.body): Promise<OutgoingResponse> {
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(request.headers)) if (!OWN_HEADERS.has(name.toLowerCase())) headers[name] = value;
    if (authorization !== undefined) headers.authorization = authorization;
    const res = await this.client.request({
      method: request.method,
      path: `${request.url.pathname}${request.url.search}`,
      headers,
      body: body ?? null,
      signal,
    });
    const data = Buffer.from(await res.body.arrayBuffer());
    return { status: res.statusCode, headers: res.headers, body: data };
  }

  /** Graceful: a request running now is answered first. */
  async close(): Promise<void> {
    if (!this.client.closed && !this.client.destroyed) await this.client.close();
  }

  /** At once: the socket may be in the middle of a response nobody will read. */
  destroy(): void {
    if (!this.client.destroyed) void this.client.destroy().catch(() => {});
  }
}

/**
 * Runs tasks one at a time. A task aborted while it waits leaves the line at once, and the next
 * one still waits for whatever was running.
 */
export class Lane {
  private tail: Promise<void> = Promise.resolve();

  async run<T>(signal: AbortSignal, task: () => Promise<T>): Promise<T> {
    const previous = this.tail;
    let release!: () => void;
    const mine = new Promise<void>((resolve) => (release = resolve));
    this.tail = previous.then(() => mine);
    try {
      await untilAborted(previous, signal);
      return await task();
    } finally {
      release();
    }
  }
}

function untilAborted(promise: Promise<void>, signal: AbortSignal): Promise<void> {
  signal.throwIfAborted();
  return new Promise<void>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    void promise.then(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    });
  });
}
