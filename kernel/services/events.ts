import type { Logger } from 'pino';
import { SvcError } from '../errors.ts';
import type { EventOutcome, SourceEvent } from '../../sdk/plugin/events.ts';
import type { DeliveryInfo, InvokeRequest, InvokeResult } from '../sandbox/protocol.ts';
import type { InputChecker } from './model.ts';
import { inputOverPayload } from '../sandbox/request.ts';

/**
 * The one path of events that do not come from an HTTP request (event sources, the Use queue):
 * the request a service sees, its input checked against the service's model, the sandbox call,
 * the service's log lines, and the outcome a source records.
 */

/** The request an event becomes: method POST, no channel, the source on `ctx.delivery.source`. */
export function requestOfEvent(event: SourceEvent, cid: string): InvokeRequest {
  const source: NonNullable<DeliveryInfo['source']> = event.at === undefined ? { kind: event.source, name: event.name } : { kind: event.source, name: event.name, at: event.at };
  const request: InvokeRequest = {
    service: event.service,
    cid,
    method: 'POST',
    input: event.input ?? fieldsOf(event.payload),
    delivery: { attempt: 1, firstReceivedAt: event.at ?? new Date().toISOString(), cid, source },
  };
  if (event.payload !== undefined) request.payload = event.payload;
  if (event.textFields) request.inputIsText = true;
  if (event.rawBody !== undefined) request.rawBody = rawBodyOf(event.rawBody);
  if (event.headers !== undefined) request.headers = event.headers;
  if (event.trace) request.trace = event.trace;
  return request;
}

/** A payload that is a plain object gives the input its fields (a copy: the checker fills defaults in place). */
function fieldsOf(payload: unknown): Record<string, unknown> {
  return payload !== null && typeof payload === 'object' && !Array.isArray(payload) ? { ...(payload as Record<string, unknown>) } : {};
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/** As a channel sends a raw body: UTF-8 text when it decodes as such, else base64. */
function rawBodyOf(bytes: Buffer): { text: string } | { base64: string } {
  try {
    return { text: strictUtf8.decode(bytes) };
  } catch {
    return { base64: bytes.toString('base64') };
  }
}

/** Service errors that say the event is wrong, not that the moment was: running it again cannot help. */
const PERMANENT_KINDS: ReadonlySet<string> = new Set(['BadRequest', 'Unauthorized', 'Forbidden', 'NotFound', 'Conflict', 'PayloadTooLarge', 'MethodNotAllowed']);

export function outcomeOfResult(result: InvokeResult): EventOutcome {
  if (result.error) return { ok: false, permanent: PERMANENT_KINDS.has(result.error.kind), kind: result.error.kind, message: result.error.message };
  // A status the service set itself, without throwing, is read as HTTP reads it.
  if (result.status >= 500) return { ok: false, permanent: false, kind: `Status ${result.status}`, message: 'the service answered with a server error status' };
  if (result.status >= 400) return { ok: false, permanent: true, kind: `Status ${result.status}`, message: 'the service answered with a client error status' };
  return result.body === undefined ? { ok: true, status: result.status } : { ok: true, status: result.status, body: result.body };
}

/** The call did not complete: time or memory limit, sandbox crash, not deployed, quarantined... all worth another attempt. */
export function outcomeOfFailure(err: unknown): EventOutcome {
  if (err instanceof SvcError) {
    // A refusal that says when to come back (a tenant's quota) tells the queue how long to wait.
    const retryAfterS = Number(err.headers?.['Retry-After'] ?? NaN);
    const after = Number.isFinite(retryAfterS) && retryAfterS >= 0 ? { retryAfterMs: retryAfterS * 1000 } : {};
    return { ok: false, permanent: false, kind: err.code, message: err.details, ...after };
  }
  return { ok: false, permanent: false, kind: 'Error', message: err instanceof Error ? err.message : String(err) };
}

export interface EventRunnerDeps {
  invoke: (req: InvokeRequest) => Promise<InvokeResult>;
  /** The deployed service's input checker (undefined: it declares no model, or is not deployed). */
  checkerOf: (service: string) => InputChecker | undefined;
  log: Logger;
}

/**
 * Runs one event's request. A request a channel built (`channel` set) was checked by the
 * channel's chain already; any other input is checked here as a channel's JSON body would be.
 */
export function eventRunner(deps: EventRunnerDeps): (req: InvokeRequest) => Promise<EventOutcome> {
  const noText: ReadonlySet<string> = new Set();
  return async function runEvent(req) {
    if (req.channel === undefined && req.input !== undefined) {
      const check = deps.checkerOf(req.service);
      let input = req.input;
      if (check) {
        // The checker fills defaults in place: the stored request stays as it was.
        input = { ...req.input };
        const problem = check(input, req.inputIsText ? new Set(Object.keys(input)) : noText);
        if (problem) return { ok: false, permanent: true, kind: 'BadRequest', message: problem };
      }
      // Input built on a message's payload crosses once, as the payload, with what differs on top.
      const over = req.payload === undefined ? undefined : inputOverPayload(input, req.payload);
      if (over) req = { ...req, input: undefined, inputOverPayload: over };
      else if (input !== req.input) req = { ...req, input };
    }
    let outcome: EventOutcome;
    try {
      const result = await deps.invoke(req);
      for (const [level, message] of result.logs ?? []) deps.log[level]({ cid: req.cid, service: req.service, source: req.delivery?.source?.kind }, message);
      outcome = outcomeOfResult(result);
    } catch (err) {
      outcome = outcomeOfFailure(err);
    }
    return outcome;
  };
}
