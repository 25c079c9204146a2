import type { AuthInfo } from '../exchange.ts';

/**
 * What the kernel asks of a service, and what comes back. Only JSON-like data:
 * it crosses a process boundary and an isolate boundary as JSON text.
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
  headers?: Record<string, string>;
  query?: Record<string, string | string[]>;
  pathParams?: Record<string, string>;
  /** The raw body: UTF-8 text when it decodes as such, else base64. */
  rawBody?: { text: string } | { base64: string };
  files?: Array<{ field: string; filename: string; contentType: string; base64: string }>;
  auth?: AuthInfo;
}

/** A service error the SDK raised, by its class. */
export type ServiceErrorKind =
  | 'BadRequest'
  | 'Unauthorized'
  | 'Forbidden'
  | 'NotFound'
  | 'Conflict'
  | 'ServiceUnavailable'
  | 'BadGateway'
  | 'Error';

export interface InvokeResult {
  status: number;
  headers: Record<string, string>;
  contentType?: string;
  /** The service's return value; bytes arrive as base64 with bodyEncoding 'base64'. */
  body?: unknown;
  bodyEncoding?: 'base64';
  /** Set when the service threw. */
  error?: { kind: ServiceErrorKind; message: string };
  /** Log lines the service wrote during the call, with their levels. */
  logs?: Array<[level: 'debug' | 'info' | 'warn' | 'error', message: string]>;
}

/** What a service declares, reported by the sandbox once its file compiled. */
export interface ServiceMeta {
  /** Verb handlers present; empty means only the generic handler. */
  verbs: string[];
  hasGeneric: boolean;
  /** The typed input model as JSON (see sdk/model.ts), or null. */
  input: Record<string, FieldDescriptor> | null;
  limits: { timeoutMs?: number; memoryMb?: number };
}

export type FieldType = 'string' | 'integer' | 'number' | 'boolean' | 'object' | 'array' | 'any';

export interface FieldDescriptor {
  type: FieldType;
  required: boolean;
  default?: unknown;
  description?: string;
}

/** Limits the kernel applies to one service in a sandbox. */
export interface SandboxLimits {
  memoryMb: number;
  timeoutMs: number;
  maxOutputBytes: number;
}
