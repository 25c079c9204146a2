import { isUtf8 } from 'node:buffer';
import type { Channel, SvcConfig } from '../config/schema.ts';
import type { Exchange } from '../exchange.ts';
import { CHAIN_PHASES, type HookName } from '../hooks.ts';
import type { ErrorHookFn, HookFn, KernelApi, Plugin } from '../plugin.ts';
import { errorBody, SvcError, type ErrorCode } from '../errors.ts';
import type { ServiceRegistry } from '../services.ts';
import type { InvokeRequest, InvokeResult, RUNTIME_ERROR_KINDS, ServiceErrorKind } from '../sandbox/protocol.ts';
import { sendDraft, type HttpExchange } from './exchange.ts';

export interface ActivePlugin {
  plugin: Plugin;
  state: unknown;
}

/** A channel ready to serve: its steps in order, built once per config. */
export interface ChannelRuntime {
  channel: Channel;
  steps: HookFn[];
  onError: ErrorHookFn[];
  onResponse: HookFn[];
}

export interface KernelSteps {
  registry: ServiceRegistry;
  invoke: (req: InvokeRequest) => Promise<InvokeResult>;
}

/** Builds a channel's chain: per phase, plugin hooks that apply to it and the kernel's own steps. */
export function buildChain(channel: Channel, config: SvcConfig, plugins: readonly ActivePlugin[], kernel: KernelApi, steps: KernelSteps): ChannelRuntime {
  const tapped = (phase: HookName): Array<HookFn | ErrorHookFn> => {
    const out: Array<HookFn | ErrorHookFn> = [];
    for (const { plugin, state } of plugins) {
      const factory = plugin.hooks[phase];
      const fn = factory?.({ channel, config, state, kernel });
      if (fn) out.push(fn);
    }
    return out;
  };
  const chain: HookFn[] = [];
  for (const phase of CHAIN_PHASES) {
    if (phase === 'validate') chain.push(prepareInput(channel, steps.registry, isTextFormat(channel, plugins)));
    chain.push(...(tapped(phase) as HookFn[]));
    if (phase === 'invoke') chain.push(invokeService(channel, steps.invoke));
  }
  return { channel, steps: chain, onError: tapped('onError') as ErrorHookFn[], onResponse: tapped('onResponse') as HookFn[] };
}

function isEmpty(o: object): boolean {
  for (const _ in o) return false;
  return true;
}

function isTextFormat(channel: Channel, plugins: readonly ActivePlugin[]): boolean {
  return plugins.some(({ plugin }) => plugin.contributes?.textFormats?.includes(channel.data_format));
}

/** Spec A.3–A.5, A.11: verb handlers, parameter precedence, the typed input model. */
function prepareInput(channel: Channel, registry: ServiceRegistry, textPayload: boolean): HookFn {
  const qsOverPath = channel.url_params_pri === 'qs_over_path';
  const urlOverMsg = channel.params_pri === 'url_over_msg';
  return function mergeAndCheckInput(ex) {
    const svc = registry.get(channel.service);
    if (!svc) throw new SvcError('SERVICE_NOT_DEPLOYED', `Service '${channel.service}' is not deployed`);
    if (svc.meta.verbs.length && !svc.meta.verbs.includes(ex.method)) {
      throw new SvcError('METHOD_NOT_ALLOWED', undefined, { headers: { allow: svc.allow } });
    }
    const url = qsOverPath ? { ...ex.pathParams, ...ex.query } : { ...ex.query, ...ex.pathParams };
    const payload = ex.payload;
    const fields = payload && typeof payload === 'object' && !Array.isArray(payload) && !Buffer.isBuffer(payload) ? (payload as Record<string, unknown>) : undefined;
    // Values that arrived as text (URL, and text formats' payloads) are converted to a model's types.
    const textKeys = new Set<string>();
    let input: Record<string, unknown>;
    if (!fields) {
      input = url;
      for (const k in url) textKeys.add(k);
    } else if (isEmpty(url) && !svc.checkInput) {
      // Nothing to merge and nothing to change: the payload's fields are the input, uncopied.
      input = fields;
    } else if (urlOverMsg) {
      input = { ...fields, ...url };
      for (const k in url) textKeys.add(k);
    } else {
      input = { ...url, ...fields };
      for (const k in url) if (!(k in fields)) textKeys.add(k);
    }
    if (fields && textPayload && svc.checkInput) for (const k in fields) textKeys.add(k);
    ex.input = input;
    const problem = svc.checkInput?.(input, textKeys);
    if (problem) throw new SvcError('INVALID_INPUT', `Invalid input: ${problem}`);
  };
}

const ERROR_CODES: Record<ServiceErrorKind | (typeof RUNTIME_ERROR_KINDS)[number], ErrorCode> = {
  BadRequest: 'BAD_REQUEST',
  Unauthorized: 'UNAUTHORIZED',
  Forbidden: 'FORBIDDEN',
  NotFound: 'NOT_FOUND',
  Conflict: 'CONFLICT',
  ServiceUnavailable: 'SERVICE_UNAVAILABLE',
  BadGateway: 'BAD_GATEWAY',
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

function invokeRequestOf(ex: Exchange, service: string): InvokeRequest {
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
  };
}

function invokeService(channel: Channel, invoke: KernelSteps['invoke']): HookFn {
  const service = channel.service;
  return async function runService(ex) {
    // The result was checked where it left the sandbox (parseInvokeResult): status, header names and values, sizes.
    const result = await invoke(invokeRequestOf(ex, service));
    if (result.logs?.length) for (const [level, message] of result.logs) ex.log[level]({ service }, message);
    const r = ex.response;
    if (result.error) {
      const code = ERROR_CODES[result.error.kind];
      if (code === 'SERVICE_FAILED') {
        ex.log.error({ service, error: result.error.message }, 'service raised an exception');
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

/** Runs a chain; awaits only steps that returned a promise, and stops once a reply went out. */
export async function runChain(rt: ChannelRuntime, ex: HttpExchange): Promise<void> {
  try {
    for (const step of rt.steps) {
      const pending = step(ex);
      if (pending) await pending;
      if (ex.replied) return;
    }
    sendDraft(ex);
  } catch (err) {
    await replyWithError(rt.onError, ex, err);
  }
}

export async function replyWithError(hooks: readonly ErrorHookFn[], ex: HttpExchange, err: unknown): Promise<void> {
  if (ex.replied) return;
  for (const hook of hooks) {
    try {
      await hook(ex, err);
    } catch (hookErr) {
      ex.log.error({ err: hookErr }, 'onError hook failed');
    }
    if (ex.replied) return;
  }
  const e = err instanceof SvcError ? err : undefined;
  if (!e) ex.log.error({ err }, 'request failed');
  else if (e.status >= 500) ex.log.warn({ code: e.code, details: e.details }, 'request failed');
  const status = e?.status ?? 500;
  const headers = e?.headers ? { ...ex.response.headers, ...e.headers } : ex.response.headers;
  ex.response.contentType = 'application/json; charset=utf-8';
  ex.response.headers = {};
  // Headers a service set were checked when its call returned (checkedHeaders).
  ex.reply(status, errorBody(ex.cid, e?.details ?? 'Internal server error'), headers);
}
