import type { FastifyRequest } from 'fastify';
import { pickLocale } from '../../lib/messages/index.ts';
import { traceIdOf } from '../tracing/http.ts';
import { identifyRequest } from './access-log.ts';
import { showLimit } from './rate-limit.ts';
import type { RequestInfo } from '../../routers/common/context.ts';

/** `X-Scope-OrgID` as sent; an empty one (a client with no organization selected) means none. */
function orgHeaderOf(value: string | string[] | undefined): string | undefined {
  const text = typeof value === 'string' ? value.trim() : undefined;
  return text || undefined;
}

/** What procedures may know of the HTTP request; `request.ip` honours `server.trust_proxy`. */
export function requestInfo(request: FastifyRequest): RequestInfo {
  const h = request.headers;
  return {
    ip: request.ip,
    userAgent: typeof h['user-agent'] === 'string' ? h['user-agent'] : '',
    locale: pickLocale(typeof h['accept-language'] === 'string' ? h['accept-language'] : undefined),
    authorization: typeof h.authorization === 'string' ? h.authorization : undefined,
    orgHeader: orgHeaderOf(h['x-scope-orgid']),
    traceId: traceIdOf(request),
    noCache: typeof h['cache-control'] === 'string' && /(^|[\s,])no-cache([\s,]|$)/i.test(h['cache-control']),
    counted: (hit) => showLimit(request, hit),
    identified: (userId) => identifyRequest(request, userId),
  };
}
