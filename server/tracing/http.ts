import { context, SpanKind, SpanStatusCode, trace, type Context, type Span } from '@opentelemetry/api';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Proceed, RequestHooks } from '../http/request-hooks.ts';
import type { Tracing } from './index.ts';

interface RequestTrace {
  /** Absent when nothing is exported: the context then only carries the trace id. */
  span?: Span;
  ctx: Context;
}

// A request's trace rides on the request itself (a decoration, so every request has the same shape): a
// WeakMap entry per request cost nearly a microsecond.
const kTrace = Symbol('trace');
type Traced = FastifyRequest & { [kTrace]: RequestTrace | null };
const traceOf = (request: FastifyRequest) => (request as Traced)[kTrace] ?? undefined;

/** The trace id of a request (there is one whether or not tracing exports anything). */
export function traceIdOf(request: FastifyRequest): string | undefined {
  const t = traceOf(request);
  return t && trace.getSpanContext(t.ctx)?.traceId;
}

/** `GET /api/users/:id`, `GET /trpc/users.list` (each procedure has its route; batches share `/trpc/:path`). */
function spanName(request: FastifyRequest): string {
  const template = request.routeOptions.url;
  return template ? `${request.method} ${template}` : request.method;
}

function startServerSpan(tracing: Tracing, request: FastifyRequest, parent: Context): RequestTrace {
  const span = tracing.tracer.startSpan(
    spanName(request),
    {
      kind: SpanKind.SERVER,
      attributes: {
        'http.request.method': request.method,
        'url.path': request.url.split('?', 1)[0]!,
        'http.route': request.routeOptions.url ?? '',
      },
    },
    parent,
  );
  return { span, ctx: trace.setSpan(parent, span) };
}

// Fastify reads no body for these; their whole request runs inside what onRequest entered.
const BODYLESS = new Set(['GET', 'HEAD', 'TRACE']);

/**
 * A server span per request, child of the caller's traceparent. Its context is entered at the start of the
 * request (`enter`, around the rest of the onRequest hook) and again once the body is read on routes that take one:
 * the body's stream events run outside whatever context onRequest entered. Without an exporter no span is
 * made at all, only the context holding the request's trace id for logs and error answers, and there is no
 * work at the end of the request: this is the path of every request on installs that export nothing.
 */
export function traceRequests(
  app: FastifyInstance,
  tracing: Tracing,
): RequestHooks & { enter(request: FastifyRequest, reply: FastifyReply, done: () => void, proceed: Proceed): void } {
  app.decorateRequest(kTrace, null);
  const reenter = (request: FastifyRequest, _reply: unknown, done: () => void) => {
    const t = traceOf(request);
    if (t) context.with(t.ctx, done);
    else done();
  };
  // Before validation, so that every preHandler (the rate limit's too) runs in the request's context.
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    if (methods.every((m) => BODYLESS.has(m))) return;
    route.preValidation = [
      reenter,
      ...(route.preValidation === undefined
        ? []
        : Array.isArray(route.preValidation)
          ? route.preValidation
          : [route.preValidation]),
    ];
  });
  return {
    enter(request, reply, done, proceed) {
      const parent = tracing.incoming(request.headers);
      const t = tracing.enabled ? startServerSpan(tracing, request, parent) : { ctx: parent };
      (request as Traced)[kTrace] = t;
      context.with(t.ctx, proceed, undefined, request, reply, done);
    },
    onResponse: tracing.enabled
      ? (request, reply) => {
          const span = traceOf(request)?.span;
          if (!span) return;
          span.setAttribute('http.response.status_code', reply.statusCode);
          if (reply.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
          span.end();
        }
      : undefined,
  };
}
