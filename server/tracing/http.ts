import { context, SpanKind, SpanStatusCode, trace, type Context, type Span } from '@opentelemetry/api';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Tracing } from './index.ts';

interface RequestTrace {
  /** Absent when nothing is exported: the context then only carries the trace id. */
  span?: Span;
  ctx: Context;
}

const traces = new WeakMap<FastifyRequest, RequestTrace>();

/** The trace id of a request (there is one whether or not tracing exports anything). */
export function traceIdOf(request: FastifyRequest): string | undefined {
  const t = traces.get(request);
  return t && trace.getSpanContext(t.ctx)?.traceId;
}

/** `GET /api/users/:id`; tRPC's single route is named by its procedure, a bounded set like route templates. */
function spanName(request: FastifyRequest): string {
  const template = request.routeOptions.url;
  if (!template) return request.method;
  if (template.startsWith('/trpc/')) return `${request.method} /trpc/${(request.params as { path?: string }).path ?? ''}`;
  return `${request.method} ${template}`;
}

function startServerSpan(tracing: Tracing, request: FastifyRequest, parent: Context): RequestTrace {
  const span = tracing.tracer.startSpan(
    spanName(request),
    { kind: SpanKind.SERVER, attributes: { 'http.request.method': request.method, 'url.path': request.url.split('?', 1)[0]!, 'http.route': request.routeOptions.url ?? '' } },
    parent,
  );
  return { span, ctx: trace.setSpan(parent, span) };
}

/**
 * A server span per request, child of the caller's traceparent. Its context is entered in preHandler, after the
 * body is read: the body's stream events run outside whatever context onRequest entered. Without an exporter no
 * span is made at all, only the context holding the request's trace id for logs and error answers, and no
 * onResponse hook runs: this is the path of every request on installs that export nothing.
 */
export function traceRequests(app: FastifyInstance, tracing: Tracing): void {
  app.addHook('onRequest', (request, _reply, done) => {
    const parent = tracing.incoming(request.headers);
    const t = tracing.enabled ? startServerSpan(tracing, request, parent) : { ctx: parent };
    traces.set(request, t);
    context.with(t.ctx, done);
  });
  app.addHook('preHandler', (request, _reply, done) => {
    const t = traces.get(request);
    if (t) context.with(t.ctx, done);
    else done();
  });
  if (!tracing.enabled) return;
  app.addHook('onResponse', (request, reply, done) => {
    const span = traces.get(request)?.span;
    if (span) {
      span.setAttribute('http.response.status_code', reply.statusCode);
      if (reply.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    }
    done();
  });
}
