import type { FastifyInstance, FastifyRequest } from 'fastify';

/**
 * Whether the request announced a body that has neither arrived whole nor been read to its end (an injected
 * request, `inject()`, only says the latter).
 */
export function bodyPending(request: FastifyRequest): boolean {
  const { headers, raw } = request;
  return (
    !(raw.complete || raw.readableEnded) &&
    (headers['transfer-encoding'] !== undefined || Number(headers['content-length']) > 0)
  );
}

/**
 * An answer sent before the request's body arrived whole (a body over `server.max_upload_size`, a type nothing
 * reads, a read or write timeout, a route that ignores bodies) closes the connection. Kept open, Node would
 * read and discard the rest of the body to reach the connection's next request: as much as the client sends.
 */
export function closeOnUnreadBody(app: FastifyInstance): void {
  app.addHook('onSend', (request, reply, payload, done) => {
    if (bodyPending(request)) {
      reply.header('connection', 'close');
      request.raw.pause();
    }
    done(null, payload);
  });
}
