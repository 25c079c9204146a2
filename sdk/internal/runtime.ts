// The part of the SDK that runs inside the isolate and talks to the host.
// Private: services never import it. It captures what it needs before any service code runs,
// so a service that overwrites JSON or globals affects only itself.
import type { Context, Delivery, ResponseControl, ServiceDefinition, UploadedFile, User } from '../context.ts';
import { ServiceError, TooManyRequests, crossedError } from '../errors.ts';
import { PLAIN_200_ENVELOPE, type InvokeRequest } from './invoke-request.ts';
import { fromBase64, toBase64, utf8Encode } from './bytes.ts';
import { HTTP_METHODS } from '../http.ts';

/** Fire-and-forget host function; the host answers later through resolveHostCall. */
type Send = (callId: number, seq: number, op: string, argsJson: string) => void;

const G = globalThis as Record<string, unknown>;
const send = G.__svc_send as Send | undefined;

// Primordials, captured before any service code runs: service code may replace the globals and
// prototypes these come from, and must never be handed the runtime's own callbacks.
const PromiseCtor = Promise;
const promiseThen = Promise.prototype.then;
const reflectApply = Reflect.apply;
const defineProperty = Object.defineProperty;
const freeze = Object.freeze;
const toText = String;
const isInteger = Number.isInteger;
/**
 * `then` looks up `constructor[Symbol.species]` to build the promise it returns; service code can
 * redefine both on Promise. The runtime's own promises carry a private constructor instead, so
 * chaining them runs no service code.
 */
const PRIVATE_SPECIES = freeze({ [Symbol.species]: PromiseCtor });

/**
 * Calls back with the settled value of whatever a handler returned (a value, a promise or any
 * thenable). The callbacks stay inside the runtime: a thenable's own `then` only ever sees the
 * engine's resolving functions of a promise the runtime made, so it cannot call them with a
 * forged result.
 */
function settle<T>(value: unknown, onValue: (v: unknown) => T, onError: (e: unknown) => T, done: (out: T) => void): void {
  const wrapped = new PromiseCtor<unknown>((resolve) => resolve(value));
  defineProperty(wrapped, 'constructor', { value: PRIVATE_SPECIES });
  const finished = (out: T): void => done(out);
  reflectApply(promiseThen, wrapped, [
    (v: unknown) => {
      let out: T;
      try {
        out = onValue(v);
      } catch (err) {
        out = onError(err);
      }
      finished(out);
    },
    (e: unknown) => finished(onError(e)),
  ]);
}

/** A resolved promise of the runtime's own, to run a function in the next microtask. */
const TICK = PromiseCtor.resolve();
defineProperty(TICK, 'constructor', { value: PRIVATE_SPECIES });
function nextMicrotask(fn: () => void): void {
  reflectApply(promiseThen, TICK, [fn]);
}

/** A status a service set, read once (a getter could answer differently each time). */
function statusOf(value: unknown, fallback: number): number {
  return typeof value === 'number' && isInteger(value) && value >= 100 && value <= 599 ? value : fallback;
}
const waiting = new Map<number, { callId: number; done: (replyJson: string) => void }>();
let nextSeq = 0;

function resolveHostCall(seq: number, replyJson: string): void {
  const entry = waiting.get(seq);
  if (!entry) return;
  waiting.delete(seq);
  // The code that awaited this reply resumes next, on behalf of the call that made it.
  currentCallId = entry.callId;
  entry.done(replyJson);
}
const stringify = JSON.stringify;
const parse = JSON.parse;
const VERBS = HTTP_METHODS;
const MAX_LOG_LINES = 200;
const MAX_LOG_LINE = 8192;

let definition: ServiceDefinition | undefined;
let maxOutput = 16 * 1024 * 1024;

/**
 * Host calls are attributed to a request: by its CID when the caller passes one (spec D:
 * outgoing methods take the CID first), else to the call whose code is running: set when a
 * handler starts and when a host reply resumes the code that awaited it.
 */
let currentCallId = 0;
const callIdByCid = new Map<string, number>();

export async function callHost(op: string, args: unknown, cid?: string): Promise<unknown> {
  if (!send) throw new Error(`${op} is only available inside the svc sandbox`);
  const callId = (cid !== undefined ? callIdByCid.get(cid) : undefined) ?? currentCallId;
  const seq = ++nextSeq;
  const argsJson = stringify(args ?? null);
  const replyJson = await new Promise<string>((resolve) => {
    waiting.set(seq, { callId, done: resolve });
    send(callId, seq, op, argsJson);
  });
  const reply = parse(replyJson) as {
    ok: boolean;
    value?: unknown;
    error?: { kind: string; status: number; message: string; code?: string; retryAfter?: number };
  };
  if (reply.ok) return reply.value;
  const e = reply.error ?? { kind: 'Error', status: 500, message: 'host call failed' };
  if (e.kind === 'Error') throw new Error(e.message);
  throw crossedError(e.kind, e.status, e.message, e);
}

