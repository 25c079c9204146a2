import { z } from 'zod';
import { SvcError, type Clock, type HostCall, type HostCallContext, scopedFor } from '../../../sdk/plugin/index.ts';
import { HTTP_METHODS } from '../../../sdk/plugin/index.ts';
import type { OutgoingAuthContext, OutgoingAuthorizer, OutgoingRequest, OutgoingResponse, Tracing } from '../../capabilities.ts';
import { backoffMs, retryAfterMs, safeToRepeat } from './retry.ts';
import type { CallCounts } from './stats.ts';
import { RESERVED_HEADERS, type OutgoingEntry } from './schema.ts';
import { TransportFailure, type HttpTransport } from './transport.ts';
import type { Params } from './url.ts';

/** A connection as config built it: its pool, its path builder and its credentials. */
export interface Connection {
  entry: OutgoingEntry;
  transport: HttpTransport;
  buildPath: (params: Params | undefined) => string;
  auth: OutgoingAuthorizer | undefined;
  /** Why it cannot be used (its security definition's plugin is missing...), when it cannot. */
  unusable: string | undefined;
}

const scalar = z.union([z.string().max(65_536), z.number(), z.boolean()]);
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** What a service sends (sdk/outgoing.ts); checked here, on the host side. */
export const callArgs = z
  .object({
    connection: z.string().min(1).max(200),
    method: z.enum(HTTP_METHODS),
    params: z.record(z.string().max(256), z.union([scalar, z.array(scalar).max(1000)])).optional(),
    payload: z.unknown().optional(),
    headers: z.record(z.string().regex(TOKEN).max(256), z.string().max(16_384).regex(/^[\t\x20-\x7e\x80-\xff]*$/)).optional(),
    auth_scopes: z.string().max(4096).optional(),
  })
  .strict();
export type CallArgs = z.infer<typeof callArgs>;

/** What the service's SDK receives: the response, or why there is none (it raises OutgoingError). */
export type CallResult =
  | { status: number; headers: Record<string, string>; text: string }
  | { failed: { kind: TransportFailure['kind'] | 'budget'; message: string; attempts: number } };

function requestOf(conn: Connection, args: CallArgs): OutgoingRequest {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(conn.entry.headers ?? {})) headers[k.toLowerCase()] = v;
  for (const [k, v] of Object.entries(args.headers ?? {})) {
    const name = k.toLowerCase();
    if (RESERVED_HEADERS.has(name)) throw new SvcError('INTERNAL', `header '${k}' is set by the HTTP client`);
    headers[name] = v;
  }
  let body: Buffer | undefined;
  if (args.payload !== undefined && args.payload !== null) {
    // Spec D: a dictionary is sent as JSON; a string goes as it is, with the type the service set.
    if (typeof args.payload === 'string') body = Buffer.from(args.payload, 'utf8');
    else {
      body = Buffer.from(JSON.stringify(args.payload), 'utf8');
      headers['content-type'] ??= 'application/json';
    }
  }
  headers.accept ??= 'application/json, */*;q=0.5';
  const url = new URL(conn.buildPath(args.params), conn.entry.address);
  return { method: args.method, url, headers, body };
}

function flatHeaders(headers: OutgoingResponse['headers']): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) if (v !== undefined) out[k] = Array.isArray(v) ? v.join(', ') : v;
  return out;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(new TransportFailure('cancelled', 'the calling request ended', false));
    const done = () => {
      signal.removeEventListener('abort', abort);
      resolve();
    };
    const timer = setTimeout(done, ms);
    const abort = () => {
      clearTimeout(timer);
      reject(new TransportFailure('cancelled', 'the calling request ended', false));
    };
    signal.addEventListener('abort', abort, { once: true });
  });
}

