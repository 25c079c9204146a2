import type { Logger } from 'pino';
import { z } from 'zod';
import type { HostCall, HostCallContext, HostCallLog, TenantQuotaApi } from '../plugin.ts';
import { tenantOf } from '../../sdk/plugin/tenants.ts';
import { SvcError, type ErrorCode } from '../errors.ts';
import type { InvokeRequest, ServiceErrorKind } from '../sandbox/protocol.ts';
import type { HostCaller } from '../sandbox/runner.ts';

/** A host call's value already encoded as JSON (a service's answer passed on as it came): sent without decoding it again. */
export class EncodedValue {
  constructor(readonly json: string) {}
}

/** Where a host call came from, as the kernel knows it: the calling request and the pool's view of its call. */
export interface HostCallOrigin {
  request: InvokeRequest;
  caller: HostCaller;
}

/**
 * A host call of the kernel's own (`service.invoke`): besides what plugins' calls get, it sees the
 * calling request as the kernel sent it and its call's time left, for work that must not outlive it.
 */
export interface KernelHostCall<A = unknown> {
  op: string;
  args: z.ZodType<A>;
  /** A method, as HostCall's: a call of any argument type is a `KernelHostCall`. */
  handler(args: A, ctx: HostCallContext, origin: HostCallOrigin): Promise<unknown>;
}

const KIND_OF: Partial<Record<ErrorCode, ServiceErrorKind>> = {
  BAD_REQUEST: 'BadRequest',
  INVALID_INPUT: 'BadRequest',
  UNAUTHORIZED: 'Unauthorized',
  FORBIDDEN: 'Forbidden',
  NOT_FOUND: 'NotFound',
  CONFLICT: 'Conflict',
  PAYLOAD_TOO_LARGE: 'PayloadTooLarge',
  TOO_MANY_REQUESTS: 'TooManyRequests',
  TENANT_QUOTA: 'TooManyRequests',
  BAD_GATEWAY: 'BadGateway',
  GATEWAY_TIMEOUT: 'GatewayTimeout',
  SERVICE_UNAVAILABLE: 'ServiceUnavailable',
};

/**
 * What a host call's handler is given. A class, not an object literal with a getter: the literal
 * made an accessor pair and an uncompiled function per call, and an invoke's context lives as long
 * as its callee runs.
 */
class CallContext implements HostCallContext {
  readonly cid: string;
  readonly service: string;
  readonly channel: string | undefined;
  readonly trace: InvokeRequest['trace'];
  /** When the host call's waits must end (performance.now()): the caller's time limit less the reserve. */
  private readonly waitsEnd: number;

  constructor(
    invocation: InvokeRequest,
    readonly log: RequestTally,
    caller: HostCaller,
  ) {
    this.cid = invocation.cid;
    this.service = invocation.service;
    this.channel = invocation.channel;
    this.trace = invocation.trace;
    this.waitsEnd = performance.now() + caller.remainingMs - HOST_CALL_RESERVE_MS;
  }

  timeLeftMs(): number {
    return Math.max(0, Math.floor(this.waitsEnd - performance.now()));
  }

  /** Made only for a call that reads it (outgoing calls): an abort costs an Error and its stack. */
  get signal(): AbortSignal {
    return this.log.signal;
  }
}

/**
 * What a host call leaves its caller of the caller's time limit (HostCallContext.timeLeftMs, and
 * an invoked service's limit): time to catch the error and answer. The sandbox's watchdog (20 ms)
 * and the pool's sweep (50 ms) may each see the limit late, and the answer must then cross back.
 */
export const HOST_CALL_RESERVE_MS = 100;

/** Log lines the host calls of one request may write; the rest are counted and reported once. */
const LOG_LINES_PER_REQUEST = 3;

/** A request's log fields: its CID, service and, when it is traced, the trace and span (as the Exchange's log). */
export function fieldsOf(invocation: InvokeRequest): Record<string, string> {
  const t = invocation.trace?.traceparent;
  return t ? { cid: invocation.cid, service: invocation.service, trace_id: t.slice(3, 35), span_id: t.slice(36, 52) } : { cid: invocation.cid, service: invocation.service };
}

/** What the host calls of one request did, kept until the request ends. */
class RequestTally implements HostCallLog {
  unlogged = 0;
  readonly refused = new Map<string, number>();
  private logged = 0;
  private logger: Logger | undefined;
  private ended: AbortController | undefined;

  constructor(
    private readonly root: Logger,
    private readonly invocation: InvokeRequest,
  ) {}

  private line(level: 'debug' | 'info' | 'warn' | 'error', obj: object, msg?: string): void {
    if (!this.root.isLevelEnabled(level)) return;
    if (this.logged >= LOG_LINES_PER_REQUEST) {
      this.unlogged++;
      return;
    }
    this.logged++;
    (this.logger ??= this.root.child(fieldsOf(this.invocation)))[level](obj, msg);
  }

  /** Aborted when the request's call ends, however (reply, limit, crash): work for it stops. */
  get signal(): AbortSignal {
    return (this.ended ??= new AbortController()).signal;
  }

  end(): void {
    this.ended?.abort(new Error('the calling request ended'));
  }

  debug(obj: object, msg?: string): void {
    this.line('debug', obj, msg);
  }
  info(obj: object, msg?: string): void {
    this.line('info', obj, msg);
  }
  warn(obj: object, msg?: string): void {
    this.line('warn', obj, msg);
  }
  error(obj: object, msg?: string): void {
    this.line('error', obj, msg);
  }
}

