import type { Model, InputOf } from './model.ts';

/** The authenticated caller, when the channel has a security definition. */
export interface User {
  /** Basic Auth username, or the API key definition's name. */
  username: string;
  /** Name of the security definition that matched. */
  definition: string;
  /** Security type, e.g. basic_auth or apikey. */
  type: string;
  /** The group through which access was granted. */
  group?: string;
}

export interface UploadedFile {
  field: string;
  filename: string;
  contentType: string;
  content: Uint8Array;
}

export interface Log {
  debug(message: string): void;
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

/**
 * Which delivery of a queued event a call is (channels with Use queue on, and invokeAsync).
 * Delivery is at least once: an event can run again after a failure or a restart, so a service
 * with effects deduplicates by `cid`.
 */
export interface Delivery {
  /** 1 for the first attempt, 2 for the first retry, ... */
  attempt: number;
  /** When the event was accepted, ISO 8601 (UTC). */
  firstReceivedAt: string;
  /** The CID the event was accepted with, the same on every attempt (`ctx.cid` is the attempt's own). */
  cid: string;
  /**
   * Set when an event source started the call rather than an HTTP request: for a scheduled job,
   * `{ kind: 'scheduler', name: <job>, at: <the tick's time> }`. A job's tick keeps its CID on
   * every attempt, so `delivery.cid` deduplicates a tick's effects.
   */
  source?: { kind: string; name: string; at?: string };
}

/** What the service sets besides the body it returns. */
export interface ResponseControl {
  /** Default 200. A 204 carries no body; HEAD answers carry none either. */
  status: number;
  headers: Record<string, string>;
  contentType: string | undefined;
}

/** Everything a service sees of one request. */
export interface Context<I = Record<string, unknown>> {
  /** Correlation ID of the request; also in the X-Svc-CID response header. */
  readonly cid: string;
  /** Name of the channel that received the request (undefined when run from a queue or by another service's `invoke`). */
  readonly channel: string | undefined;
  /** Upper-case HTTP method. */
  readonly method: string;
  readonly path: string | undefined;
  /** Path parameters, query string and payload fields merged by the channel's priority settings. */
  readonly input: I;
  /** The parsed body as a whole (JSON value, XML tree, HL7 message, form fields). */
  readonly payload: unknown;
  readonly query: Readonly<Record<string, string | string[]>>;
  readonly pathParams: Readonly<Record<string, string>>;
  /** Request headers, names lower-cased. */
  readonly headers: Readonly<Record<string, string>>;
  /** WSGI-style keys: HTTP_X_HOOK_SIGNATURE for the header X-Hook-Signature, REQUEST_METHOD, PATH_INFO. */
  readonly env: Readonly<Record<string, string>>;
  /** The raw body as text (UTF-8); '' when the body was not valid UTF-8 (use rawBytes()). */
  readonly rawBody: string;
  /** The raw body bytes, exactly as received. */
  rawBytes(): Uint8Array;
  readonly files: readonly UploadedFile[];
  readonly user: User | undefined;
  /** Set when the call runs from the Use queue; undefined for a synchronous call. */
  readonly delivery: Delivery | undefined;
  readonly response: ResponseControl;
  readonly log: Log;
}

export type Handler<I> = (ctx: Context<I>) => unknown;

export interface ServiceLimits {
  /** Wall-clock limit of one call, ms (capped by server.sandbox.max_timeout_ms). */
  timeoutMs?: number;
  /** Isolate memory limit, MB (capped by server.sandbox.max_memory_mb). */
  memoryMb?: number;
}

export interface ServiceDefinition<M extends Model = Model> {
  /** Typed input model: requests that do not match are answered 400 before the service runs. */
  input?: M;
  limits?: ServiceLimits;
  /**
   * The services that may run this one with `invoke` and `invokeAll`, by name, or `'*'` for every
   * service. Absent: no service may (a service behind a secured channel is not reachable around
   * that channel's security unless it says so). Channels and the queue are not affected.
   */
  invokableBy?: '*' | readonly string[];
  /** Generic handler: ignored once any verb handler exists. */
  handle?: Handler<InputOf<M>>;
  GET?: Handler<InputOf<M>>;
  POST?: Handler<InputOf<M>>;
  PUT?: Handler<InputOf<M>>;
  PATCH?: Handler<InputOf<M>>;
  DELETE?: Handler<InputOf<M>>;
  HEAD?: Handler<InputOf<M>>;
  OPTIONS?: Handler<InputOf<M>>;
}
