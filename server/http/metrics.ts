import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client';

/** One registry per console (tests run several in one process); the engine adds its task metrics to it. */
export function createMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return {
    registry,
    httpRequests: new Counter({ name: 'http_requests_total', help: 'HTTP requests by route template', labelNames: ['method', 'route', 'status'], registers: [registry] }),
    httpDuration: new Histogram({
      name: 'http_request_duration_seconds',
      help: 'HTTP request duration by route template',
      labelNames: ['method', 'route'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: [registry],
    }),
    mailSent: new Counter({ name: 'mail_sent_total', help: 'System emails by template and result (sent, failed)', labelNames: ['template', 'result'], registers: [registry] }),
    auditWriteFailures: new Counter({ name: 'audit_write_failures_total', help: 'Audit records that could not be written', registers: [registry] }),
  };
}
export type Metrics = ReturnType<typeof createMetrics>;

/** Compares in constant time (digests, so lengths do not show either). */
function sameSecret(given: string, expected: string): boolean {
  const digest = (v: string) => createHash('sha256').update(v).digest();
  return timingSafeEqual(digest(given), digest(expected));
}

/** Counts and times every request by its route template, and serves `/metrics` (behind `metrics.token` when set). */
export function registerMetrics(app: FastifyInstance, metrics: Metrics, token: string): void {
  // Label children are looked up once per (method, route, status): prom-client hashes label objects on every call.
  const counters = new Map<string, Counter.Internal>();
  const timers = new Map<string, Histogram.Internal<string>>();
  app.addHook('onResponse', (request, reply, done) => {
    const method = request.method;
    const route = request.routeOptions.url ?? 'unmatched';
    const status = reply.statusCode;
    const key = `${method} ${route}`;
    let timer = timers.get(key);
    if (!timer) timers.set(key, (timer = metrics.httpDuration.labels(method, route)));
    let counter = counters.get(`${key} ${status}`);
    if (!counter) counters.set(`${key} ${status}`, (counter = metrics.httpRequests.labels(method, route, String(status))));
    timer.observe(reply.elapsedTime / 1000);
    counter.inc();
    done();
  });
  app.get('/metrics', async (request, reply) => {
    if (token && !sameSecret(request.headers.authorization ?? '', `Bearer ${token}`)) return reply.code(401).type('text/plain').send('unauthorized\n');
    return reply.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });
}
