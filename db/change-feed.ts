import { randomUUID } from 'node:crypto';
import type { Database } from './database.ts';
import type { ChangeListenerConnection } from './dialects/dialect.ts';
import type { DbLogger } from './options.ts';

/** May be async (a cache reloading itself); its rejection is logged, never left unhandled. */
export type ChangeListener = (channel: string) => void | Promise<void>;

/**
 * Tells every node that something changed (users, roles, settings, sessions, tasks...). A change is seen at
 * once on the node that made it and within about a second elsewhere: PostgreSQL pushes it with NOTIFY, the
 * other engines are polled through a small version table.
 */
export interface ChangeFeed {
  /**
   * Tells every node, this one included; with `othersOnly`, only the other nodes (this one acted on the change
   * already, and hearing it again would only cost it a needless read).
   */
  publish(channel: string, options?: { othersOnly?: boolean }): Promise<void>;
  subscribe(listener: ChangeListener): () => void;
  close(): Promise<void>;
}

/** How often a lost LISTEN connection is tried again. */
const RELISTEN_MS = 500;

export async function startChangeFeed(db: Database, logger: DbLogger, pollIntervalMs = 1000): Promise<ChangeFeed> {
  const { knex, t } = db;
  // Pushed notices carry the sending feed's origin, so this feed skips the echo of its own (published here already).
  const origin = randomUUID();
  const listeners = new Set<ChangeListener>();
  const known = new Map<string, string>();
  const failed = (error: unknown, channel: string) => logger.error({ err: error, channel }, 'change listener failed');
  const emit = (channel: string) => {
    for (const l of listeners) {
      try {
        void l(channel)?.catch((error: unknown) => failed(error, channel));
      } catch (error) {
        failed(error, channel);
      }
    }
  };

  const readVersions = async () =>
    (await knex(t.changes).select('channel', 'version')) as { channel: string; version: unknown }[];
  for (const row of await readVersions()) known.set(row.channel, String(row.version));

  let closed = false;
  let timer: NodeJS.Timeout | undefined;
  let polling = false;
  let pollFailing = false;
  let listener: ChangeListenerConnection | undefined;
  // Kept when the listening connection is lost: NOTIFY goes through the pool, and other nodes may listen again sooner.
  let notify: ((channel: string) => Promise<void>) | undefined;

  const poll = async () => {
    try {
      for (const row of await readVersions()) {
        const v = String(row.version);
        if (known.get(row.channel) !== v) {
          known.set(row.channel, v);
          emit(row.channel);
        }
      }
      pollFailing = false;
    } catch (error) {
      // Once per outage, not once per poll.
      if (!closed && !pollFailing) logger.warn({ err: error }, 'change feed poll failed');
      pollFailing = true;
    }
  };
  const schedule = () => {
    if (!closed && polling) timer = setTimeout(() => void poll().finally(schedule), pollIntervalMs).unref();
  };
  const startPolling = () => {
    if (polling) return;
    polling = true;
    schedule();
  };
  const stopPolling = () => {
    polling = false;
    clearTimeout(timer);
  };

  const listen = async () => {
    const heard = (payload: string) => {
      const [channel, from] = payload.split(' ', 2);
      if (from !== origin) emit(channel!);
    };
    const connection = await db.dialect.listen!(db.options, knex, t.changes, heard, (error) => {
      if (closed) return;
      // Until LISTEN holds again, other nodes' changes arrive through the version table.
      logger.warn({ err: error }, 'change feed connection lost; polling until it is back');
      listener = undefined;
      startPolling();
      void relisten();
    });
    listener = connection;
    notify = connection.notify;
    return connection;
  };
  /** Listens again once the database is back (a restart), then stops polling after one last catch-up poll. */
  const relisten = async () => {
    while (!closed && !listener) {
      await new Promise((r) => setTimeout(r, RELISTEN_MS).unref());
      if (closed) return;
      let connection: ChangeListenerConnection;
      try {
        connection = await listen();
      } catch {
        continue;
      }
      if (closed) return void (await connection.close());
      stopPolling();
      // Changes made between the last poll and LISTEN holding again.
      await poll();
      logger.warn({}, 'change feed listening again');
    }
  };

  if (db.dialect.listen) await listen();
  else startPolling();

  return {
    async publish(channel, options = {}) {
      await db.upsert({
        table: t.changes,
        rows: [{ channel, version: 1 }],
        key: ['channel'],
        merge: { version: knex.raw('??.?? + 1', [t.changes, 'version']) },
      });
      if (!options.othersOnly) emit(channel);
      await notify?.(`${channel} ${origin}`);
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async close() {
      closed = true;
      stopPolling();
      await listener?.close();
    },
  };
}
