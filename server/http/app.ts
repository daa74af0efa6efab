import cors from '@fastify/cors';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { NotFoundError, RequestTimeoutError, UnavailableError } from '../../lib/errors.ts';
import { jsonBodyRefusal, MAX_JSON_DEPTH } from '../../lib/json-limits.ts';
import { appRouter } from '../../routers/app-router.ts';
import type { Context } from '../../routers/common/context.ts';
import { toErrorBody } from '../../routers/common/error-body.ts';
import type { Services } from '../../routers/common/services.ts';
import type { ConsoleConfig } from '../config/schema.ts';
import { traceRequests } from '../tracing/http.ts';
import type { Tracing } from '../tracing/index.ts';
import { accessLog } from './access-log.ts';
import { answerClientError } from './client-errors.ts';
import { drainConnections, type Drain } from './draining.ts';
import { sendError } from './envelope.ts';
import { registerFileRoutes } from './files.ts';
import { idempotencyOf } from './idempotency-header.ts';
import { registerMetrics, type Metrics } from './metrics.ts';
import { registerOAuthRoutes } from './oauth-routes.ts';
import { proxyPrefix } from './proxy-prefix.ts';
import { loadOpenApiDocument } from './openapi-document.ts';
import { enforceReadTimeout } from './read-timeout.ts';
import { requestInfo } from './request-info.ts';
import { registerRateLimits } from './rate-limit.ts';
import { registerRestRoutes } from './rest-adapter.ts';
import { registerTaskEventRoutes } from './task-events-route.ts';
import { registerAuditExportRoute } from './audit-export-route.ts';
import { registerTrpcRoutes } from './trpc-routes.ts';
import { addRequestHooks } from './request-hooks.ts';
import { securityHeaders } from './security-headers.ts';
import { registerWebConsole } from './web-console.ts';
import { closeOnUnreadBody } from './unread-body.ts';
import { enforceWriteTimeout } from './write-timeout.ts';

export interface HttpDeps {
  config: ConsoleConfig;
  services: Services;
  /** Whether the database is reachable and migrated (`/readyz`). */
  ready: () => Promise<boolean>;
  logger: Logger;
  metrics: Metrics;
  tracing: Tracing;
  version: string;
}

