import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { RequestHooks } from './request-hooks.ts';

/**
 * Calls `onExpired` for each request whose onResponse has not run `timeoutMs` after it started. One sweeper
 * timer serves every request: requests start in order, so the oldest sit at the front of the map.
 */
export function requestDeadlines(
  app: FastifyInstance,
  timeoutMs: number,
  onExpired: (request: FastifyRequest, reply: FastifyReply) => void,
): RequestHooks {
  if (timeoutMs <= 0) return {};
  const inFlight = new Map<FastifyRequest, { reply: FastifyReply; deadline: number }>();
  const sweep = setInterval(
    () => {
      const now = Date.now();
      for (const [request, entry] of inFlight) {
        if (entry.deadline > now) break;
        inFlight.delete(request);
        onExpired(request, entry.reply);
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
