/**
 * What crosses between the kernel and a service call, as plugins see it: the request a plugin
 * sends a service (KernelApi.invoke), the checked result, what a deployed service declares, and
 * the sandbox's counters. The wire that carries them is the kernel's (kernel/sandbox/protocol.ts).
 */
export type { InvokeRequest, DeliveryInfo, TraceContext } from '../internal/invoke-request.ts';

/** A service error the SDK raised, by its class. */
export const SERVICE_ERROR_KINDS = ['BadRequest', 'Unauthorized', 'Forbidden', 'NotFound', 'Conflict', 'PayloadTooLarge', 'TooManyRequests', 'ServiceUnavailable', 'BadGateway', 'GatewayTimeout', 'Error'] as const;
export type ServiceErrorKind = (typeof SERVICE_ERROR_KINDS)[number];
/** Outcomes the SDK runtime reports that are not a service's own error class. */
export const RUNTIME_ERROR_KINDS = ['MethodNotAllowed', 'OutputTooLarge', 'OutputInvalid'] as const;
export type ResultErrorKind = ServiceErrorKind | (typeof RUNTIME_ERROR_KINDS)[number];

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

export interface InvokeResult {
  status: number;
  /** Checked header names and values, on an object without a prototype. */
  headers: Record<string, string>;
  contentType?: string;
  /** The service's return value; bytes arrive as base64 with bodyEncoding 'base64'. */
  body?: unknown;
  bodyEncoding?: 'base64';
  /** The body as JSON text, instead of `body`, when the request asked for it (InvokeRequest.replyBodyJson). */
  bodyJson?: string;
  /**
   * Set when the service threw. `stack`: for an exception that is not an SDK error class, the
   * stack frames in service files (`at fn (file:///services/x.ts:line:col)`, source positions).
   */
  error?: { kind: ResultErrorKind; message: string; stack?: string };
  /** Log lines the service wrote during the call, with their levels. */
  logs?: Array<[level: LogLevel, message: string]>;
}

/** What a service declares, reported by the sandbox once its file compiled. */
export interface ServiceMeta {
  /** Verb handlers present; empty means only the generic handler. */
  verbs: string[];
  hasGeneric: boolean;
  /** The typed input model as JSON (see sdk/model.ts), or null. */
  input: Record<string, FieldDescriptor> | null;
  limits: { timeoutMs?: number; memoryMb?: number };
  /** Services that may run it with `invoke`, by name; `['*']`: every service; empty: none (SDK 1.6). */
  invokableBy: string[];
}

export type FieldType = 'string' | 'integer' | 'number' | 'boolean' | 'object' | 'array' | 'any';

export interface FieldDescriptor {
  type: FieldType;
  required: boolean;
  default?: unknown;
  description?: string;
}

/**
 * What became of sandbox calls, and what the processes went through. Counters count from the
 * kernel's start; they are kept as plain numbers and read on demand, so a call costs one increment.
 */
export interface SandboxStats {
  /**
   * Calls by service and outcome: `ok` (a result), `error` (the service answered with an error:
   * raised, or an SDK error class), or what ended it otherwise, from the error catalogue's code:
   * `timeout`, `memory_limit`, `crashed` (its process died), `quarantined`, `unavailable`,
   * `not_deployed`, `output_too_large`, `output_invalid`, `internal`.
   */
  calls: Array<{ service: string; outcome: string; count: number }>;
  /**
   * Isolates rebuilt after a time or memory limit (or work left running) disposed them, by service,
   * and the milliseconds those rebuilds waited their tenant's turn (memory limits met again and again).
   */
  isolateRebuilds: Array<{ service: string; count: number; waitedMs: number }>;
  /** Sandbox processes started again after dying. */
  processRestarts: number;
  /** Sandbox processes alive now (home slots and probation processes). */
  processes: number;
  /** Services quarantined now. */
  quarantined: string[];
  /**
   * Per tenant (docs/tenants.md): every declared tenant, and any other whose services ran. CPU
   * its service isolates used on this node (ms since start, a counter; and in the last minute, what
   * `cpu_ms_per_minute` is checked against), its calls in flight as `concurrent_calls` counts them
   * (calls from channels, queues and schedules; the calls they invoke are not counted), and calls
   * refused by each quota (TENANT_QUOTA). Empty without tenants.
   */
  tenants: Array<{
    tenant: string;
    cpuMs: number;
    cpuMsLastMinute: number;
    /** This node's and the other nodes' (cluster mode): what `cpu_ms_per_minute` is checked against. */
    cpuMsLastMinuteCluster: number;
    /** Calls through outgoing connections in the last minute on this node (`outgoing_calls_per_minute`). */
    outgoingCallsLastMinute: number;
    inFlight: number;
    throttled: Record<'cpu_ms_per_minute' | 'concurrent_calls' | 'outgoing_calls_per_minute' | 'publishes_per_second' | 'queued_events' | 'pubsub_bytes', number>;
  }>;
}
