import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { RequestHooks } from './request-hooks.ts';
import { requestDeadlines } from './request-deadlines.ts';
import { bodyPending } from './unread-body.ts';

/**
 * Calls `onTimeout` for a request whose body has not arrived whole `timeoutMs` after its headers
 * (`server.read_timeout`) and is not answered yet; the answer closes the connection (unread-body.ts). Node's
 * own requestTimeout is checked only every 30 s, and a body sent a byte a second held its connection 81 s
 * against a 10 s limit.
 */
export function enforceReadTimeout(
  app: FastifyInstance,
  timeoutMs: number,
  onTimeout: (request: FastifyRequest, reply: FastifyReply) => void,
): RequestHooks {
  return requestDeadlines(app, timeoutMs, (request, reply) => {
    if (bodyPending(request) && !reply.sent && !reply.raw.headersSent) onTimeout(request, reply);
  });
}
