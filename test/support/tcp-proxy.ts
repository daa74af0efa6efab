import { createConnection, createServer, type Socket } from 'node:net';

/**
 * `pass` forwards; `blackhole` is a partition that drops packets: nothing crosses, every socket stays open, a
 * new connection is accepted but never reaches the server (a client waits for its connect timeout), and what
 * was sent meanwhile arrives when the link heals, as TCP's retransmissions would deliver it; `reset` answers
 * every packet with RST, so both ends see their connections reset and new ones fail at once.
 */
export type LinkMode = 'pass' | 'blackhole' | 'reset';

export interface TcpProxy {
  readonly host: string;
  readonly port: number;
  readonly mode: LinkMode;
  set(mode: LinkMode): void;
  close(): Promise<void>;
}

/** One client connection and its connection to the server, each side's traffic held while the link is cut. */
class Link {
  upstream: Socket | undefined;
  /** What each side sent (a chunk, or null for its end) while nothing crosses. */
  private readonly held = new Map<Socket, (Buffer | null)[]>();

  constructor(
    readonly client: Socket,
    private readonly target: { host: string; port: number },
    private readonly onClosed: () => void,
  ) {
    this.watch(client, () => this.upstream);
    client.on('close', () => this.closed());
  }

  /** Connects to the server (at once in `pass`, at the heal when accepted during a cut). */
  dial(): void {
    if (this.upstream || this.client.destroyed) return;
    const up = createConnection(this.target);
    this.upstream = up;
    this.watch(up, () => this.client);
    up.on('close', () => this.closed());
  }

  /** Lets what each side sent during the cut through, in order, ends included. */
  flush(): void {
    for (const [from, chunks] of this.held) {
      const to = from === this.client ? this.upstream : this.client;
      for (const chunk of chunks) if (to && !to.destroyed) chunk === null ? to.end() : to.write(chunk);
    }
    this.held.clear();
    // A side that went away during the cut (a client that gave up) closes the other now.
    if (this.client.destroyed) this.upstream?.end();
    else if (this.upstream?.destroyed) this.client.end();
  }

  reset(): void {
    this.client.resetAndDestroy();
    this.upstream?.resetAndDestroy();
  }

  cut = false;

  private watch(from: Socket, to: () => Socket | undefined): void {
    const send = (chunk: Buffer | null) => {
      const other = to();
      if (this.cut || !other) this.held.set(from, [...(this.held.get(from) ?? []), chunk]);
      else if (chunk === null) other.end();
      else other.write(chunk);
    };
    from.on('data', (chunk) => send(chunk));
    from.on('end', () => send(null));
    // A reset side resets the other once the link carries it.
    from.on('error', () => {
      if (!this.cut) to()?.resetAndDestroy();
    });
  }

  private closed(): void {
    if (this.cut) return;
    if (this.client.destroyed && (!this.upstream || this.upstream.destroyed)) this.onClosed();
  }
}

/** A TCP proxy on loopback in front of `target`, for cutting one node's link to its database in tests. */
export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  let mode: LinkMode = 'pass';
  const links = new Set<Link>();
  const server = createServer({ allowHalfOpen: true }, (client) => {
    if (mode === 'reset') return void client.resetAndDestroy();
    const link = new Link(client, target, () => links.delete(link));
    links.add(link);
    link.cut = mode === 'blackhole';
    if (!link.cut) link.dial();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    host: '127.0.0.1',
    port,
    get mode() {
      return mode;
    },
    set(next) {
      mode = next;
      for (const link of [...links]) {
        if (next === 'reset') {
          links.delete(link);
          link.reset();
          continue;
        }
        link.cut = next === 'blackhole';
        if (!link.cut) {
          link.dial();
          link.flush();
        }
      }
    },
    async close() {
      for (const link of links) link.reset();
      links.clear();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
