import { validateHeaderName, validateHeaderValue } from 'node:http';
import { z } from 'zod';
import { HTTP_METHODS } from '../../sdk/http.ts';
import { PLAIN_200_ENVELOPE } from '../../sdk/internal/invoke-request.ts';
import {
  RUNTIME_ERROR_KINDS,
  SERVICE_ERROR_KINDS,
  type InvokeResult,
  type LogLevel,
  type ResultErrorKind,
} from '../../sdk/plugin/protocol.ts';

/** The kernel's import point for the call types, which the plugin SDK declares (sdk/plugin/protocol.ts). */
export {
  RUNTIME_ERROR_KINDS,
  SERVICE_ERROR_KINDS,
  type DeliveryInfo,
  type FieldDescriptor,
  type FieldType,
  type InvokeRequest,
  type InvokeResult,
  type LogLevel,
  type SandboxStats,
  type ServiceErrorKind,
  type ServiceMeta,
  type TraceContext,
} from '../../sdk/plugin/protocol.ts';

const deliveryInfoSchema = z
  .object({
    attempt: z.number().int().min(1).max(1_000_000),
    firstReceivedAt: z.iso.datetime(),
    cid: z.string().min(1).max(200),
    source: z
      .object({ kind: z.string().min(1).max(100), name: z.string().min(1).max(300), at: z.iso.datetime().optional() })
      .strict()
      .optional(),
  })
  .strict();

/** Why a delivery record cannot go into a sandbox, or undefined when it can. */
export function deliveryProblem(delivery: unknown): string | undefined {
  const parsed = deliveryInfoSchema.safeParse(delivery);
  return parsed.success ? undefined : `invalid delivery: ${parsed.error.issues.map((i) => `${i.path.join('.') || 'delivery'}: ${i.message}`).join('; ')}`;
}

/** Caps on what a sandbox may hand the kernel beside the body (the body has its own cap). */
export const MAX_LOG_LINES = 200;
export const MAX_LOG_LINE = 8192;
export const MAX_ERROR_MESSAGE = 4096;
const MAX_HEADERS = 100;
const MAX_CONTENT_TYPE = 1024;

/**
 * Response headers the kernel owns: the CID, and the framing and hop-by-hop headers that
 * Node and Fastify set from the body. A service setting one is a 500, not a corrupt response.
 */
export const KERNEL_OWNED_HEADERS: ReadonlySet<string> = new Set(['x-svc-cid', 'content-length', 'transfer-encoding', 'connection', 'keep-alive', 'upgrade', 'trailer', 'proxy-connection', 'te']);

// ---------------------------------------------------------------------------------------------
// The wire between the kernel and a sandbox process: one message per line, a JSON header and,
// for some kinds, a body after a tab. Kernel → sandbox messages are the kernel's own; sandbox →
// kernel messages are untrusted (service code runs in that process) and are checked here.

const wireId = z.number().int().positive().max(Number.MAX_SAFE_INTEGER);
const fieldDescriptor = z.object({
  type: z.enum(['string', 'integer', 'number', 'boolean', 'object', 'array', 'any']),
  required: z.boolean(),
  default: z.unknown().optional(),
  description: z.string().max(4096).optional(),
});
const serviceMeta = z.object({
  verbs: z.array(z.enum(HTTP_METHODS)),
  hasGeneric: z.boolean(),
  input: z.record(z.string().max(256), fieldDescriptor).nullable(),
  limits: z.object({ timeoutMs: z.number().positive().optional(), memoryMb: z.number().positive().optional() }),
  invokableBy: z.array(z.string().min(1).max(256)).max(1000).default([]),
});
/** Codes a sandbox process may answer a call with instead of a result envelope. */
export const SANDBOX_FAILURES = ['SERVICE_TIMEOUT', 'SERVICE_MEMORY_LIMIT', 'SERVICE_UNAVAILABLE', 'SERVICE_NOT_DEPLOYED', 'SERVICE_OUTPUT_TOO_LARGE', 'SERVICE_OUTPUT_INVALID'] as const;
export type SandboxFailure = (typeof SANDBOX_FAILURES)[number];

