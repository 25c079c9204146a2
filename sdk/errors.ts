/**
 * Exceptions a service raises to answer with a status other than 500.
 * The kernel maps them by `kind`: body `{result: 'Error', cid, details: message}`.
 */
export class ServiceError extends Error {
  readonly kind: string;
  readonly status: number;
  /**
   * Set when svc raised the error rather than a service: its code in the error catalogue
   * (docs/errors.md), e.g. `INVOKE_FORBIDDEN` or `SERVICE_TIMEOUT` from `invoke`. Undefined for
   * an error a service threw, also when it reached another service through `invoke`.
   */
  code?: string;
  /** For an input refused by a service's input model (`invoke`): the problem of each field. */
  issues?: FieldProblem[];
  constructor(kind: string, status: number, message: string) {
    super(message);
    this.kind = kind;
    this.status = status;
    this.name = kind;
  }
}

/** One field of an input that does not match a service's input model. */
export interface FieldProblem {
  field: string;
  message: string;
}

export class BadRequest extends ServiceError {
  constructor(message = 'Bad request') {
    super('BadRequest', 400, message);
  }
}
export class Unauthorized extends ServiceError {
  constructor(message = 'Unauthorized') {
    super('Unauthorized', 401, message);
  }
}
export class Forbidden extends ServiceError {
  constructor(message = 'Forbidden') {
    super('Forbidden', 403, message);
  }
}
export class NotFound extends ServiceError {
  constructor(message = 'Not found') {
    super('NotFound', 404, message);
  }
}
export class Conflict extends ServiceError {
  constructor(message = 'Conflict') {
    super('Conflict', 409, message);
  }
}
/** Too large to handle (413): e.g. a file over an SFTP connection's max_file_bytes. */
export class PayloadTooLarge extends ServiceError {
  constructor(message = 'Payload too large') {
    super('PayloadTooLarge', 413, message);
  }
}
/** Too many requests (429): a quota reached, e.g. the tenant's `outgoing_calls_per_minute` (TENANT_QUOTA) on a host call. */
export class TooManyRequests extends ServiceError {
  /**
   * Seconds until another try may pass. Uncaught, the error's answer carries it as `Retry-After`
   * (unless the service set that header itself). A tenant quota's refusal sets it; a service that
   * throttles its own callers may too.
   */
  retryAfterSeconds?: number;
  constructor(message = 'Too many requests', retryAfterSeconds?: number) {
    super('TooManyRequests', 429, message);
    if (retryAfterSeconds !== undefined) this.retryAfterSeconds = retryAfterSeconds;
  }
}

/** What a host call's or an invoke's refusal says beyond its kind, status and message, as it crossed into the sandbox. */
export interface ErrorExtras {
  code?: string;
  retryAfter?: number;
}

/** errorOfKind, with the code and a quota refusal's Retry-After kept. */
export function crossedError(kind: string, status: number, message: string, extras: ErrorExtras): ServiceError {
  const err = errorOfKind(kind, status, message);
  if (extras.code !== undefined) err.code = extras.code;
  if (err instanceof TooManyRequests && typeof extras.retryAfter === 'number') err.retryAfterSeconds = extras.retryAfter;
  return err;
}
/** An upstream system answered badly (502). */
export class BadGateway extends ServiceError {
  constructor(message = 'Upstream failure') {
    super('BadGateway', 502, message);
  }
}
/** An upstream system did not answer in time (504). */
export class GatewayTimeout extends ServiceError {
  constructor(message = 'Upstream timeout') {
    super('GatewayTimeout', 504, message);
  }
}
export class ServiceUnavailable extends ServiceError {
  constructor(message = 'Service unavailable') {
    super('ServiceUnavailable', 503, message);
  }
}

const CLASSES: Record<string, new (message?: string) => ServiceError> = { BadRequest, Unauthorized, Forbidden, NotFound, Conflict, PayloadTooLarge, TooManyRequests, BadGateway, GatewayTimeout, ServiceUnavailable };

/** The SDK error of a kind as it crossed a boundary (a host call's answer, a result): its own class when it has one. */
export function errorOfKind(kind: string, status: number, message: string): ServiceError {
  const Class = CLASSES[kind];
  return Class ? new Class(message) : new ServiceError(kind, status, message);
}
