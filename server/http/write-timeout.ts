import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { RequestHooks } from './request-hooks.ts';
import { requestDeadlines } from './request-deadlines.ts';

/**
 * Calls `onTimeout` for requests whose answer has not started after `timeoutMs` (`server.write_timeout`). An
 * answer already streaming (a large download to a slow client) is left to finish.
 */
export function enforceWriteTimeout(
  app: FastifyInstance,
  timeoutMs: number,
  onTimeout: (request: FastifyRequest, reply: FastifyReply) => void,
): RequestHooks {
  return requestDeadlines(app, timeoutMs, (request, reply) => {
    if (!reply.sent && !reply.raw.headersSent) onTimeout(request, reply);
  });
}