/** What the kernel sends for one call (kernel/sandbox/protocol.ts), with the call's id in this process. */
type WireRequest = InvokeRequest & { callId: number };

function isEmpty(o: object): boolean {
  for (const _ in o) return false;
  return true;
}

function envOf(req: WireRequest): Record<string, string> {
  const env: Record<string, string> = { REQUEST_METHOD: req.method, PATH_INFO: req.path ?? '' };
  const headers = req.headers ?? {};
  for (const name of Object.keys(headers)) env['HTTP_' + name.toUpperCase().replace(/-/g, '_')] = headers[name]!;
  return env;
}

/**
 * One request as the service sees it. A class, so a call costs one object: the lazily built
 * parts (env, files, log) live on the prototype.
 */
class CallContext implements Context {
  readonly cid: string;
  readonly channel: string | undefined;
  readonly method: string;
  readonly path: string | undefined;
  readonly input: Record<string, unknown>;
  readonly payload: unknown;
  readonly query: Record<string, string | string[]>;
  readonly pathParams: Record<string, string>;
  readonly headers: Record<string, string>;
  readonly rawBody: string;
  readonly user: User | undefined;
  readonly delivery: Delivery | undefined;
  readonly response: ResponseControl = { status: 200, headers: {}, contentType: undefined };
  readonly logs: Array<[string, string]> = [];
  private envCache: Record<string, string> | undefined;
  private filesCache: UploadedFile[] | undefined;
  private logCache: Context['log'] | undefined;

  constructor(private readonly req: WireRequest) {
    this.cid = req.cid;
    this.channel = req.channel;
    this.method = req.method;
    this.path = req.path;
    const raw = req.rawBody;
    // The kernel parsed this text already and accepted it: parsing it here gives the same value.
    const payload = req.payloadFromBody && raw && 'text' in raw ? parse(raw.text) : req.payload;
    const over = req.inputOverPayload;
    this.input = over ? (isEmpty(over) ? (payload as Record<string, unknown>) : { ...(payload as Record<string, unknown>), ...over }) : (req.input ?? {});
    this.payload = payload;
    this.query = req.query ?? {};
    this.pathParams = req.pathParams ?? {};
    this.headers = req.headers ?? {};
    this.rawBody = raw && 'text' in raw ? raw.text : '';
    this.user = req.auth;
    this.delivery = req.delivery === undefined ? undefined : freeze(req.delivery);
  }

  get env(): Record<string, string> {
    return (this.envCache ??= envOf(this.req));
  }

  rawBytes(): Uint8Array {
    const raw = this.req.rawBody;
    return !raw ? new Uint8Array(0) : 'text' in raw ? utf8Encode(raw.text) : fromBase64(raw.base64);
  }

  get files(): UploadedFile[] {
    return (this.filesCache ??= (this.req.files ?? []).map((f) => ({ field: f.field, filename: f.filename, contentType: f.contentType, content: fromBase64(f.base64) })));
  }

