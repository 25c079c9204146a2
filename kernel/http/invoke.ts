import type { Channel } from '../config/schema.ts';
import type { HookFn } from '../plugin.ts';
import { SvcError, type ErrorCode } from '../errors.ts';
import type { InvokeRequest, InvokeResult, RUNTIME_ERROR_KINDS, ServiceErrorKind } from '../sandbox/protocol.ts';
import { invokeRequestOf } from '../sandbox/request.ts';

/**
 * The kernel's invoke step: the exchange encoded as the sandbox's request (sandbox/request.ts), the service's result
 * (already checked where it left the sandbox) decoded into the response draft or an error.
 */

const ERROR_CODES: Record<ServiceErrorKind | (typeof RUNTIME_ERROR_KINDS)[number], ErrorCode> = {
  BadRequest: 'BAD_REQUEST',
  Unauthorized: 'UNAUTHORIZED',
  Forbidden: 'FORBIDDEN',
  NotFound: 'NOT_FOUND',
  Conflict: 'CONFLICT',
  PayloadTooLarge: 'PAYLOAD_TOO_LARGE',
  TooManyRequests: 'TOO_MANY_REQUESTS',
  ServiceUnavailable: 'SERVICE_UNAVAILABLE',
  BadGateway: 'BAD_GATEWAY',
  GatewayTimeout: 'GATEWAY_TIMEOUT',
  MethodNotAllowed: 'METHOD_NOT_ALLOWED',
  OutputTooLarge: 'SERVICE_OUTPUT_TOO_LARGE',
  OutputInvalid: 'SERVICE_OUTPUT_INVALID',
  Error: 'SERVICE_FAILED',
};

/** What the kernel sends when a service returned a value as JSON text and chose no type (as sendDraft and the JSON format do). */
const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * `payloadIsBodyJson`: the payload is still the body's JSON parse (sandbox/request.ts).
 * `replyBodyJson`: the channel's one serialize step is a JSON format's (Contributions.jsonReplyFormats).
 */
export function invokeService(channel: Channel, invoke: (req: InvokeRequest) => Promise<InvokeResult>, payloadIsBodyJson: boolean, replyBodyJson: boolean): HookFn {
  const service = channel.service;
  return async function runService(ex) {
    // The result was checked where it left the sandbox (parseInvokeResult): status, header names and values, sizes.
    const result = await invoke(invokeRequestOf(ex, service, payloadIsBodyJson, replyBodyJson));
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
    if (result.bodyJson !== undefined) {
      // The JSON format's serializer sends a typed string as it is.
      r.contentType = result.contentType ?? JSON_TYPE;
      r.body = result.bodyJson;
      return;
    }
    r.contentType = result.contentType ?? r.contentType;
    r.body = result.bodyEncoding === 'base64' ? Buffer.from(result.body as string, 'base64') : result.body;
  };
}

/** Own keys only, defined rather than assigned: a header named `__proto__` stays a header. */
function copyHeaders(from: Record<string, string>, to: Record<string, string>): void {
  for (const name of Object.keys(from)) Object.defineProperty(to, name, { value: from[name], enumerable: true, writable: true, configurable: true });
}
