import type { AuthInfo } from '../plugin/extensions.ts';

/**
 * What the kernel asks of a service (kernel/sandbox/protocol.ts re-exports it). Only JSON-like
 * data: it crosses a process boundary and an isolate boundary as JSON text. It lives in the SDK
 * because the runtime in the isolate reads it, and the services' types must not reach the kernel.
 */
export interface InvokeRequest {
  service: string;
  cid: string;
  channel?: string;
  /** Upper-case HTTP method; selects a verb handler. */
  method: string;
  path?: string;
  /** Absent when `inputOverPayload` is given: input is then the payload's fields with those on top. */
  input?: Record<string, unknown>;
  /**
   * Input fields that differ from the payload's (URL parameters, defaults, converted values):
   * the payload's fields cross the boundary once, not twice.
   */
  inputOverPayload?: Record<string, unknown>;
  payload?: unknown;
  /** `input`'s values are text (a message in XML, form, HL7): converted to a typed model's declared types. */
  inputIsText?: true;
  /**
   * The payload is `JSON.parse(rawBody.text)`, left for the sandbox to parse (set instead of
   * `payload` when a JSON body would otherwise cross twice, as text and as its value).
   */
  payloadFromBody?: true;
  /**
   * The caller sends an object, array, number, boolean or null that the service returns as its
   * JSON text (`Contributions.jsonReplyFormats`): the sandbox encodes it and the result carries
   * the text (InvokeResult.bodyJson), so the kernel neither decodes nor encodes it again.
   */
  replyBodyJson?: true;
  headers?: Record<string, string>;
  query?: Record<string, string | string[]>;
  pathParams?: Record<string, string>;
  /**
   * The raw body: UTF-8 text when it decodes as such, else base64. On the wire to a sandbox
   * process a long text crosses apart, as `{ apart: length }` here and the text beside the request.
   */
  rawBody?: { text: string } | { base64: string };
  files?: Array<{ field: string; filename: string; contentType: string; base64: string }>;
  auth?: AuthInfo;
  /** Set when the call runs from the Use queue: the service's `ctx.delivery`. */
  delivery?: DeliveryInfo;
  /**
   * The trace this call's work belongs to (Exchange.trace when it came from a request): host calls
   * continue it (outgoing calls), and the Use queue stores it with the event.
   */
  trace?: TraceContext;
}

/**
 * W3C Trace Context (https://www.w3.org/TR/trace-context/) as header values. A tracing plugin sets
 * it; the kernel only carries it, never parses it, except that log lines take `trace_id` and
 * `span_id` from `traceparent`, which is therefore always a well-formed version-00 value.
 */
export interface TraceContext {
  /** `00-<trace-id>-<span-id>-<flags>`: the span that work done for this request continues from. */
  traceparent: string;
  /** Passed on as received (validated), when there was one. */
  tracestate?: string;
}

/** Which delivery of a queued event this call is (at-least-once: services deduplicate by `cid`). */
export interface DeliveryInfo {
  /** 1 for the first attempt. */
  attempt: number;
  /** When the event was accepted, ISO 8601. */
  firstReceivedAt: string;
  /** The CID the event was accepted with (each attempt has its own `ctx.cid`). */
  cid: string;
  /** Set when an event source started the call (a scheduled job's tick), not an HTTP request. */
  source?: {
    /** The source plugin, e.g. `scheduler`. */
    kind: string;
    /** What fired in it, e.g. the job's name. */
    name: string;
    /** When it fired (a tick's time), ISO 8601. */
    at?: string;
  };
}

/**
 * The result envelope of a 200 with nothing set on the response (no headers, type or logs), as
 * JSON.stringify writes it: the runtime sends it without encoding it, and the kernel recognises
 * it without parsing it (kernel/sandbox/protocol.ts).
 */
export const PLAIN_200_ENVELOPE = '{"status":200,"headers":{},"logs":[]}';
