import { context, SpanKind, SpanStatusCode, trace, type Context, type Span } from '@opentelemetry/api';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Tracing } from './index.ts';

interface RequestTrace {
  span: Span;
  ctx: Context;
}

const traces = new WeakMap<FastifyRequest, RequestTrace>();

/** The trace id of a request (there is one whether or not tracing exports anything). */
export function traceIdOf(request: FastifyRequest): string | undefined {
  return traces.get(request)?.span.spanContext().traceId;
}

/** `GET /api/users/:id`; tRPC's single route is named by its procedure, a bounded set like route templates. */
function spanName(request: FastifyRequest): string {
  const template = request.routeOptions.url;
  if (!template) return request.method;
  if (template.startsWith('/trpc/')) return `${request.method} /trpc/${(request.params as { path?: string }).path ?? ''}`;
  return `${request.method} ${template}`;
}

/**
 * A server span per request, child of the caller's traceparent. Its context is entered in preHandler, after the
 * body is read: the body's stream events run outside whatever context onRequest entered.
 */
export function traceRequests(app: FastifyInstance, tracing: Tracing): void {
  app.addHook('onRequest', (request, _reply, done) => {
    const parent = tracing.incoming(request.headers);
    const span = tracing.tracer.startSpan(
      spanName(request),
      { kind: SpanKind.SERVER, attributes: { 'http.request.method': request.method, 'url.path': request.url.split('?', 1)[0]!, 'http.route': request.routeOptions.url ?? '' } },
      parent,
    );
    const ctx = trace.setSpan(parent, span);
    traces.set(request, { span, ctx });
    context.with(ctx, done);
  });
  app.addHook('preHandler', (request, _reply, done) => {
    const t = traces.get(request);
    if (t) context.with(t.ctx, done);
    else done();
  });
  app.addHook('onResponse', (request, reply, done) => {
    const t = traces.get(request);
    if (t) {
      t.span.setAttribute('http.response.status_code', reply.statusCode);
      if (reply.statusCode >= 500) t.span.setStatus({ code: SpanStatusCode.ERROR });
      t.span.end();
    }
    done();
  });
}
