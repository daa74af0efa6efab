import type { IncomingMessage, ServerResponse } from 'node:http';
import { Server as NetServer, type Socket } from 'node:net';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/**
 * One turn of the event loop that passes its I/O phase. A single setImmediate is not enough: set from an I/O
 * callback (a signal handler is one) it runs in the same turn, before the loop polls again.
 */
const turn = () => new Promise<void>((resolve) => setImmediate(() => setImmediate(resolve)));

/** Node's default listen backlog: the most connections the kernel holds for a listener. */
const BACKLOG = 511;

/**
 * Takes in the connections the kernel accepted while the event loop was busy. Node accepts one connection per
 * turn of the loop, so it turns until a turn brings none (a SIGTERM handled after a busy second found 65 of 300
 * connections still queued, and closing the listener reset them all).
 */
async function acceptQueued(server: NetServer): Promise<void> {
  let accepted = 0;
  const count = () => void accepted++;
  server.on('connection', count);
  try {
    for (let turns = 0; turns < BACKLOG; turns++) {
      const before = accepted;
      await turn();
      if (accepted === before) return;
    }
  } finally {
    server.off('connection', count);
  }
}

export interface Drain {
  /** From the start of `drain()` on; `/readyz` answers 503 then. */
  readonly draining: boolean;
  /** Resolves once no request is in flight and the idle connections are closed; the caller closes the app next. */
  drain(): Promise<void>;
}

/**
 * Graceful shutdown of the HTTP server. Not a preClose hook: fastify gives those `pluginTimeout` (10 s) at most,
 * while `server.shutdown_timeout` (see server/console.ts, which cuts what is left) may be longer. In order:
 * - connections the kernel accepted while the event loop was busy are taken in (`acceptQueued`), then the
 *   listener closes, so later connections are refused. `http.Server#close` is not used for this: it also closes every connection
 *   without a request in progress, which includes one whose request is sent but not read yet (a reset);
 * - requests in flight finish, and every answer given from now on ends its connection (`Connection: close`);
 * - the first request of a connection accepted before is served (it was sent before shutdown, perhaps not yet
 *   read while the event loop was busy); a further request on a kept-alive connection is refused (`refuse`,
 *   503 `E5031`), so a client sends it again elsewhere;
 * - once nothing is in flight, and the event loop has had turns to read what had arrived, the idle connections
 *   are closed.
 * Only connections of the listening server count; `inject()` requests have none.
 */
export function drainConnections(
  app: FastifyInstance,
  refuse: (request: FastifyRequest, reply: FastifyReply) => void,
): Drain {
  let draining = false;
  const inFlight = new Set<ServerResponse>();
  const used = new WeakSet<Socket>();
  const refused = new WeakSet<IncomingMessage>();
  let quiet: (() => void) | undefined;
  function ended(this: ServerResponse) {
    inFlight.delete(this);
    if (inFlight.size === 0) quiet?.();
  }
  // Before fastify's own listener, so that `used` still tells whether an earlier request came on the socket.
  app.server.prependListener('request', (req: IncomingMessage, res: ServerResponse) => {
    if (draining) {
      res.setHeader('connection', 'close');
      if (used.has(req.socket)) refused.add(req);
    }
    used.add(req.socket);
    inFlight.add(res);
    res.on('close', ended);
  });
  app.addHook('onRequest', (request, reply, done) => {
    if (draining && refused.has(request.raw)) return refuse(request, reply);
    done();
  });
  const drain = async () => {
    draining = true;
    for (const res of inFlight) if (!res.headersSent) res.setHeader('connection', 'close');
    if (!app.server.listening) return;
    await acceptQueued(app.server);
    NetServer.prototype.close.call(app.server);
    do {
      if (inFlight.size > 0) await new Promise<void>((resolve) => (quiet = resolve));
      await turn();
    } while (inFlight.size > 0);
    app.server.closeIdleConnections();
  };
  return {
    get draining() {
      return draining;
    },
    drain,
  };
}
