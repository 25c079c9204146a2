import { isUtf8 } from 'node:buffer';
import type { Channel } from '../config/schema.ts';
import type { Exchange } from '../../sdk/plugin/exchange.ts';
import type { HookFn } from '../plugin.ts';
import { SvcError, type ErrorCode } from '../errors.ts';
import type { InvokeRequest, InvokeResult, RUNTIME_ERROR_KINDS, ServiceErrorKind } from '../sandbox/protocol.ts';

/**
 * The kernel's invoke step: the exchange encoded as the sandbox's request, the service's result
 * (already checked where it left the sandbox) decoded into the response draft or an error.
 */

const ERROR_CODES: Record<ServiceErrorKind | (typeof RUNTIME_ERROR_KINDS)[number], ErrorCode> = {
  BadRequest: 'BAD_REQUEST',
  Unauthorized: 'UNAUTHORIZED',
  Forbidden: 'FORBIDDEN',
  NotFound: 'NOT_FOUND',
  Conflict: 'CONFLICT',
  ServiceUnavailable: 'SERVICE_UNAVAILABLE',
  BadGateway: 'BAD_GATEWAY',
  GatewayTimeout: 'GATEWAY_TIMEOUT',
  MethodNotAllowed: 'METHOD_NOT_ALLOWED',
  OutputTooLarge: 'SERVICE_OUTPUT_TOO_LARGE',
  OutputInvalid: 'SERVICE_OUTPUT_INVALID',
  Error: 'SERVICE_FAILED',
};

const EMPTY_OVER: Record<string, unknown> = Object.freeze({}) as Record<string, unknown>;

/** Input fields that are not the payload's own value (undefined when input is not built on the payload). */
function inputOverPayload(input: Record<string, unknown>, payload: unknown): Record<string, unknown> | undefined {
  if (!payload || typeof payload !== 'object' || Array.isArray(payload) || Buffer.isBuffer(payload)) return undefined;
  const fields = payload as Record<string, unknown>;
  if (input === fields) return EMPTY_OVER;
  for (const k in fields) if (!(k in input)) return undefined;
  const over: Record<string, unknown> = {};
  for (const k in input) if (input[k] !== fields[k]) over[k] = input[k];
  return over;
}

/** What the sandbox is sent for one exchange; also what the Use queue stores (KernelApi.invokeRequestOf). */
export function invokeRequestOf(ex: Exchange, service: string): InvokeRequest {
  const raw = ex.rawBody;
  const over = inputOverPayload(ex.input, ex.payload);
  return {
    service,
    cid: ex.cid,
    channel: ex.channel.name,
    method: ex.method,
    path: ex.path,
    ...(over ? { inputOverPayload: over } : { input: ex.input }),
    payload: Buffer.isBuffer(ex.payload) ? undefined : ex.payload,
    headers: ex.visibleHeaders(),
    query: ex.query,
    pathParams: ex.pathParams,
    rawBody: raw && raw.length ? (isUtf8(raw) ? { text: raw.toString('utf8') } : { base64: raw.toString('base64') }) : undefined,
    files: ex.files?.map((f) => ({ field: f.field, filename: f.filename, contentType: f.contentType, base64: f.content.toString('base64') })),
    auth: ex.auth,
    trace: ex.trace,
  };
}

export function invokeService(channel: Channel, invoke: (req: InvokeRequest) => Promise<InvokeResult>): HookFn {
  const service = channel.service;
  return async function runService(ex) {
    // The result was checked where it left the sandbox (parseInvokeResult): status, header names and values, sizes.
    const result = await invoke(invokeRequestOf(ex, service));
    if (result.logs?.length) for (const [level, message] of result.logs) ex.log[level]({ service }, message);
    const r = ex.response;
    if (result.error) {
      const code = ERROR_CODES[result.error.kind];
      if (code === 'SERVICE_FAILED') {
        ex.log.error({ service, error: result.error.message, stack: result.error.stack }, 'service raised an exception');
        throw new SvcError(code);
      }
      throw new SvcError(code, result.error.message, { headers: result.headers });
    }
    copyHeaders(result.headers, r.headers);
    r.status = result.status;
    r.contentType = result.contentType ?? r.contentType;
    r.body = result.bodyEncoding === 'base64' ? Buffer.from(result.body as string, 'base64') : result.body;
  };
}

/** Own keys only, defined rather than assigned: a header named `__proto__` stays a header. */
function copyHeaders(from: Record<string, string>, to: Record<string, string>): void {
  for (const name of Object.keys(from)) Object.defineProperty(to, name, { value: from[name], enumerable: true, writable: true, configurable: true });
}
