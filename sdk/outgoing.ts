import { callHost } from './internal/runtime.ts';
import { BadGateway, GatewayTimeout, ServiceUnavailable, type ServiceError } from './errors.ts';

export type ParamValue = string | number | boolean;

/** Options of one outgoing call (spec D). */
export interface CallOptions {
  /** Keys matching `{placeholder}`s of the connection's url_path fill the path (URL-encoded); the rest become the query string. */
  params?: Record<string, ParamValue | ParamValue[]>;
  /** An object or array is sent as JSON; a string is sent as it is (set its Content-Type in headers). */
  payload?: unknown;
  /** Headers of this call, added to the connection's own. Credentials are added by svc: never put secrets here. */
  headers?: Record<string, string>;
  /** Space-separated OAuth scopes, overriding the Bearer token definition's scopes for this call. */
  auth_scopes?: string;
}

/** An answer from the external system, whatever its status (only failures to get one raise). */
export interface OutgoingResponse<T = unknown> {
  status: number;
  /** 2xx. */
  ok: boolean;
  /** Lower-case names; repeated headers joined with ', '. */
  headers: Record<string, string>;
  /** The body parsed when the response is JSON, else its text. */
  data: T;
  /** The body as text (UTF-8). */
  text: string;
}

export type OutgoingFailureKind = 'timeout' | 'connection' | 'tls' | 'too_large' | 'cancelled' | 'budget';

/**
 * No response: the connection timed out, could not connect, or ran out of its retry budget.
 * Raised in the service (spec, Errors 8); unless the service maps it, the caller gets 500.
 * `gatewayError` maps it in one line.
 */
export class OutgoingError extends Error {
  constructor(
    readonly connection: string,
    readonly kind: OutgoingFailureKind,
    message: string,
    readonly attempts: number,
  ) {
    super(message);
    this.name = 'OutgoingError';
  }
}

/**
 * Rethrows an outgoing failure as the gateway answer callers expect: a timeout (or a budget spent
 * on timeouts) 504, a connection that cannot be made 503, anything else 502; other errors as they are.
 *
 *   const res = await crm.get(ctx.cid, { params: { id } }).catch(gatewayError);
 */
export function gatewayError(err: unknown): never {
  if (!(err instanceof OutgoingError)) throw err;
  const mapped: ServiceError =
    err.kind === 'timeout' || err.kind === 'budget' ? new GatewayTimeout(`${err.connection} did not answer in time`) : err.kind === 'connection' ? new ServiceUnavailable(`${err.connection} is unreachable`) : new BadGateway(`${err.connection} failed`);
  throw mapped;
}

type Method = 'get' | 'post' | 'put' | 'patch' | 'delete' | 'head' | 'options';

/** An outgoing REST connection of config, by name. Each method takes the correlation ID first (spec D). */
export type OutgoingConnection = {
  readonly [M in Method]: <T = any>(cid: string, options?: CallOptions) => Promise<OutgoingResponse<T>>;
};

type Reply = { status: number; headers: Record<string, string>; text: string } | { failed: { kind: OutgoingFailureKind; message: string; attempts: number } };

function isJson(contentType: string | undefined): boolean {
  const type = contentType?.split(';')[0]?.trim().toLowerCase();
  return type === 'application/json' || (type !== undefined && type.endsWith('+json'));
}

async function call(connection: string, method: string, cid: string, options: CallOptions = {}): Promise<OutgoingResponse> {
  if (typeof cid !== 'string') throw new TypeError(`${connection}.${method.toLowerCase()}(cid, options): the correlation ID (ctx.cid) comes first`);
  const reply = (await callHost('outgoing.call', { connection, method, ...options }, cid)) as Reply;
  if ('failed' in reply) throw new OutgoingError(connection, reply.failed.kind, reply.failed.message, reply.failed.attempts);
  let data: unknown = reply.text;
  if (reply.text !== '' && isJson(reply.headers['content-type'])) {
    try {
      data = JSON.parse(reply.text);
    } catch {
      // Labelled JSON but not JSON: the text is what there is.
    }
  }
  return { status: reply.status, ok: reply.status >= 200 && reply.status < 300, headers: reply.headers, data, text: reply.text };
}

/**
 * The outgoing REST connection `name` of config. The network is reached only this way: svc adds
 * the connection's credentials on the host side, retries as it is configured, and cancels the call
 * when this request ends.
 *
 *   const crm = outgoing('CRM');
 *   const res = await crm.get(ctx.cid, { params: { customer_id: 42 } });
 */
export function outgoing(name: string): OutgoingConnection {
  return {
    get: (cid, options) => call(name, 'GET', cid, options),
    post: (cid, options) => call(name, 'POST', cid, options),
    put: (cid, options) => call(name, 'PUT', cid, options),
    patch: (cid, options) => call(name, 'PATCH', cid, options),
    delete: (cid, options) => call(name, 'DELETE', cid, options),
    head: (cid, options) => call(name, 'HEAD', cid, options),
    options: (cid, options) => call(name, 'OPTIONS', cid, options),
  } as OutgoingConnection;
}
