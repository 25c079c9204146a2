import { isUtf8 } from 'node:buffer';
import type { Exchange } from '../../sdk/plugin/exchange.ts';
import type { InvokeRequest } from './protocol.ts';

/** The request a sandbox is sent for one exchange: every field a service's context reads, as JSON-like data. */

const EMPTY_OVER: Record<string, unknown> = Object.freeze({}) as Record<string, unknown>;

/** Input fields that are not the payload's own value (undefined when input is not built on the payload). */
export function inputOverPayload(input: Record<string, unknown>, payload: unknown): Record<string, unknown> | undefined {
  if (!payload || typeof payload !== 'object' || Array.isArray(payload) || Buffer.isBuffer(payload)) return undefined;
  const fields = payload as Record<string, unknown>;
  if (input === fields) return EMPTY_OVER;
  for (const k in fields) if (!(k in input)) return undefined;
  const over: Record<string, unknown> = {};
  for (const k in input) if (input[k] !== fields[k]) over[k] = input[k];
  return over;
}

/**
 * What the sandbox is sent for one exchange; also what the Use queue stores (KernelApi.invokeRequestOf).
 * `payloadIsBodyJson`: the payload is still `JSON.parse` of the body's text (see
 * Contributions.jsonBodyFormats), so the text crosses alone and the sandbox parses it again.
 * `replyBodyJson`: the service's returned value may come back as its JSON text (Contributions.jsonReplyFormats).
 */
export function invokeRequestOf(ex: Exchange, service: string, payloadIsBodyJson = false, replyBodyJson = false): InvokeRequest {
  const raw = ex.rawBody;
  const text = raw && raw.length && isUtf8(raw) ? raw.toString('utf8') : undefined;
  const fromBody = payloadIsBodyJson && text !== undefined && ex.payload !== undefined;
  const over = inputOverPayload(ex.input, ex.payload);
  // One literal with every field, undefined where absent (JSON leaves those out): built with
  // conditional spreads instead, the object cost five times as much to make, on every call.
  return {
    service,
    cid: ex.cid,
    channel: ex.channel.name,
    method: ex.method,
    path: ex.path,
    input: over ? undefined : ex.input,
    inputOverPayload: over,
    payload: fromBody || Buffer.isBuffer(ex.payload) ? undefined : ex.payload,
    payloadFromBody: fromBody ? true : undefined,
    replyBodyJson: replyBodyJson ? true : undefined,
    headers: ex.visibleHeaders(),
    query: ex.query,
    pathParams: ex.pathParams,
    rawBody: text !== undefined ? { text } : raw && raw.length ? { base64: raw.toString('base64') } : undefined,
    files: ex.files?.map((f) => ({ field: f.field, filename: f.filename, contentType: f.contentType, base64: f.content.toString('base64') })),
    auth: ex.auth,
    trace: ex.trace,
  };
}
