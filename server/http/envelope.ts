import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { AppError, BadRequestError, InternalError, NotFoundError } from '../../lib/errors.ts';
import { pickLocale } from '../../lib/messages/index.ts';
import { toErrorBody } from '../../routers/common/error-body.ts';
import { traceIdOf } from '../tracing/http.ts';

/** Fastify's own failures (parsing, limits) expressed as the service's errors. */
function fromFastify(error: FastifyError, bodyLimit: number): unknown {
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new BadRequestError('error.body_too_large', { limit: bodyLimit });
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new BadRequestError('error.unsupported_media_type');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new BadRequestError('error.invalid_json');
  }
  if (error instanceof SyntaxError) return new BadRequestError('error.invalid_json');
  if (
    typeof error.statusCode === 'number' &&
    error.statusCode >= 400 &&
    error.statusCode < 500 &&
    !(error instanceof AppError)
  ) {
    return error.statusCode === 404
      ? new NotFoundError('error.route_not_found')
      : new BadRequestError('error.bad_request');
  }
  return error;
}

/** Sends the error envelope `{code, err}`; internal failures are logged here and answered without details. */
export function sendError(
  error: unknown,
  request: FastifyRequest,
  reply: FastifyReply,
  logger: Logger,
  bodyLimit: number,
): FastifyReply {
  const mapped = fromFastify(error as FastifyError, bodyLimit);
  const locale = pickLocale(request.headers['accept-language'] as string | undefined);
  const body = toErrorBody(mapped, locale);
  const traceId = traceIdOf(request);
  if (body.status >= 500) {
    const cause = mapped instanceof InternalError ? mapped : ((error as { cause?: unknown }).cause ?? error);
    logger.error(
      { err: cause, method: request.method, url: request.routeOptions.url ?? request.url, trace_id: traceId },
      'request failed',
    );
  }
  return reply.code(body.status).type('application/json').send({ code: body.code, err: body.err, trace_id: traceId });
}