const sandboxMessage = z.discriminatedUnion('t', [
  z.object({ t: z.literal('ready') }),
  z.object({ t: z.literal('result'), id: wireId, fail: z.enum(SANDBOX_FAILURES).optional(), message: z.string().max(MAX_ERROR_MESSAGE).optional() }),
  z.object({ t: z.literal('hostcall'), id: wireId, seq: wireId, op: z.string().min(1).max(200) }),
  z.object({ t: z.literal('deployed'), did: wireId, ok: z.boolean(), meta: serviceMeta.optional(), error: z.string().optional() }),
  z.object({ t: z.literal('overrun'), name: z.string().max(256) }),
  /** An isolate rebuilt after a limit; `waitedMs`: how long the rebuild waited its tenant's turn (rebuild-gate.ts). */
  z.object({ t: z.literal('rebuilt'), name: z.string().max(256), waitedMs: z.number().min(0).max(86_400_000).optional() }),
  /** CPU time service isolates used since the last report, µs by service (sent only with `SandboxCaps.reportCpu`). */
  z.object({ t: z.literal('cpu'), use: z.array(z.tuple([z.string().max(256), z.number().int().min(0).max(Number.MAX_SAFE_INTEGER)])).max(10_000) }),
]);
export type SandboxMessage = z.infer<typeof sandboxMessage>;

export type KernelMessage =
  | { t: 'init'; caps: SandboxCaps }
  /** `capMb`: a ceiling on the isolate's memory limit below the process's (a tenant's `memory_mb` quota). */
  | { t: 'deploy'; did: number; name: string; file: string; memoryMb?: number; capMb?: number }
  | { t: 'undeploy'; name: string }
  /** `d`: how deep in an invoke chain the call is (absent: 0); `ms`: its own time limit when below its service's. */
  | { t: 'call'; id: number; svc: string; d?: number; ms?: number }
  | { t: 'hostreply'; id: number; seq: number }
  /** The kernel answered the call already (its deadline passed): if it has not started, it must not. */
  | { t: 'cancel'; id: number };

/** Limits every sandbox process enforces; the service's own limits are capped by these. */
export interface SandboxCaps {
  defaultMemoryMb: number;
  maxMemoryMb: number;
  defaultTimeoutMs: number;
  maxTimeoutMs: number;
  maxOutputBytes: number;
  /** An isolate with no call for this long is dropped and built again on its next call; 0 keeps it. */
  idleMs: number;
  /** Calls one isolate holds at once at each invoke depth, parked ones included (default 2,048); more wait outside it. */
  maxCallsPerIsolate?: number;
  /** Report the CPU time service isolates use (`cpu` messages): tenants' processes do, the platform's need not. */
  reportCpu?: boolean;
  /**
   * Run service code below the kernel's CPU priority (nice 19, every thread): tenants' processes do, so that
   * no tenant's busy isolates outbid the kernel, which serves every tenant's requests.
   */
  belowNormalPriority?: boolean;
}

function isWireId(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v > 0;
}

/** A sandbox → kernel header, checked; undefined when it is not one of the kinds above. */
export function readSandboxMessage(header: unknown): SandboxMessage | undefined {
  // The message of every call, a plain result, is checked without the schema's allocations; so is a host call's.
  const h = header as { t?: unknown; id?: unknown; fail?: unknown; message?: unknown; seq?: unknown; op?: unknown } | null;
  if (typeof h === 'object' && h !== null && isWireId(h.id)) {
    if (h.t === 'result' && h.fail === undefined && h.message === undefined) return { t: 'result', id: h.id };
    if (h.t === 'hostcall' && isWireId(h.seq) && typeof h.op === 'string' && h.op.length >= 1 && h.op.length <= 200) return { t: 'hostcall', id: h.id, seq: h.seq, op: h.op };
  }
  const parsed = sandboxMessage.safeParse(header);
  return parsed.success ? parsed.data : undefined;
}

// ---------------------------------------------------------------------------------------------
// The result envelope, parsed and checked on the kernel side. Hand-written rather than zod:
// it runs once per call, and it builds the checked header object as it goes.

const LEVELS: ReadonlySet<string> = new Set(['debug', 'info', 'warn', 'error']);
const RESULT_KINDS: ReadonlySet<string> = new Set<string>([...SERVICE_ERROR_KINDS, ...RUNTIME_ERROR_KINDS]);

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Why a response header cannot go out, or undefined when it can. */
export function headerProblem(name: string, value: unknown): string | undefined {
  const shown = name.slice(0, 64);
  if (KERNEL_OWNED_HEADERS.has(name.toLowerCase())) return `response header '${shown}' is set by the server, not by services`;
  if (typeof value !== 'string') return `response header '${shown}' must be a string`;
  try {
    validateHeaderName(name);
  } catch {
    return `invalid response header name '${shown}'`;
  }
  try {
    validateHeaderValue(name, value);
  } catch {
    return `invalid value for response header '${shown}'`;
  }
  return undefined;
}

