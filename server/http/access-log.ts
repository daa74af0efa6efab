import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { unredacted } from '../logger.ts';
import { traceIdOf } from '../tracing/http.ts';
import type { RequestHooks } from './request-hooks.ts';

// What the access line needs that only later steps learn: who the caller was, and a streamed body's size.
const kUser = Symbol('accessUser');
const kStreamed = Symbol('accessStreamed');
type Logged = FastifyRequest & { [kUser]: string | null; [kStreamed]: number | null };

/** Records the authenticated caller of a request for its access line (called once the token checked out). */
export function identifyRequest(request: FastifyRequest, userId: string): void {
  (request as Logged)[kUser] = userId;
}

// Orchestrators and load balancers ask several times a minute; their lines would drown the real traffic.
const PROBES = new Set(['/healthz', '/readyz']);

export interface AccessLogOptions {
  probes: boolean;
}

/**
 * One `info` line per answered request: method, route pattern (never the URL, which can carry a signed link's
 * signature or an OAuth code), status, milliseconds, body bytes, trace id and user id. Headers are not logged.
 */
export function accessLog(app: FastifyInstance, logger: Logger, options: AccessLogOptions): RequestHooks {
  // Its fields are fixed and secret-free (the route pattern, never the URL), so the redaction pass is skipped.
  const lines = unredacted(logger);
  app.decorateRequest(kUser, null);
  app.decorateRequest(kStreamed, null);
  // A streamed answer (a download, a live event stream) has no length to read afterwards: its writes are counted.
  app.addHook('onSend', (request, reply, payload, done) => {
    if (isStream(payload) && !reply.hasHeader('content-length')) countWrites(request as Logged, reply);
    done(null, payload);
  });
  return {
    onResponse(request, reply) {
      const route = request.routeOptions.url;
      if (!options.probes && route !== undefined && PROBES.has(route)) return;
      const logged = request as Logged;
      lines.info(
        {
          method: request.method,
          route: route ?? 'unmatched',
          status: reply.statusCode,
          ms: Math.round(reply.elapsedTime * 100) / 100,
          bytes: logged[kStreamed] ?? (Number(reply.getHeader('content-length')) || 0),
          trace_id: traceIdOf(request),
          user_id: logged[kUser] ?? undefined,
        },
        'request',
      );
    },
  };
}

function isStream(payload: unknown): boolean {
  return typeof (payload as { pipe?: unknown } | null)?.pipe === 'function';
}

function countWrites(request: FastifyRequest & { [kStreamed]: number | null }, reply: FastifyReply): void {
  const raw = reply.raw;
  const write = raw.write;
  request[kStreamed] = 0;
  raw.write = function (this: typeof raw, chunk: unknown, ...rest: unknown[]) {
    request[kStreamed]! += typeof chunk === 'string' ? Buffer.byteLength(chunk) : ((chunk as Uint8Array)?.length ?? 0);
    return (write as (...args: unknown[]) => boolean).call(this, chunk, ...rest);
  } as typeof raw.write;
}