/** Codes of a scheme that sends on its own connection (NTLM), as the transport's failures. */
const OWN_FAILURES: Record<string, [TransportFailure['kind'], boolean]> = {
  ETIMEDOUT: ['timeout', true],
  ABORT_ERR: ['cancelled', true],
  ECONNREFUSED: ['connection', false],
  ENOTFOUND: ['connection', false],
  EAI_AGAIN: ['connection', false],
  UND_ERR_CONNECT_TIMEOUT: ['connection', false],
  UND_ERR_SOCKET: ['connection', true],
  ECONNRESET: ['connection', true],
  ERR_NTLM_PROTOCOL: ['connection', true],
  ERR_NTLM_CLOSED: ['connection', false],
};

async function sendOwn(send: NonNullable<OutgoingAuthorizer['send']>, request: OutgoingRequest, context: OutgoingAuthContext & { timeoutMs: number }, maxBytes: number): Promise<OutgoingResponse> {
  let response: OutgoingResponse;
  try {
    response = await send(request, context);
  } catch (err) {
    const code = String((err as { code?: unknown }).code ?? '');
    const [kind, sent] = context.signal.aborted ? (['cancelled', true] as const) : (OWN_FAILURES[code] ?? ['connection', true]);
    throw new TransportFailure(kind, `${(err as Error).message}${code ? ` (${code})` : ''}`, sent);
  }
  if (response.body.length > maxBytes) throw new TransportFailure('too_large', `the response is larger than max_response_bytes (${maxBytes})`, true);
  return response;
}

/**
 * One call with the connection's retry rules (spec, Default outgoing retry behavior): timeouts,
 * connection errors and 429 are retried with full-jitter backoff, Retry-After honoured, all within
 * the budget; a timed-out call is repeated only when that cannot do its work twice; other HTTP
 * statuses are answers, not retried. A 401 lets the credentials refresh once (Bearer token).
 */
