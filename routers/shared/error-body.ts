import { TRPCError } from '@trpc/server';
import { ZodError } from 'zod';
import { AppError, BadRequestError, InternalError, NotFoundError } from '../../lib/errors.ts';
import { describeZodIssue } from './zod-messages.ts';

export interface ErrorBody {
  status: number;
  code: string;
  err: string;
}

/** Maps anything thrown to the envelope's code, status and a message safe to show (no internals). */
export function toErrorBody(error: unknown, locale: string): ErrorBody {
  let cause: unknown = error;
  if (error instanceof TRPCError) {
    cause = error.cause ?? error;
    if (cause === error && error.code === 'NOT_FOUND') cause = new NotFoundError('error.route_not_found');
    if (cause === error && error.code === 'PARSE_ERROR') cause = new BadRequestError('error.invalid_json');
    if (cause === error && error.code === 'BAD_REQUEST') cause = new BadRequestError('error.bad_request');
  }
  if (cause instanceof ZodError) {
    const issue = cause.issues[0];
    return { status: 400, code: 'E4001', err: issue ? describeZodIssue(issue, locale) : new BadRequestError('error.bad_request').localized(locale) };
  }
  const app = cause instanceof AppError ? cause : new InternalError('error.internal');
  return { status: app.status, code: app.code, err: app.localized(locale) };
}