  get log(): Context['log'] {
    if (this.logCache) return this.logCache;
    const logs = this.logs;
    const at = (level: string) => (message: string) => {
      if (logs.length < MAX_LOG_LINES) logs[logs.length] = [level, toText(message).slice(0, MAX_LOG_LINE)];
    };
    return (this.logCache = { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') });
  }
}

function pickHandler(method: string): ((ctx: Context) => unknown) | undefined {
  const def = definition as Record<string, unknown> | undefined;
  if (!def) return undefined;
  const verb = def[method];
  if (typeof verb === 'function') return verb as (ctx: Context) => unknown;
  const hasVerbs = VERBS.some((v) => typeof def[v] === 'function');
  return !hasVerbs && typeof def.handle === 'function' ? (def.handle as (ctx: Context) => unknown) : undefined;
}

/** An envelope's text, or the output-too-large error in its place past the service's output limit. */
function withinLimit(text: string): string {
  return text.length > maxOutput ? stringify({ status: 500, headers: {}, error: { kind: 'OutputTooLarge', message: 'Service output exceeds the limit' } }) : text;
}

function finish(envelope: Record<string, unknown>): string {
  let text: string;
  try {
    text = stringify(envelope);
  } catch (err) {
    let why = '';
    try {
      why = toText((err as Error)?.message);
    } catch {
      // a message getter that throws adds nothing
    }
    return stringify({ status: 500, headers: {}, error: { kind: 'OutputInvalid', message: 'Service output is not serializable: ' + why }, logs: envelope.logs });
  }
  return withinLimit(text);
}

/**
 * `<envelope>\t<body JSON>`: the body encoded apart, so the kernel sends the text without
 * decoding it (InvokeRequest.replyBodyJson). Only for what its JSON format would encode the same
 * way: a body whose JSON is a string (a Date, a toJSON returning one) stays in the envelope.
 */
function finishApart(envelope: Record<string, unknown>, out: unknown, plain: boolean): string {
  let body: string | undefined;
  let text: string;
  try {
    body = stringify(out) as string | undefined;
    if (body === undefined || body.charCodeAt(0) === 34 /* " */) return finish({ ...envelope, body: out });
    text = (plain ? PLAIN_200_ENVELOPE : stringify(envelope)) + '\t' + body;
  } catch {
    return finish({ ...envelope, body: out });
  }
  return withinLimit(text);
}

function succeeded(ctx: CallContext, out: unknown, bodyApart: boolean): string {
  const r = ctx.response;
  const requested = r.status;
  const status = statusOf(requested, 0);
  if (status === 0) return finish({ status: 500, headers: {}, error: { kind: 'OutputInvalid', message: `Invalid service output: response status ${toText(typeof requested === 'number' ? requested : typeof requested)} is not an integer from 100 to 599` }, logs: ctx.logs });
  const envelope: Record<string, unknown> = { status, headers: r.headers, contentType: r.contentType, logs: ctx.logs };
  if (out instanceof Uint8Array) {
    envelope.body = toBase64(out);
    envelope.bodyEncoding = 'base64';
  } else if (out instanceof ArrayBuffer) {
    envelope.body = toBase64(new Uint8Array(out));
    envelope.bodyEncoding = 'base64';
  } else if (bodyApart && out !== undefined && typeof out !== 'string' && typeof out !== 'function' && typeof out !== 'symbol') {
    // Nothing set on the response: the envelope every such call sends, without encoding it again.
    const plain = status === 200 && r.contentType === undefined && ctx.logs.length === 0 && isEmpty(r.headers);
    return finishApart(envelope, out, plain);
  } else envelope.body = out;
  return finish(envelope);
}

const MAX_FRAMES = 20;

/**
 * The stack frames of an exception that are in service files (the SDK's own are noise to the
 * service's author), for the log and `svc test`; undefined when there are none. The kernel maps
 * their positions to the source.
 */
function serviceFrames(err: unknown): string | undefined {
  try {
    if (!(err instanceof Error)) return undefined;
    const stack = toText(err.stack);
    let frames = '';
    let count = 0;
    for (const line of stack.split('\n')) {
      if (!line.includes('file:///services/') || !line.trimStart().startsWith('at ')) continue;
      frames += (count ? '\n' : '') + '    ' + line.trim().slice(0, 500);
      if (++count === MAX_FRAMES) break;
    }
    return count ? frames : undefined;
  } catch {
    // A stack getter that throws leaves the message alone.
    return undefined;
  }
}

/** A TooManyRequests' retryAfterSeconds as the answer's Retry-After, unless the service set that header itself. */
function withRetryAfter(headers: Record<string, string>, err: ServiceError): Record<string, string> {
  if (!(err instanceof TooManyRequests)) return headers;
  const seconds = err.retryAfterSeconds;
  if (typeof seconds !== 'number' || !(seconds >= 0 && seconds <= 86_400)) return headers;
  for (const name of Object.keys(headers)) if (name.toLowerCase() === 'retry-after') return headers;
  return { ...headers, 'Retry-After': String(Math.ceil(seconds)) };
}

function failed(ctx: CallContext | undefined, err: unknown): string {
  const headers = ctx?.response.headers ?? {};
  const logs = ctx?.logs ?? [];
  try {
    if (err instanceof ServiceError) return finish({ status: statusOf(err.status, 500), headers: withRetryAfter(headers, err), error: { kind: err.kind, message: toText(err.message) }, logs });
    const message = err instanceof Error ? `${toText(err.name)}: ${toText(err.message)}` : toText(err);
    return finish({ status: 500, headers, error: { kind: 'Error', message, stack: serviceFrames(err) }, logs });
  } catch {
    // An error whose name, message or toString throws says nothing more.
    return finish({ status: 500, headers: {}, error: { kind: 'Error', message: 'the service threw a value that cannot be described' }, logs: [] });
  }
}

/**
 * Runs one request and hands its envelope to `deliver`; never throws. A handler that returns
 * a plain value is answered in the same turn (no microtask, no promise).
 */
function dispatch(req: WireRequest): void {
  let ctx: CallContext | undefined;
  const cid = req.cid;
  const callId = req.callId;
  try {
    currentCallId = callId;
    callIdByCid.set(cid, callId);
    ctx = new CallContext(req);
    const handler = pickHandler(req.method);
    if (!handler) {
      callIdByCid.delete(cid);
      return deliver(callId, finish({ status: 405, headers: {}, error: { kind: 'MethodNotAllowed', message: 'Method not allowed' }, logs: [] }));
    }
    const out = reflectApply(handler, definition, [ctx]);
    // Only objects and functions can be thenables; settle() reads `then` once, as the engine does.
    if (out === null || (typeof out !== 'object' && typeof out !== 'function')) {
      callIdByCid.delete(cid);
      return deliver(callId, succeeded(ctx, out, req.replyBodyJson === true));
    }
    const running = ctx;
    settle(
      out,
      (value) => (callIdByCid.delete(cid), succeeded(running, value, req.replyBodyJson === true)),
      (err) => (callIdByCid.delete(cid), failed(running, err)),
      (envelope) => deliver(callId, envelope),
    );
  } catch (err) {
    callIdByCid.delete(cid);
    deliver(callId, failed(ctx, err));
  }
}

/** Checks the service's default export and describes it for the kernel. */
function register(def: unknown, outputLimit: number): string {
  maxOutput = outputLimit;
  if (!def || typeof def !== 'object') throw new Error('the service file must `export default service({...})`');
  const d = def as Record<string, unknown>;
  const verbs = VERBS.filter((v) => typeof d[v] === 'function');
  const hasGeneric = typeof d.handle === 'function';
  if (!verbs.length && !hasGeneric) throw new Error('the service defines no handler: add handle() or a verb handler such as GET()');
  let input: Record<string, unknown> | null = null;
  if (d.input !== undefined) {
    if (!d.input || typeof d.input !== 'object') throw new Error('input must be an object of t.* fields');
    input = {};
    for (const [name, f] of Object.entries(d.input as Record<string, Record<string, unknown>>)) {
      if (!f || typeof f.type !== 'string') throw new Error(`input.${name} must be a t.* field`);
      input[name] = { type: f.type, required: f.required !== false, default: f.default, description: f.description };
    }
  }
  const limits = (d.limits ?? {}) as Record<string, unknown>;
  const by = d.invokableBy;
  let invokableBy: string[] = [];
  if (by === '*') invokableBy = ['*'];
  else if (Array.isArray(by) && by.every((n) => typeof n === 'string' && n !== '')) invokableBy = [...(by as string[])];
  else if (by !== undefined) throw new Error("invokableBy must be '*' or an array of service names");
  definition = def as ServiceDefinition;
  return stringify({
    verbs,
    hasGeneric,
    input,
    invokableBy,
    limits: {
      timeoutMs: typeof limits.timeoutMs === 'number' ? limits.timeoutMs : undefined,
      memoryMb: typeof limits.memoryMb === 'number' ? limits.memoryMb : undefined,
    },
  });
}

/** Results leave in batches: every call that finishes in the same microtask turn shares one host callback. */
type Done = (lines: string) => void;
const done = G.__svc_done as Done | undefined;
let doneLines = '';
let flushing = false;

function flushResults(): void {
  flushing = false;
  const lines = doneLines;
  doneLines = '';
  done!(lines);
}

/** Envelopes come only from finish(): JSON text without line breaks, so lines cannot be forged. */
function deliver(callId: number, envelope: string): void {
  doneLines += callId + '\t' + envelope + '\n';
  if (!flushing) {
    flushing = true;
    nextMicrotask(flushResults);
  }
}

/**
 * Starts a batch of requests (a JSON array) and returns at once; results arrive through deliver.
 * `raws`: the texts of the bodies that crossed apart (`rawBody: { apart: length }`), one after
 * another in the batch's order.
 */
function dispatchMany(requestsJson: string, raws?: string): void {
  const requests = parse(requestsJson) as WireRequest[];
  let at = 0;
  for (let i = 0; i < requests.length; i++) {
    const req = requests[i]!;
    const apart = (req.rawBody as { apart?: unknown } | undefined)?.apart;
    if (typeof apart === 'number' && raws !== undefined) {
      req.rawBody = { text: raws.slice(at, at + apart) };
      at += apart;
    }
    dispatch(req);
  }
}

if (send && done) G.__svc_runtime = { dispatchMany, register, resolveHostCall };
