import { translate, type MessageKey, type MessageParams } from './messages/index.ts';

/**
 * One class per error code of the envelope. Thrown anywhere (routers, engine, server); mapped once to status
 * and body in routers/common/error-body.ts, which server/http/envelope.ts sends. The message is kept as a
 * catalogue key so it is rendered in the caller's language at the edge.
 */
export abstract class AppError extends Error {
  abstract readonly code: string;
  abstract readonly status: number;
  constructor(
    readonly key: MessageKey,
    readonly params: MessageParams = {},
  ) {
    super(translate(key, params));
  }
  localized(locale: string): string {
    return translate(this.key, this.params, locale);
  }
}

export class BadRequestError extends AppError {
  readonly code = 'E4001';
  readonly status = 400;
}
export class UnauthorizedError extends AppError {
  readonly code = 'E4011';
  readonly status = 401;
}
export class InvalidUserError extends AppError {
  readonly code = 'E4012';
  readonly status = 401;
}
export class ForbiddenError extends AppError {
  readonly code = 'E4031';
  readonly status = 403;
}
export class NotFoundError extends AppError {
  readonly code = 'E4041';
  readonly status = 404;
}
/** The request (its body) did not arrive whole within `server.read_timeout`. */
export class RequestTimeoutError extends AppError {
  readonly code = 'E4081';
  readonly status = 408;
}
export class TooManyRequestsError extends AppError {
  readonly code = 'E4291';
  readonly status = 429;
}
/** The request's header block is larger than the server reads. */
export class HeadersTooLargeError extends AppError {
  readonly code = 'E4311';
  readonly status = 431;
}
export class InternalError extends AppError {
  readonly code = 'E5001';
  readonly status = 500;
}
export class UnavailableError extends AppError {
  readonly code = 'E5031';
  readonly status = 503;
}

/** A validation failure that names the field: `page_size: must be at most 100`. */
export function fieldError(field: string, reason: MessageKey, params: MessageParams = {}): BadRequestError {
  return new BadRequestError('validation.field', { field, reason: translate(reason, params) });
}
