import cors from '@fastify/cors';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { fastifyTRPCPlugin } from '@trpc/server/adapters/fastify';
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { NotFoundError, UnavailableError } from '../../lib/errors.ts';
import { appRouter } from '../../routers/app-router.ts';
import type { Context } from '../../routers/shared/context.ts';
import type { Services } from '../../routers/shared/services.ts';
import { createCallerFactory } from '../../routers/shared/trpc.ts';
import type { ConsoleConfig } from '../config/schema.ts';
import { sendError } from './envelope.ts';
import { registerMetrics, type Metrics } from './metrics.ts';
import { buildOpenApiDocument } from './openapi.ts';
import { requestInfo } from './request-info.ts';
import { registerRestRoutes } from './rest-adapter.ts';
import { addSecurityHeaders } from './security-headers.ts';

export interface HttpDeps {
  config: ConsoleConfig;
  services: Services;
  logger: Logger;
  metrics: Metrics;
  version: string;
}

/** Answers E5031 when a handler has not answered within `server.write_timeout`. */
function enforceWriteTimeout(app: FastifyInstance, timeoutMs: number, logger: Logger, bodyLimit: number): void {
  if (timeoutMs <= 0) return;
  const timers = new WeakMap<FastifyRequest, NodeJS.Timeout>();
  app.addHook('onRequest', async (request, reply) => {
    timers.set(
      request,
      setTimeout(() => {
        if (reply.sent) return;
        if (reply.raw.headersSent) reply.raw.destroy();
        else sendError(new UnavailableError('error.request_timeout'), request, reply, logger, bodyLimit);
      }, timeoutMs),
    );
  });
  app.addHook('onResponse', async (request) => clearTimeout(timers.get(request)));
}

export async function buildHttpApp({ config, services, logger, metrics, version }: HttpDeps): Promise<FastifyInstance> {
  const s = config.server;
  const app = Fastify({
    bodyLimit: s.max_upload_size,
    requestTimeout: s.read_timeout,
    trustProxy: s.trust_proxy,
    forceCloseConnections: 'idle',
    return503OnClosing: true,
  });
  const createCaller = createCallerFactory(appRouter);
  const createContext = (request: FastifyRequest): Context => ({ services, req: requestInfo(request) });

  addSecurityHeaders(app);
  registerMetrics(app, metrics, config.metrics.token);
  enforceWriteTimeout(app, s.write_timeout, logger, s.max_upload_size);
  await app.register(cors, {
    origin: s.cors_origins === '*' ? '*' : s.cors_origins.split(',').map((o) => o.trim()),
    allowedHeaders: ['Authorization', 'Content-Type', 'Accept-Language', 'X-Scope-OrgID'],
    methods: ['GET', 'POST', 'PUT', 'DELETE', 'OPTIONS'],
    credentials: false,
  });
  app.addHook('onResponse', async (request, reply) => {
    logger.debug({ method: request.method, url: request.url, status: reply.statusCode, ms: Math.round(reply.elapsedTime) }, 'request');
  });

  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_request, reply) => {
    const ready = await services.db.ready();
    return reply.code(ready ? 200 : 503).send({ status: ready ? 'ready' : 'unavailable' });
  });

  const document = buildOpenApiDocument(appRouter, { version, baseUrl: `${s.root_url.replace(/\/$/, '')}/api` });

  await app.register(async (api) => {
    // A body-less POST (logout, unlock) is fine with or without a JSON content type.
    api.removeContentTypeParser('application/json');
    api.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
      const text = String(body);
      if (text.trim() === '') return done(null, undefined);
      try {
        done(null, JSON.parse(text));
      } catch {
        done(Object.assign(new SyntaxError('invalid json'), { statusCode: 400 }), undefined);
      }
    });
    api.setErrorHandler((error, request, reply) => sendError(error, request, reply, logger, s.max_upload_size));
    api.setNotFoundHandler((request, reply) => sendError(new NotFoundError('error.route_not_found'), request, reply, logger, s.max_upload_size));
    api.get('/openapi.json', async () => document);
    registerRestRoutes(api, appRouter, createCaller as never, createContext);
  }, { prefix: '/api' });

  await app.register(fastifyTRPCPlugin, {
    prefix: '/trpc',
    trpcOptions: {
      router: appRouter,
      createContext: ({ req }: { req: FastifyRequest }) => createContext(req),
      onError: ({ error }: { error: { code: string; cause?: unknown } }) => {
        if (error.code === 'INTERNAL_SERVER_ERROR') logger.error({ err: error.cause ?? error }, 'trpc request failed');
      },
    },
  });

  await app.register(swagger, { mode: 'static', specification: { document: document as never } });
  await app.register(swaggerUi, { routePrefix: '/docs', staticCSP: true, uiConfig: { persistAuthorization: true, deepLinking: true } });
  return app;
}
