import type { Logger } from 'pino';
import { z } from 'zod';
import { HTTP_METHODS } from '../../sdk/http.ts';
import type { ServerConfig } from '../config/schema.ts';
import type { HostCallContext } from '../plugin.ts';
import { ERRORS, SvcError, type ErrorCode } from '../errors.ts';
import type { InvokeRequest, InvokeResult, ServiceErrorKind } from '../sandbox/protocol.ts';
import type { ServiceRunner } from '../sandbox/runner.ts';
import { EncodedValue, fieldsOf, retryAfterOf, type HostCallOrigin, type KernelHostCall } from './host-calls.ts';
import type { ServiceRegistry } from './registry.ts';
import { localName, scopedFor, tenantOf } from '../../sdk/plugin/tenants.ts';

/**
 * `service.invoke`, the host call behind the SDK's `invoke` (docs/composing.md): one service runs
 * another and waits for its answer. Checked here, on the host: that the callee is deployed and
 * names the caller in its `invokableBy`, that the call chain neither comes back to a service in it
 * nor goes deeper than `server.invoke_max_depth`, and the input against the callee's model. The
 * callee runs in the sandbox pool as a nested call: within the caller's remaining time (less
 * HOST_CALL_RESERVE_MS, host-calls.ts), in another sandbox process than its caller's when there is one, and counted
 * at its own depth in its isolate (kernel/sandbox/worker.ts), so waiting callers cannot starve it.
 */

export const invokeArgs = z
  .object({
    service: z.string().min(1).max(256).describe('The service to run.'),
    input: z.record(z.string(), z.unknown()).describe("Its ctx.input, checked against its input model."),
    timeoutMs: z.number().positive().max(3_600_000).optional().describe('Longest it may take, ms; its own limit and the time the caller has left cap it.'),
    method: z.enum(HTTP_METHODS).optional().describe('Which verb handler runs (its generic handle when it has none); default POST.'),
  })
  .strict();

/** What the caller's SDK rebuilds its error from (sdk/invoke.ts): `code` when svc, not the callee, raised it. */
export interface InvokeFailure {
  /** An SDK error class's kind (ServiceErrorKind); `svc test` fakes may throw others. */
  kind: string;
  status: number;
  message: string;
  code?: string;
  issues?: Array<{ field: string; message: string }>;
  /** A tenant quota's refusal: its Retry-After in seconds (the caller's TooManyRequests carries it). */
  retryAfter?: number;
}
export type InvokeReply = { value: unknown } | { bytes: string } | { failed: InvokeFailure };
/** A reply whose value is the callee's answer as the JSON text it sent (`{"value":<text>}`), passed on without decoding it. */
type Reply = InvokeReply | EncodedValue;

/** An answer the callee gave with a status of 400 or more, as the class a caller catches. */
const KIND_OF_STATUS: Record<number, ServiceErrorKind> = { 400: 'BadRequest', 401: 'Unauthorized', 403: 'Forbidden', 404: 'NotFound', 409: 'Conflict', 413: 'PayloadTooLarge', 429: 'TooManyRequests', 502: 'BadGateway', 503: 'ServiceUnavailable', 504: 'GatewayTimeout' };

/** A refusal or failure svc itself raised, with the status of its catalogue code unless said. */
function failed(code: ErrorCode, kind: ServiceErrorKind, message: string, status: number = ERRORS[code].status): { failed: InvokeFailure } {
  return { failed: { kind, status, message, code } };
}

const NO_TEXT: ReadonlySet<string> = new Set();

/**
 * What invoke keeps of a call that invokes or was invoked, on the call's request object itself under
 * a symbol (JSON.stringify, which sends the request to the sandbox, skips it). Not in WeakMaps, as
 * it was: one entry per nested call grew their ephemeron tables faster than major GCs emptied them,
 * and every scavenge walked them (bench/README.md, Tenants, item 6).
 */
const INVOKE_STATE = Symbol('invoke state');
interface InvokeState {
  /** The services from the one a channel or the queue ran down to this call's. */
  readonly chain: readonly string[];
  /** Invokes made so far by this call, for its callees' CIDs. */
  made: number;
}
type TrackedRequest = InvokeRequest & { [INVOKE_STATE]?: InvokeState };

function stateOf(request: TrackedRequest): InvokeState {
  return (request[INVOKE_STATE] ??= { chain: [request.service], made: 0 });
}

