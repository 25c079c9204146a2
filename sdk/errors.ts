/**
 * Exceptions a service raises to answer with a status other than 500.
 * The kernel maps them by `kind`: body `{result: 'Error', cid, details: message}`.
 */
export class ServiceError extends Error {
  readonly kind: string;
  readonly status: number;
  constructor(kind: string, status: number, message: string) {
    super(message);
    this.kind = kind;
    this.status = status;
    this.name = kind;
  }
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