export async function buildHttpApp({
  config,
  services,
  ready,
  logger,
  metrics,
  tracing,
  version,
}: HttpDeps): Promise<{ app: FastifyInstance; drain: Drain }> {
  const s = config.server;
  const app = Fastify({
    bodyLimit: s.max_upload_size,
    requestTimeout: s.read_timeout,
    trustProxy: s.trust_proxy,
    // Shutdown is drainOnClose's (draining.ts): fastify's own would drop requests sent but not yet read, and
    // answer 503 with its own body.
    forceCloseConnections: false,
    return503OnClosing: false,
    // A malformed URL (bad percent-escape) fails before routing; it gets the envelope like every other error.
    frameworkErrors: (error, request, reply) => sendError(error, request, reply, logger, s.max_upload_size),
    clientErrorHandler: answerClientError,
  });
  app.server.maxConnections = s.max_connections;
  const createContext = (request: FastifyRequest, reply: FastifyReply, calls = 1): Context => {
    const req = requestInfo(request);
    req.idempotency = idempotencyOf(request, reply, calls, s.write_timeout);
    return { services, req };
  };
  // At the root, so that fastify's own failures outside /api (a body over the limit on /trpc, an unknown
  // path) are envelopes too, never fastify's default body with its internal error codes.
  app.setErrorHandler((error, request, reply) => sendError(error, request, reply, logger, s.max_upload_size));
  app.setNotFoundHandler((request, reply) =>
    sendError(new NotFoundError('error.route_not_found'), request, reply, logger, s.max_upload_size),
  );

  const traced = traceRequests(app, tracing);
  const timeout = enforceWriteTimeout(app, s.write_timeout, (request, reply) =>
    sendError(new UnavailableError('error.request_timeout'), request, reply, logger, s.max_upload_size),
  );
  const readTimeout = enforceReadTimeout(app, s.read_timeout, (request, reply) =>
    sendError(new RequestTimeoutError('error.read_timeout'), request, reply, logger, s.max_upload_size),
  );
  addRequestHooks(
    app,
    [
      securityHeaders,
      timeout,
      readTimeout,
      registerMetrics(app, metrics, config.metrics.token),
      traced,
      ...(config.log.access ? [accessLog(app, logger, { probes: config.log.access_probes })] : []),
    ],
    traced.enter,
  );
  closeOnUnreadBody(app);
  const drain = drainConnections(app, (request, reply) =>
    sendError(new UnavailableError('error.shutting_down'), request, reply, logger, s.max_upload_size),
  );
  if (config.rate_limit.enabled) {
    registerRateLimits(app, {
      globalPerMinute: config.rate_limit.global_per_minute,
      subjectOf: (authorization) => services.auth.subjectOf(authorization),
    });
  }
  await app.register(cors, {
    origin: s.cors_origins.includes('*') ? '*' : s.cors_origins,
    // Last-Event-ID: a client resuming a live task event stream (README "Live task events").
    allowedHeaders: [
      'Authorization',
      'Content-Type',
      'Accept-Language',
      'X-Scope-OrgID',
      'Idempotency-Key',
      'Last-Event-ID',
    ],
    exposedHeaders: ['Idempotent-Replayed'],
    methods: ['GET', 'POST', 'PUT', 'DELETE', 'OPTIONS'],
    credentials: false,
  });
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_request, reply) => {
    if (drain.draining) return reply.code(503).send({ status: 'draining' });
    const isReady = await ready();
    return reply.code(isReady ? 200 : 503).send({ status: isReady ? 'ready' : 'unavailable' });
  });

  const document = await loadOpenApiDocument(version, `${s.root_url.replace(/\/$/, '')}/api`);

  await app.register(
    async (api) => {
      // A body-less POST (logout, unlock) is fine with or without a JSON content type.
      // Fastify's own parser rejects `__proto__` / `constructor` keys (prototype poisoning).
      const parseJson = api.getDefaultJsonParser('error', 'error');
      api.removeContentTypeParser('application/json');
      api.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
        const text = body as string;
        if (text.trim() === '') return done(null, undefined);
        // Refused before it is parsed, so nothing that runs before the procedure's own check walks it either.
        const refusal = jsonBodyRefusal(text, MAX_JSON_DEPTH);
        if (refusal) return done(refusal, undefined);
        parseJson(request, text, done);
      });
      api.get('/openapi.json', async () => document);
      registerRestRoutes(api, appRouter, createContext);
      registerFileRoutes(api, services);
      registerTaskEventRoutes(api, services);
      registerAuditExportRoute(api, services);
      registerOAuthRoutes(api, services);
    },
    { prefix: '/api' },
  );

  await app.register(
    async (trpc) =>
      registerTrpcRoutes(trpc, {
        router: appRouter,
        createContext,
        bodyLimit: s.max_upload_size,
        // tRPC calls every error a procedure throws INTERNAL_SERVER_ERROR; a client's mistake (a wrong password,
        // bad input) is not a server failure, here as on /api (envelope.ts).
        onError: ({ error }) => {
          if (toErrorBody(error, 'en').status >= 500)
            logger.error({ err: error.cause ?? error }, 'trpc request failed');
        },
      }),
    { prefix: '/trpc' },
  );

  await app.register(swagger, { mode: 'static', specification: { document: document as never } });
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    // Its page at /docs names its assets by absolute path: behind a proxy's prefix they need it too.
    indexPrefix: proxyPrefix(s.root_url) || undefined,
    staticCSP: true,
    // Its default policy has upgrade-insecure-requests, which sends the page's own scripts to https:// when the
    // page is opened over plain http on anything but localhost, and leaves it blank.
    transformStaticCSP: (header) => header.replace(/\s*upgrade-insecure-requests;?/, ''),
    theme: { title: 'Console API' },
    // BaseLayout: without the explorer top bar, whose inline-SVG logo carries a <style> the CSP refuses.
    uiConfig: { persistAuthorization: true, deepLinking: true, layout: 'BaseLayout' },
  });
  if (config.web.enabled) registerWebConsole(app, { basePath: config.web.base_path, rootUrl: s.root_url, logger });
  return { app, drain };
}