/**
 * Host functions services reach through the SDK. Every call's arguments are checked
 * here before its handler runs; every outcome is an envelope, never a rejection.
 * A request that makes thousands of host calls costs a bounded number of log lines:
 * a few lines are written, then refusals and further lines are counted and reported once,
 * when the request ends (`finish`).
 */
/**
 * A request's tally rides on its request object (JSON.stringify, which sends the request to the
 * sandbox, skips a symbol key), not in a Map by CID: a Map that gains and loses an entry per
 * request is rebuilt every few dozen, and the tables it leaves in the old generation keep the
 * requests they held alive through every scavenge (kernel/sandbox/id-table.ts says more).
 */
const TALLY = Symbol('host call tally');
type TalliedRequest = InvokeRequest & { [TALLY]?: RequestTally };

export class HostCalls {
  private readonly calls = new Map<string, HostCall | KernelHostCall>();

  constructor(
    private readonly log: Logger,
    /** Tenants' metered quotas: a call marked with one takes it before its handler runs. */
    private readonly quotas?: Pick<TenantQuotaApi, 'take'>,
    /** server.refusal_pause_ms: how long a call a quota refused waits for its answer. */
    private readonly refusalPauseMs: () => number = () => 0,
  ) {}

  add(call: HostCall | KernelHostCall): void {
    if (this.calls.has(call.op)) throw new Error(`host call '${call.op}' is registered twice`);
    this.calls.set(call.op, call);
  }

  async run(op: string, argsJson: string, invocation: TalliedRequest, caller: HostCaller): Promise<string> {
    const tally = (invocation[TALLY] ??= new RequestTally(this.log, invocation));
    const reply = await this.answer(op, argsJson, { request: invocation, caller }, tally);
    if (reply.startsWith('{"ok":false')) {
      const name = op.slice(0, 100);
      tally.refused.set(name, (tally.refused.get(name) ?? 0) + 1);
    }
    return reply;
  }

  /** The request ended: one line for what its host calls did not log each. */
  finish(invocation: TalliedRequest): void {
    const tally = invocation[TALLY];
    if (!tally) return;
    invocation[TALLY] = undefined;
    tally.end();
    if (tally.refused.size || tally.unlogged) {
      const refused = Object.fromEntries(tally.refused);
      this.log.warn({ cid: invocation.cid, service: invocation.service, refused, unlogged: tally.unlogged }, 'host calls refused or not logged during this request');
    }
  }

  private async answer(op: string, argsJson: string, origin: HostCallOrigin, log: RequestTally): Promise<string> {
    const invocation = origin.request;
    const call = this.calls.get(op);
    if (!call) return fail('Error', 500, `unknown host call '${op.slice(0, 100)}'`);
    let args: unknown;
    try {
      args = call.args.parse(JSON.parse(argsJson));
    } catch (err) {
      const why = err instanceof z.ZodError ? err.issues.slice(0, 5).map((i) => `${i.path.join('.') || 'arguments'}: ${i.message}`).join('; ') : 'not JSON';
      return fail('Error', 500, `invalid arguments for ${op}: ${why}`);
    }
    const quota = 'quota' in call ? call.quota : undefined;
    if (quota !== undefined && this.quotas) {
      const refusal = this.quotas.take(tenantOf(invocation.service), quota);
      if (refusal) {
        // As for a refused HTTP request (server.refusal_pause_ms): a service that retries at once,
        // in a loop, costs the kernel one refusal per pause per call in flight, not thousands a second.
        return refuseAfterPause(refusal, this.refusalPauseMs());
      }
    }
    try {
      const ctx = new CallContext(invocation, log, origin.caller);
      const value = await call.handler(args, ctx, origin);
      return value instanceof EncodedValue ? '{"ok":true,"value":' + value.json + '}' : JSON.stringify({ ok: true, value: value ?? null });
    } catch (err) {
      if (err instanceof SvcError) {
        if (err.code === 'TENANT_QUOTA') {
          return refuseAfterPause(err, this.refusalPauseMs());
        }
        return fail(KIND_OF[err.code] ?? 'Error', err.status, err.details);
      }
      log.error({ err, op }, 'host call failed');
      return fail('Error', 500, `${op} failed`);
    }
  }
}

/**
 * A tenant quota's refusal (TENANT_QUOTA): TooManyRequests in the service, with its Retry-After for
 * the answer if uncaught, given after 3/4 of the pause to all of it (at most the Retry-After).
 */
async function refuseAfterPause(refusal: SvcError, pauseMs: number): Promise<string> {
  const retryAfter = retryAfterOf(refusal);
  const ms = (retryAfter !== undefined ? Math.min(pauseMs, retryAfter * 1000) : pauseMs) * (0.75 + Math.random() * 0.25);
  if (ms >= 1) await new Promise((resolve) => setTimeout(resolve, ms));
  return JSON.stringify({ ok: false, error: { kind: 'TooManyRequests', status: refusal.status, message: refusal.details, code: refusal.code, ...(retryAfter === undefined ? {} : { retryAfter }) } });
}

/** A refusal's Retry-After in seconds, when it has one. */
export function retryAfterOf(refusal: SvcError): number | undefined {
  const seconds = Number(refusal.headers?.['Retry-After']);
  return Number.isFinite(seconds) && seconds >= 0 ? seconds : undefined;
}

function fail(kind: ServiceErrorKind, status: number, message: string): string {
  return JSON.stringify({ ok: false, error: { kind, status, message } });
}
