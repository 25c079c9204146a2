import { randomBytes } from 'node:crypto';
import { Deadline } from '../../../sdk/plugin/index.ts';
import type { OutgoingAuthContext, OutgoingAuthorizer, OutgoingRequest, OutgoingResponse } from '../../capabilities.ts';
import { Lane, NtlmConnection } from './connection.ts';
import { authenticateMessage, negotiateMessage, ntHash, ntowfv2, parseChallenge, type Identity } from './messages.ts';

/** A network error on a reused socket that a retry on a fresh one may cure (a keep-alive race). */
const SOCKET_CLOSED = new Set(['UND_ERR_SOCKET', 'ECONNRESET', 'EPIPE']);
/** RFC 9110 9.2.2: these may be sent again automatically. */
const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE', 'PUT', 'DELETE']);

interface Origin {
  lane: Lane;
  connection: NtlmConnection | undefined;
}

type SendContext = OutgoingAuthContext & { timeoutMs: number };

/**
 * One ntlm definition at work: a connection per origin, each authenticated once by the
 * NEGOTIATE / CHALLENGE / AUTHENTICATE exchange and then reused without it. Calls to one origin
 * are serialized, since NTLM authenticates the socket, not the request. Nothing here logs, and
 * the password itself is not kept: only its NTOWFv2.
 */
export class NtlmAuthorizer implements OutgoingAuthorizer {
  private readonly origins = new Map<string, Origin>();
  private readonly responseKey: Buffer;
  private closed = false;

  constructor(
    private readonly identity: Identity,
    password: string,
    private readonly now: () => number,
  ) {
    this.responseKey = ntowfv2(ntHash(password), identity.user, identity.domain);
  }

  /** NTLM works on the connection: `send` does everything. */
  authorize(): void {}

  async send(request: OutgoingRequest, context: SendContext): Promise<OutgoingResponse> {
    if (this.closed) throw Object.assign(new Error('this NTLM definition was removed or changed'), { code: 'ERR_NTLM_CLOSED' });
    const deadline = new Deadline(context.signal, context.timeoutMs);
    const signal = deadline.signal;
    const key = request.url.origin;
    const slot = this.origins.get(key) ?? { lane: new Lane(), connection: undefined };
    this.origins.set(key, slot);
    try {
      return await slot.lane.run(signal, async () => {
        try {
          return await this.exchange(slot, key, request, signal);
        } catch (err) {
          // Aborted mid-response, refused, or broken: the socket's state is unknown, start afresh.
          slot.connection?.destroy();
          slot.connection = undefined;
          throw err;
        }
      });
    } catch (err) {
      if (!signal.aborted) throw err;
      throw context.signal.aborted
        ? Object.assign(new Error('the NTLM call was aborted'), { code: 'ABORT_ERR', name: 'AbortError' })
        : Object.assign(new Error(`the NTLM call got no answer within ${context.timeoutMs} ms`), { code: 'ETIMEDOUT', name: 'TimeoutError' });
    } finally {
      deadline.end();
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    const connections = [...this.origins.values()].flatMap((o) => (o.connection ? [o.connection] : []));
    this.origins.clear();
    await Promise.all(connections.map((c) => c.close()));
  }

  /** On an authenticated socket the request goes as it is; otherwise a handshake on a new connection. */
  private async exchange(slot: Origin, key: string, request: OutgoingRequest, signal: AbortSignal): Promise<OutgoingResponse> {
    if (slot.connection?.authenticated) {
      const response = await this.sendAuthenticated(slot.connection, request, signal);
      if (response !== undefined) return response;
    }
    slot.connection?.destroy();
    slot.connection = new NtlmConnection(key);
    return this.handshake(slot.connection, request, signal);
  }

  /**
   * undefined when the request needs a new handshake: a 401 (the server forgot the socket's
   * authentication), or an idempotent request that found the socket closed under it.
   */
  private async sendAuthenticated(connection: NtlmConnection, request: OutgoingRequest, signal: AbortSignal): Promise<OutgoingResponse | undefined> {
    try {
      const response = await connection.request(request, undefined, signal);
      return response.status === 401 ? undefined : response;
    } catch (err) {
      if (!signal.aborted && SOCKET_CLOSED.has(codeOf(err)) && IDEMPOTENT.has(request.method.toUpperCase())) return undefined;
      throw err;
    }
  }

  /**
   * NEGOTIATE goes with an empty body (the server answers it with a challenge and would discard
   * a body anyway), AUTHENTICATE with the real one. A server that does not answer the NEGOTIATE
   * with an NTLM challenge did not ask for NTLM: its answer stands, or, when the request has a
   * body, the request is sent once more with it.
   */
  private async handshake(connection: NtlmConnection, request: OutgoingRequest, signal: AbortSignal): Promise<OutgoingResponse> {
    const negotiate = negotiateMessage();
    const hasBody = request.body !== undefined && request.body.length > 0;
    const first = await connection.request(request, `NTLM ${negotiate.toString('base64')}`, signal, hasBody ? Buffer.alloc(0) : request.body);
    const token = first.status === 401 ? ntlmToken(first.headers['www-authenticate']) : undefined;
    if (token === undefined) {
      return first.status === 401 || !hasBody ? first : connection.request(request, undefined, signal);
    }
    // The challenge belongs to the socket it came on: a server that closes it has broken NTLM.
    const challengeSocket = connection.currentSocket;
    if (challengeSocket === undefined || challengeSocket.destroyed) throw handshakeBroken();
    const authenticate = authenticateMessage({
      identity: this.identity,
      responseKey: this.responseKey,
      challenge: parseChallenge(Buffer.from(token, 'base64')),
      negotiate,
      clientChallenge: randomBytes(8),
      now: this.now,
    });
    const final = await connection.request(request, `NTLM ${authenticate.toString('base64')}`, signal);
    if (connection.currentSocket !== challengeSocket) throw handshakeBroken();
    // A final 401 (wrong password, locked account) is the caller's answer: never retried.
    if (final.status !== 401) connection.markAuthenticated(challengeSocket);
    return final;
  }
}

/** The base64 token of `WWW-Authenticate: NTLM <token>` (one of several challenges, too). */
export function ntlmToken(header: string | string[] | undefined): string | undefined {
  const values = header === undefined ? [] : Array.isArray(header) ? header : [header];
  for (const value of values) {
    for (const part of value.split(',')) {
      const match = /^\s*NTLM\s+([A-Za-z0-9+/]+={0,2})\s*$/i.exec(part);
      if (match) return match[1];
    }
  }
  return undefined;
}

function handshakeBroken(): Error {
  return Object.assign(new Error('the server closed the connection during the NTLM handshake'), { code: 'ERR_NTLM_PROTOCOL' });
}

function codeOf(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : '';
}
