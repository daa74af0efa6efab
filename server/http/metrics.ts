import type { FastifyInstance } from 'fastify';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { sameSecret } from '../../lib/same-secret.ts';
import type { RequestHooks } from './request-hooks.ts';

/** The requests of one (method, route) since prom-client last heard of them. */
interface RouteTally {
  method: string;
  route: string;
  seconds: number[];
  statuses: Map<number, number>;
}

// Bounds what waits for a scrape: a route's tally is handed over once it holds this many requests.
const TALLY_LIMIT = 4096;

/**
 * Requests are tallied in plain arrays and handed to prom-client when the metrics are read (its `collect`),
 * or when a tally fills up: prom-client validates and hashes the label set on every observe and inc, a
 * measurable part of a cached request. What a scrape shows is the same.
 */
function requestTally(requests: Counter, duration: Histogram) {
  const routes = new Map<string, Map<string, RouteTally>>();
  const handOver = (t: RouteTally) => {
    const timer = duration.labels(t.method, t.route);
    for (const s of t.seconds) timer.observe(s);
    for (const [status, n] of t.statuses) requests.inc({ method: t.method, route: t.route, status: String(status) }, n);
    t.seconds.length = 0;
    t.statuses.clear();
  };
  return {
    record(method: string, route: string, status: number, seconds: number): void {
      let byMethod = routes.get(route);
      if (!byMethod) routes.set(route, (byMethod = new Map()));
      let t = byMethod.get(method);
      if (!t) byMethod.set(method, (t = { method, route, seconds: [], statuses: new Map() }));
      t.seconds.push(seconds);
      t.statuses.set(status, (t.statuses.get(status) ?? 0) + 1);
      if (t.seconds.length >= TALLY_LIMIT) handOver(t);
    },
    handOver(): void {
      for (const byMethod of routes.values()) for (const t of byMethod.values()) if (t.seconds.length > 0) handOver(t);
    },
  };
}

/**
 * One registry per console (tests run several in one process); the engine adds its task metrics to it.
 * `console_build_info` is 1, its labels saying what runs: joined onto other series, it shows a rollout.
 */
export function createMetrics(version: string) {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  new Gauge({
    name: 'console_build_info',
    help: 'The version of Console and of Node.js this process runs (always 1)',
    labelNames: ['version', 'node_version'],
    registers: [registry],
  }).set({ version, node_version: process.version }, 1);
  const collect = () => tally.handOver();
  const httpRequests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests by route template',
    labelNames: ['method', 'route', 'status'],
    registers: [registry],
    collect,
  });
  const httpDuration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request duration by route template',
    labelNames: ['method', 'route'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
    collect,
  });
  const tally = requestTally(httpRequests, httpDuration);
  return {
    registry,
    /** Counts and times one answered request (by route template). */
    recordRequest: tally.record,
    mailSent: new Counter({
      name: 'mail_sent_total',
      help: 'System emails by template and result (sent, failed)',
      labelNames: ['template', 'result'],
      registers: [registry],
    }),
    auditWriteFailures: new Counter({
      name: 'audit_write_failures_total',
      help: 'Audit records that could not be written',
      registers: [registry],
    }),
    auditVerifiedSeq: new Gauge({
      name: 'audit_chain_verified_seq',
      help: 'The seq up to which the last verification on this node found the audit chain intact',
      registers: [registry],
    }),
    auditChainIntact: new Gauge({
      name: 'audit_chain_intact',
      help: 'Whether the last verification on this node found the audit chain intact (1) or broken (0)',
      registers: [registry],
    }),
  };
}
export type Metrics = ReturnType<typeof createMetrics>;

/**
 * Counts and times every request by its route template (the returned hooks), and serves `/metrics` (behind
 * `metrics.token` when set).
 */
export function registerMetrics(app: FastifyInstance, metrics: Metrics, token: string): RequestHooks {
  app.get('/metrics', async (request, reply) => {
    if (token && !sameSecret(request.headers.authorization ?? '', `Bearer ${token}`))
      return reply.code(401).type('text/plain').send('unauthorized\n');
    return reply.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });
  return {
    onResponse(request, reply) {
      metrics.recordRequest(
        request.method,
        request.routeOptions.url ?? 'unmatched',
        reply.statusCode,
        reply.elapsedTime / 1000,
      );
    },
  };
}
