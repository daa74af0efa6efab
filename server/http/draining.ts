import type { FastifyInstance } from 'fastify';

/**
 * Once `close()` has begun, every answer ends its connection. Node closes only the connections idle at that
 * moment; one busy with a request would otherwise stay open after its answer (keep-alive) and hold shutdown
 * until `server.shutdown_timeout` cuts it.
 */
export function closeConnectionsWhenDraining(app: FastifyInstance): void {
  let closing = false;
  app.addHook('preClose', (done) => {
    closing = true;
    done();
  });
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (closing) reply.header('connection', 'close');
    done(null, payload);
  });
}