export function invokeCall(registry: ServiceRegistry, pool: ServiceRunner, server: () => ServerConfig, log: Logger): KernelHostCall<z.infer<typeof invokeArgs>> {
  async function invoke(args: z.infer<typeof invokeArgs>, ctx: HostCallContext, origin: HostCallOrigin): Promise<Reply> {
    const caller: TrackedRequest = origin.request;
    const state = stateOf(caller);
    // A tenant's service names its tenant's services, whatever it writes (docs/tenants.md).
    const name = scopedFor(caller.service, args.service);
    const chain = [...state.chain, name];
    const target = registry.get(name);
    if (!target) return failed('INVOKE_NOT_FOUND', 'NotFound', `No service '${args.service}' is deployed`);
    const allowed = target.meta.invokableBy;
    // invokableBy is written in the callee's code, with its own tenant's short names: a caller of
    // another tenant (or the platform) is admitted by '*' only.
    const named = tenantOf(caller.service) === tenantOf(name) && allowed.includes(localName(caller.service));
    if (!allowed.includes('*') && !named) return failed('INVOKE_FORBIDDEN', 'Forbidden', `Service '${name}' may not be invoked by '${caller.service}': its invokableBy does not name it`);
    if (chain.indexOf(name) < chain.length - 1) return failed('INVOKE_CYCLE', 'Error', `Invoke cycle: ${chain.join(' → ')}`);
    const maxDepth = server().invoke_max_depth;
    if (chain.length - 1 > maxDepth) return failed('INVOKE_DEPTH', 'Error', `Invoke chain deeper than ${maxDepth}: ${chain.join(' → ')}`);
    const method = args.method ?? 'POST';
    const verbs = target.meta.verbs;
    if (verbs.length && !verbs.includes(method)) return failed('METHOD_NOT_ALLOWED', 'Error', `Service '${name}' has no ${method} handler (it has ${verbs.join(', ')})`, 500);
    const input = args.input;
    const issues: Array<{ field: string; message: string }> = [];
    const problem = target.checkInput?.(input, NO_TEXT, issues);
    if (problem) return { failed: { kind: 'BadRequest', status: 400, message: `Invalid input of '${name}': ${problem}`, code: 'INVALID_INPUT', issues } };
    const own = target.meta.limits.timeoutMs ?? server().sandbox.timeout_ms;
    const limitMs = Math.floor(Math.min(own, args.timeoutMs ?? Infinity, ctx.timeLeftMs()));
    if (limitMs < 1) return failed('SERVICE_TIMEOUT', 'GatewayTimeout', `No time left to invoke '${name}'`, 504);

    const n = ++state.made;
    // The input is the payload, crossing once (inputOverPayload: nothing on top of it); the callee acts for the same user, in the same trace.
    // Its answer comes back as its JSON text when it is JSON (replyBodyJson), and goes on to the caller as that text.
    const request: TrackedRequest = { service: name, cid: `${caller.cid}.${n}`, method, inputOverPayload: {}, payload: input, replyBodyJson: true, auth: caller.auth, trace: caller.trace, [INVOKE_STATE]: { chain, made: 0 } };
    let result: InvokeResult;
    try {
      result = await pool.invoke(request, { caller: origin.caller.id, timeoutMs: limitMs, depth: chain.length - 1 });
    } catch (err) {
      if (!(err instanceof SvcError)) throw err;
      return failureOf(err, name, limitMs);
    }
    return replyOf(result, request);
  }

  /** The callee's answer for its caller; its log lines and an exception go to the log under its own CID, as a channel's would. */
  function replyOf(result: InvokeResult, request: InvokeRequest): Reply {
    const name = request.service;
    const error = result.error;
    if (result.logs?.length || error?.kind === 'Error') {
      const calleeLog = log.child(fieldsOf(request));
      for (const [level, message] of result.logs ?? []) calleeLog[level](message);
      if (error?.kind === 'Error') calleeLog.error({ error: error.message, stack: error.stack }, 'service raised an exception');
    }
    if (error) {
      switch (error.kind) {
        case 'Error':
          return failed('SERVICE_FAILED', 'Error', `Service '${name}' raised an exception: ${error.message}`);
        case 'MethodNotAllowed':
          return failed('METHOD_NOT_ALLOWED', 'Error', `Service '${name}' has no ${request.method} handler`, 500);
        case 'OutputTooLarge':
          return failed('SERVICE_OUTPUT_TOO_LARGE', 'Error', `Service '${name}': ${error.message}`);
        case 'OutputInvalid':
          return failed('SERVICE_OUTPUT_INVALID', 'Error', `Service '${name}': ${error.message}`);
        default:
          // What the callee threw reaches its caller as it threw it.
          return { failed: { kind: error.kind, status: result.status, message: error.message } };
      }
    }
    if (result.status >= 400) return { failed: { kind: KIND_OF_STATUS[result.status] ?? 'Error', status: result.status, message: `Service '${name}' answered ${result.status}` } };
    if (result.bodyJson !== undefined) return new EncodedValue('{"value":' + result.bodyJson + '}');
    return result.bodyEncoding === 'base64' ? { bytes: result.body as string } : { value: result.body };
  }

  return { op: 'service.invoke', args: invokeArgs, handler: invoke };
}

/** What ended a callee's call in the pool, for its caller. */
function failureOf(err: SvcError, name: string, limitMs: number): { failed: InvokeFailure } {
  switch (err.code) {
    case 'SERVICE_TIMEOUT':
      return failed('SERVICE_TIMEOUT', 'GatewayTimeout', `Service '${name}' did not answer within ${limitMs} ms`, 504);
    case 'SANDBOX_CRASHED':
    case 'SERVICE_QUARANTINED':
    case 'SERVICE_UNAVAILABLE':
      return failed(err.code, 'ServiceUnavailable', `Service '${name}': ${err.details}`);
    case 'TENANT_QUOTA': {
      const refused = failed('TENANT_QUOTA', 'TooManyRequests', `Service '${name}': ${err.details}`);
      const retryAfter = retryAfterOf(err);
      if (retryAfter !== undefined) refused.failed.retryAfter = retryAfter;
      return refused;
    }
    case 'SERVICE_NOT_DEPLOYED':
      return failed('INVOKE_NOT_FOUND', 'NotFound', `No service '${name}' is deployed`);
    default:
      return failed(err.code, 'Error', `Service '${name}': ${err.details}`, 500);
  }
}
