import { callHost } from './internal/runtime.ts';
import { fromBase64 } from './internal/bytes.ts';
import { crossedError, type FieldProblem, type ServiceError } from './errors.ts';
import type { HttpMethod } from './http.ts';

export interface InvokeOptions {
  /**
   * Longest the other service may take, ms. It never gets more than its own time limit, nor more
   * than this call has left (less a reserve, so this call can still answer when it is cut).
   */
  timeoutMs?: number;
  /** Which of its verb handlers runs (its `handle` when it has none); default POST. */
  method?: HttpMethod;
  /** The request this call belongs to, when several run at once in one service. */
  cid?: string;
}

/** One call of `invokeAll`. */
export interface InvokeCall {
  service: string;
  /** Its `ctx.input`; default `{}`. */
  input?: Record<string, unknown>;
  timeoutMs?: number;
  method?: HttpMethod;
}

type Failure = { kind: string; status: number; message: string; code?: string; issues?: FieldProblem[]; retryAfter?: number };
type Reply = { value?: unknown; bytes?: string } | { failed: Failure };

function errorOf(failed: Failure): ServiceError {
  const err = crossedError(failed.kind, failed.status, failed.message, failed);
  if (failed.issues !== undefined) err.issues = failed.issues;
  return err;
}

/**
 * Runs another service now and resolves with what its handler returned (bytes as a Uint8Array).
 * That service sees `input` as `ctx.input`, checked against its input model as a channel checks
 * it, with the method POST (see `method`), no channel, this request's user and trace, and a CID of
 * its own: this call's CID with `.1`, `.2`… added. It must name this service in its
 * `invokableBy` (docs/composing.md).
 *
 * It rejects with the SDK's error class of what went wrong, so a handler can catch it, or let it
 * through to answer as if it had thrown it itself:
 * - what the other service threw (`NotFound`, `Conflict`…), as it threw it; an answer it gave
 *   with `ctx.response.status` 400 or more, as the class of that status;
 * - `BadRequest` with `code` INVALID_INPUT and `issues` when `input` does not match its model;
 * - `NotFound` (INVOKE_NOT_FOUND) when no such service is deployed, `Forbidden` (INVOKE_FORBIDDEN)
 *   when it does not let this service invoke it; a `ServiceError` of kind `Error` (500) for a
 *   call chain too deep (INVOKE_DEPTH) or that would come back to a service already in it
 *   (INVOKE_CYCLE), and for an exception it raised (SERVICE_FAILED);
 * - `GatewayTimeout` (SERVICE_TIMEOUT) when it ran out of time, `ServiceUnavailable` when its
 *   sandbox crashed (SANDBOX_CRASHED) or it is quarantined.
 *
 *   const stock = await invoke<{ available: number }>('stock', { sku: ctx.input.sku });
 */
export async function invoke<T = unknown>(serviceName: string, input: Record<string, unknown> = {}, options: InvokeOptions = {}): Promise<T> {
  const reply = (await callHost('service.invoke', { service: serviceName, input, timeoutMs: options.timeoutMs, method: options.method }, options.cid)) as Reply;
  if ('failed' in reply) throw errorOf(reply.failed);
  return (reply.bytes !== undefined ? fromBase64(reply.bytes) : reply.value) as T;
}

/**
 * Runs several services at once, as `Promise.all` over `invoke`: resolves with their results in
 * the order of `calls` once all have answered; rejects with the first error to arrive, and the
 * others' results are then dropped (they still run to their end). For every outcome, error or
 * not, use `Promise.allSettled(calls.map((c) => invoke(c.service, c.input)))`.
 *
 *   const [customer, orders] = await invokeAll([{ service: 'customer', input: { id } }, { service: 'orders', input: { customer: id } }]);
 */
export function invokeAll<T extends unknown[] = unknown[]>(calls: readonly InvokeCall[], options: { cid?: string } = {}): Promise<T> {
  return Promise.all(calls.map((c) => invoke(c.service, c.input, { timeoutMs: c.timeoutMs, method: c.method, cid: options.cid }))) as Promise<unknown[]> as Promise<T>;
}
