import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/** What a concern does at the start and at the end of every request; neither may fail or wait. */
export interface RequestHooks {
  onRequest?(request: FastifyRequest, reply: FastifyReply): void;
  onResponse?(request: FastifyRequest, reply: FastifyReply): void;
}

export type Proceed = (request: FastifyRequest, reply: FastifyReply, done: () => void) => void;

/**
 * The per-request work of several concerns as one onRequest and one onResponse hook: each hook costs a turn
 * of fastify's hook runner on every request. `enter` calls `proceed` inside the request's trace context, so
 * that the onRequest parts and everything after them log with the request's trace id.
 */
export function addRequestHooks(
  app: FastifyInstance,
  hooks: RequestHooks[],
  enter: (request: FastifyRequest, reply: FastifyReply, done: () => void, proceed: Proceed) => void,
): void {
  const starts = hooks.flatMap((h) => (h.onRequest ? [h.onRequest] : []));
  const ends = hooks.flatMap((h) => (h.onResponse ? [h.onResponse] : []));
  const proceed: Proceed = (request, reply, done) => {
    for (const start of starts) start(request, reply);
    done();
  };
  app.addHook('onRequest', (request, reply, done) => enter(request, reply, done, proceed));
  if (ends.length === 0) return;
  app.addHook('onResponse', (request, reply, done) => {
    for (const end of ends) end(request, reply);
    done();
  });
}
