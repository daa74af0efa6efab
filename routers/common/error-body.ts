import { TRPCError } from '@trpc/server';
import { ZodError } from 'zod';
import { isDatabaseUnavailable } from '../../db/dialects/index.ts';
import { AppError, BadRequestError, InternalError, NotFoundError, UnavailableError } from '../../lib/errors.ts';
import { describeZodIssue } from './zod-messages.ts';

export interface ErrorBody {
  status: number;
  code: string;
  err: string;
}

/**
 * The service's error for a failure tRPC itself detected before any procedure code ran (unknown path, wrong
 * method, unreadable input); its cause, if any, is a library error that must not reach the answer.
 */
function fromTrpc(error: TRPCError): AppError | undefined {
  switch (error.code) {
    case 'NOT_FOUND':
    case 'METHOD_NOT_SUPPORTED':
      return new NotFoundError('error.route_not_found');
    case 'PARSE_ERROR':
      return new BadRequestError('error.invalid_json');
    case 'BAD_REQUEST':
      // tRPC reads the input lazily and reports a JSON.parse failure as BAD_REQUEST caused by the SyntaxError.
      return new BadRequestError(error.cause instanceof SyntaxError ? 'error.invalid_json' : 'error.bad_request');
    case 'UNSUPPORTED_MEDIA_TYPE':
      return new BadRequestError('error.unsupported_media_type');
    case 'PAYLOAD_TOO_LARGE':
      return new BadRequestError('error.bad_request');
    default:
      return undefined;
  }
}

/** Maps anything thrown to the envelope's code, status and a message safe to show (no internals). */
export function toErrorBody(error: unknown, locale: string): ErrorBody {
  let cause: unknown = error;
  if (error instanceof TRPCError) {
    cause = error.cause ?? error;
    if (!(cause instanceof AppError) && !(cause instanceof ZodError)) cause = fromTrpc(error) ?? cause;
  }
  // A zod failure is the caller's fault only on input (BAD_REQUEST); on output it is ours: 500, no details.
  if (cause instanceof ZodError && error instanceof TRPCError && error.code !== 'BAD_REQUEST')
    cause = new InternalError('error.internal');
  if (cause instanceof ZodError) {
    const issue = cause.issues[0];
    return {
      status: 400,
      code: 'E4001',
      err: issue ? describeZodIssue(issue, locale) : new BadRequestError('error.bad_request').localized(locale),
    };
  }
  // The database down or restarting is no fault of the request: 503, to be tried again, never a 500.
  if (!(cause instanceof AppError) && isDatabaseUnavailable(cause))
    cause = new UnavailableError('error.database_unavailable');
  const app = cause instanceof AppError ? cause : new InternalError('error.internal');
  return { status: app.status, code: app.code, err: app.localized(locale) };
}
