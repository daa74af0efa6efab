import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { RequestHooks } from './request-hooks.ts';

/**
 * Calls `onTimeout` for requests whose answer has not started after `timeoutMs` (`server.write_timeout`). An
 * answer already streaming (a large download to a slow client) is left to finish. One sweeper timer serves
 * every request: requests start in order, so the oldest sit at the front of the map.
 */
export function enforceWriteTimeout(
  app: FastifyInstance,
  timeoutMs: number,
  onTimeout: (request: FastifyRequest, reply: FastifyReply) => void,
): RequestHooks {
  if (timeoutMs <= 0) return {};
  const inFlight = new Map<FastifyRequest, { reply: FastifyReply; deadline: number }>();
  const sweep = setInterval(
    () => {
      const now = Date.now();
      for (const [request, entry] of inFlight) {
        if (entry.deadline > now) break;
        inFlight.delete(request);
        if (!entry.reply.sent && !entry.reply.raw.headersSent) onTimeout(request, entry.reply);
      }
    },
    Math.max(10, Math.min(1000, timeoutMs / 4)),
  );
  sweep.unref();
  app.addHook('onClose', (_instance, done) => {
    clearInterval(sweep);
    done();
  });
  return {
    onRequest(request, reply) {
      inFlight.set(request, { reply, deadline: Date.now() + timeoutMs });
    },
    onResponse(request) {
      inFlight.delete(request);
    },
  };
}