export async function callWithRetries(conn: Connection, args: CallArgs, ctx: HostCallContext, clock: Clock, tracing?: Tracing): Promise<CallResult> {
  const { entry, auth } = conn;
  const policy = entry.retry;
  // The budget is a duration: read on the monotonic clock, which a wall clock set back or forward
  // does not move. `clock` (the wall clock) stays for Retry-After dates.
  // It ends before the calling service's time limit as well, so the service gets the call's failure
  // (a timeout: 504 through gatewayError) rather than its own SERVICE_TIMEOUT.
  const timeLeftMs = ctx.timeLeftMs();
  const cutShort = timeLeftMs < policy.budget_ms;
  const deadline = performance.now() + (cutShort ? timeLeftMs : policy.budget_ms);
  // Spec D: space-separated; an empty string means none given (the definition's scopes apply).
  const scopes = args.auth_scopes?.split(/\s+/).filter(Boolean);
  const authContext: OutgoingAuthContext = { cid: ctx.cid, scopes: scopes?.length ? scopes : undefined, signal: ctx.signal };
  let refreshed = false;
  let timeoutMs = entry.timeout_ms;
  for (let attempt = 1; ; attempt++) {
    const request = requestOf(conn, args);
    // Started before credentials are added: waiting for a token counts in the attempt's span.
    const span = tracing?.outgoing(ctx.trace, request, { connection: entry.name, template: entry.url_path, attempt });
    timeoutMs = Math.max(1, Math.floor(Math.min(entry.timeout_ms, deadline - performance.now())));
    let response: OutgoingResponse | undefined;
    let failure: TransportFailure | undefined;
    try {
      if (auth?.send) response = await sendOwn(auth.send.bind(auth), request, { ...authContext, timeoutMs }, entry.max_response_bytes);
      else {
        if (auth) {
          // A token being fetched is waited for within what the budget (and the service's time limit) leaves.
          authContext.waitMs = Math.max(1, Math.floor(deadline - performance.now()));
          await auth.authorize(request, authContext);
        }
        response = await conn.transport.send(request, timeoutMs, ctx.signal);
      }
    } catch (err) {
      span?.end({ failure: ctx.signal.aborted ? 'cancelled' : err instanceof TransportFailure ? err.kind : 'error' });
      // A token request the caller stopped waiting for ends the call like a cancelled send.
      if (ctx.signal.aborted) return { failed: { kind: 'cancelled', message: 'the calling request ended', attempts: attempt } };
      if (!(err instanceof TransportFailure)) throw err;
      failure = err;
    }
    if (response) span?.end({ status: response.status });

    if (response?.status === 401 && auth?.refused && !refreshed) {
      refreshed = true;
      if (await auth.refused(request, authContext)) {
        attempt--;
        continue;
      }
    }
    if (response && response.status !== 429) return { status: response.status, headers: flatHeaders(response.headers), text: response.body.toString('utf8') };

    const retryable = response !== undefined || ((failure!.kind === 'timeout' || failure!.kind === 'connection') && (!failure!.sent || safeToRepeat(request.method, request.headers)));
    const wait = response ? (retryAfterMs(response.headers['retry-after'], clock.now()) ?? backoffMs(policy, attempt - 1)) : backoffMs(policy, attempt - 1);
    const outOfBudget = performance.now() + wait >= deadline;
    if (!retryable || attempt >= policy.max_attempts || outOfBudget) {
      if (response) return { status: response.status, headers: flatHeaders(response.headers), text: response.body.toString('utf8') };
      const kind = retryable && outOfBudget && attempt < policy.max_attempts ? 'budget' : failure!.kind;
      ctx.log.info({ connection: entry.name, attempts: attempt, kind, reason: failure!.message }, 'outgoing call failed');
      // Said when the caller's time, not the connection's own limits, ended it.
      const why = cutShort && (kind === 'budget' || (kind === 'timeout' && timeoutMs < entry.timeout_ms)) ? ", before the calling service's time limit" : '';
      return { failed: { kind, message: `${entry.name}: ${failure!.message}${attempt > 1 ? ` (after ${attempt} attempts${why})` : why ? ` (${why.slice(2)})` : ''}`, attempts: attempt } };
    }
    ctx.log.debug({ connection: entry.name, attempt, status: response?.status, kind: failure?.kind, wait }, 'outgoing call retried');
    try {
      await sleep(wait, ctx.signal);
    } catch (err) {
      return { failed: { kind: 'cancelled', message: (err as Error).message, attempts: attempt } };
    }
  }
}

/**
 * The host call `outgoing.call`: the connection by name, if this service may use it. A wrong name
 * or a refused service is the service's bug, not the caller's: a plain error (500 unless mapped).
 */
export function outgoingHostCall(connections: () => ReadonlyMap<string, Connection>, clock: Clock, counts: CallCounts, tracing: () => Tracing | undefined = () => undefined): HostCall<CallArgs> {
  return {
    op: 'outgoing.call',
    args: callArgs,
    quota: 'outgoing_calls_per_minute',
    async handler(args, ctx) {
      // A tenant's service reaches only its tenant's connections (docs/tenants.md).
      const conn = connections().get(scopedFor(ctx.service, args.connection));
      if (!conn) throw new SvcError('INTERNAL', `No outgoing connection named '${args.connection}'`);
      const allowed = conn.entry.allowed_services;
      let refusal: string | undefined;
      if (allowed && !allowed.includes(ctx.service)) refusal = `Service '${ctx.service}' may not use the outgoing connection '${args.connection}'`;
      else if (conn.unusable) refusal = `The outgoing connection '${args.connection}' cannot be used: ${conn.unusable}`;
      if (refusal !== undefined) {
        counts.add(conn.entry.name, 'refused');
        throw new SvcError('INTERNAL', refusal);
      }
      try {
        const result = await callWithRetries(conn, args, ctx, clock, tracing());
        counts.add(conn.entry.name, 'failed' in result ? result.failed.kind : String(result.status));
        return result;
      } catch (err) {
        counts.add(conn.entry.name, 'error');
        throw err;
      }
    },
  };
}
