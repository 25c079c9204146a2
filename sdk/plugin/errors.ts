/**
 * The one error catalogue. Every error a channel can answer with has a code here,
 * a default message and a status; docs/errors.md lists the same codes (a test keeps
 * the two in step). Bodies never carry more than `details`: full reasons go to the log.
 */
export const ERRORS = {
  BAD_REQUEST: { status: 400, message: 'Bad request' },
  INVALID_INPUT: { status: 400, message: 'Invalid input' },
  MALFORMED_BODY: { status: 400, message: 'Malformed request body' },
  MALFORMED_REQUEST: { status: 400, message: 'Malformed request' },
  UNAUTHORIZED: { status: 401, message: 'Unauthorized' },
  FORBIDDEN: { status: 403, message: 'Forbidden' },
  NOT_FOUND: { status: 404, message: 'Not found' },
  NO_SUCH_URL: { status: 404, message: 'Not found' },
  METHOD_NOT_ALLOWED: { status: 405, message: 'Method not allowed' },
  REQUEST_TIMEOUT: { status: 408, message: 'Request timeout' },
  CONFLICT: { status: 409, message: 'Conflict' },
  PAYLOAD_TOO_LARGE: { status: 413, message: 'Request body too large' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, message: 'Unsupported media type' },
  TOO_MANY_REQUESTS: { status: 429, message: 'Too many requests' },
  TENANT_QUOTA: { status: 429, message: "The tenant's quota is used up" },
  HEADERS_TOO_LARGE: { status: 431, message: 'Request header fields too large' },
  INTERNAL: { status: 500, message: 'Internal server error' },
  SERVICE_FAILED: { status: 500, message: 'Service raised an exception' },
  SERVICE_NOT_DEPLOYED: { status: 500, message: 'Service is not deployed' },
  SERVICE_NOT_COMPILED: { status: 422, message: 'Service did not compile' },
  SERVICE_TESTS_FAILED: { status: 422, message: 'Service version failed its own tests' },
  SERVICE_MEMORY_LIMIT: { status: 500, message: 'Service exceeded its memory limit' },
  SERVICE_OUTPUT_TOO_LARGE: { status: 500, message: 'Service output exceeds the limit' },
  SERVICE_OUTPUT_INVALID: { status: 500, message: 'Service output is invalid' },
  BAD_GATEWAY: { status: 502, message: 'Upstream failure' },
  GATEWAY_TIMEOUT: { status: 504, message: 'Upstream timeout' },
  SERVICE_UNAVAILABLE: { status: 503, message: 'Service unavailable' },
  SERVICE_TIMEOUT: { status: 503, message: 'Service exceeded its time limit' },
  SANDBOX_CRASHED: { status: 503, message: 'Service sandbox crashed and was restarted' },
  SERVICE_QUARANTINED: { status: 503, message: 'Service is quarantined after crashing its sandbox repeatedly' },
  QUEUE_FULL: { status: 503, message: 'Queue is full' },
  SHUTTING_DOWN: { status: 503, message: 'Server is shutting down' },
  STEP_TIMEOUT: { status: 503, message: 'A request step did not finish in time' },
  INVOKE_NOT_FOUND: { status: 404, message: 'No such service to invoke' },
  INVOKE_FORBIDDEN: { status: 403, message: 'The service may not be invoked by this one' },
  INVOKE_CYCLE: { status: 500, message: 'The invoke would come back to a service already in its call chain' },
  INVOKE_DEPTH: { status: 500, message: 'The invoke chain is too deep' },
} as const satisfies Record<string, { status: number; message: string }>;

export type ErrorCode = keyof typeof ERRORS;

export class SvcError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  /** What the client is told; defaults to the catalogue message. */
  readonly details: string;
  /** Extra response headers (Allow, WWW-Authenticate, Retry-After). */
  readonly headers: Record<string, string> | undefined;

  constructor(code: ErrorCode, details?: string, opts?: { headers?: Record<string, string>; cause?: unknown; status?: number }) {
    const entry = ERRORS[code];
    const status = opts?.status ?? entry.status;
    // A refusal (4xx) is an answer, not a fault: its stack is never read, and capturing one cost
    // 3.8-4.4 µs against 0.4-0.5 without (12 frames deep), per refused request of a flood.
    const stackFrames = Error.stackTraceLimit;
    if (status < 500) Error.stackTraceLimit = 0;
    super(details ?? entry.message, opts?.cause === undefined ? undefined : { cause: opts.cause });
    Error.stackTraceLimit = stackFrames;
    this.name = 'SvcError';
    this.code = code;
    this.status = status;
    this.details = details ?? entry.message;
    this.headers = opts?.headers;
  }
}

/** What was wrong with one field of a request (a config path, an argument, an uploaded source), for showing at that field. */
export interface FieldIssue {
  path: (string | number)[];
  message: string;
}

/** An error whose body also lists issues by field: a refused config, refused arguments, a service that did not compile. */
export class IssuesError<I extends FieldIssue = FieldIssue> extends SvcError {
  constructor(code: ErrorCode, details: string, readonly issues: I[]) {
    super(code, details);
  }
}

/** The channel error body the spec prescribes: `{result: 'Error', cid, details}`. */
export function errorBody(cid: string, details: string): { result: 'Error'; cid: string; details: string } {
  return { result: 'Error', cid, details };
}
