import type { FastifyRequest } from 'fastify';
import { pickLocale } from '../../lib/messages/index.ts';
import { traceIdOf } from '../tracing/http.ts';
import type { RequestInfo } from '../../routers/shared/context.ts';

/** What procedures may know of the HTTP request; `request.ip` honours `server.trust_proxy`. */
export function requestInfo(request: FastifyRequest): RequestInfo {
  const h = request.headers;
  return {
    ip: request.ip,
    userAgent: typeof h['user-agent'] === 'string' ? h['user-agent'] : '',
    locale: pickLocale(typeof h['accept-language'] === 'string' ? h['accept-language'] : undefined),
    authorization: typeof h.authorization === 'string' ? h.authorization : undefined,
    traceId: traceIdOf(request),
  };
}