/**
 * A result envelope from a sandbox, checked field by field. Returns the result, or the reason it
 * is refused (the call then fails with SERVICE_OUTPUT_INVALID). Logs are trimmed, not refused.
 */
export function parseInvokeResult(text: string, bodyJsonWanted = false): InvokeResult | { invalid: string } {
  // `<envelope>\t<body JSON>`: the body encoded apart (InvokeRequest.replyBodyJson). JSON text
  // never holds a raw tab, so the first one ends the envelope.
  const tab = text.indexOf('\t');
  // What most calls send, a 200 with no headers, type or logs and the body apart, is known without parsing.
  if (bodyJsonWanted && tab === PLAIN_200_ENVELOPE.length && text.startsWith(PLAIN_200_ENVELOPE) && tab + 1 < text.length) {
    return { status: 200, headers: Object.create(null) as Record<string, string>, bodyJson: text.slice(tab + 1) };
  }
  let raw: unknown;
  try {
    raw = JSON.parse(tab === -1 ? text : text.slice(0, tab));
  } catch {
    return { invalid: 'the sandbox sent a result that is not JSON' };
  }
  if (!isPlainObject(raw)) return { invalid: 'the sandbox sent a result that is not an object' };
  if (tab !== -1) {
    if (raw.body !== undefined || raw.bodyEncoding !== undefined || raw.error !== undefined) return { invalid: 'a result with its body apart has another body' };
    const bodyText = text.slice(tab + 1);
    if (bodyJsonWanted) {
      // Sent as the service's answer, never read here: text like any string body a service returns with a type.
      if (!bodyText.length) return { invalid: 'an empty JSON body' };
    } else {
      try {
        raw.body = JSON.parse(bodyText);
      } catch {
        return { invalid: 'the sandbox sent a body that is not JSON' };
      }
    }
  }
  const status = raw.status;
  if (typeof status !== 'number' || !Number.isInteger(status) || status < 100 || status > 599) {
    return { invalid: `response status ${typeof status === 'number' ? status : typeof status} is not an integer from 100 to 599` };
  }
  const headers = Object.create(null) as Record<string, string>;
  if (raw.headers !== undefined && raw.headers !== null) {
    if (!isPlainObject(raw.headers)) return { invalid: 'response headers must be an object' };
    const names = Object.keys(raw.headers);
    if (names.length > MAX_HEADERS) return { invalid: `more than ${MAX_HEADERS} response headers` };
    for (const name of names) {
      const value = raw.headers[name];
      const problem = headerProblem(name, typeof value === 'number' ? String(value) : value);
      if (problem) return { invalid: problem };
      headers[name] = typeof value === 'number' ? String(value) : (value as string);
    }
  }
  const result: InvokeResult = { status, headers };
  if (raw.contentType !== undefined && raw.contentType !== null) {
    const ct = raw.contentType;
    if (typeof ct !== 'string' || ct.length > MAX_CONTENT_TYPE || headerProblem('content-type', ct)) return { invalid: 'invalid response content type' };
    result.contentType = ct;
  }
  if (raw.bodyEncoding !== undefined) {
    if (raw.bodyEncoding !== 'base64' || typeof raw.body !== 'string') return { invalid: 'invalid binary response body' };
    result.bodyEncoding = 'base64';
  }
  if (tab !== -1 && bodyJsonWanted) result.bodyJson = text.slice(tab + 1);
  else result.body = raw.body;
  if (raw.error !== undefined) {
    const e = raw.error;
    if (!isPlainObject(e) || typeof e.kind !== 'string' || !RESULT_KINDS.has(e.kind)) return { invalid: 'invalid service error' };
    const message = typeof e.message === 'string' ? e.message : '';
    result.error = { kind: e.kind as ResultErrorKind, message: message.length > MAX_ERROR_MESSAGE ? message.slice(0, MAX_ERROR_MESSAGE) + '…' : message };
    if (typeof e.stack === 'string' && e.stack) result.error.stack = e.stack.slice(0, MAX_ERROR_MESSAGE);
  }
  if (Array.isArray(raw.logs) && raw.logs.length) {
    const logs: Array<[LogLevel, string]> = [];
    for (const line of raw.logs) {
      if (logs.length >= MAX_LOG_LINES) break;
      if (Array.isArray(line) && LEVELS.has(line[0]) && typeof line[1] === 'string') logs.push([line[0] as LogLevel, line[1].length > MAX_LOG_LINE ? line[1].slice(0, MAX_LOG_LINE) : line[1]]);
    }
    result.logs = logs;
  }
  return result;
}
