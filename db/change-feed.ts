import type { Database } from './database.ts';
import type { DbLogger } from './options.ts';

/** May be async (a cache reloading itself); its rejection is logged, never left unhandled. */
export type ChangeListener = (channel: string) => void | Promise<void>;

/**
 * Tells every node that something changed (users, roles, settings, sessions, tasks...). A change is seen at
 * once on the node that made it and within about a second elsewhere: PostgreSQL pushes it with NOTIFY, the
 * other engines are polled through a small version table.
 */
export interface ChangeFeed {
  publish(channel: string): Promise<void>;
  subscribe(listener: ChangeListener): () => void;
  close(): Promise<void>;
}

interface PgNotification {
  channel: string;
  payload?: string;
}
interface PgListenClient {
  connect(): Promise<unknown>;
  query(sql: string): Promise<unknown>;
  on(event: 'notification', cb: (n: PgNotification) => void): void;
  on(event: 'error', cb: (e: Error) => void): void;
  end(): Promise<void>;
}

export async function startChangeFeed(db: Database, logger: DbLogger, pollIntervalMs = 1000): Promise<ChangeFeed> {
  const { knex, t } = db;
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

  const readVersions = async () => (await knex(t.changes).select('channel', 'version')) as { channel: string; version: unknown }[];
  for (const row of await readVersions()) known.set(row.channel, String(row.version));

  let closed = false;
  let timer: NodeJS.Timeout | undefined;
  let listenClient: PgListenClient | undefined;
  const notifyChannel = `${t.changes}`;

  const poll = async () => {
    try {
      for (const row of await readVersions()) {
        const v = String(row.version);
        if (known.get(row.channel) !== v) {
          known.set(row.channel, v);
          emit(row.channel);
        }
      }
    } catch (error) {
      if (!closed) logger.warn({ err: error }, 'change feed poll failed');
    }
  };
  const schedule = () => {
    if (!closed) timer = setTimeout(() => void poll().finally(schedule), pollIntervalMs).unref();
  };

  if (db.dialect.notifies) {
    const { default: pg } = await import('pg');
    const c = db.options;
    const client = new pg.Client({ host: c.host, port: c.port, user: c.username, password: c.password, database: c.schema }) as unknown as PgListenClient;
    client.on('notification', (n) => {
      if (n.payload) emit(n.payload);
    });
    client.on('error', (e) => {
      if (!closed) logger.warn({ err: e }, 'change feed connection lost; polling instead');
      schedule();
    });
    await client.connect();
    await client.query(`LISTEN "${notifyChannel}"`);
    listenClient = client;
  } else {
    schedule();
  }

  return {
    async publish(channel) {
      await knex(t.changes)
        .insert({ channel, version: 1 })
        .onConflict('channel')
        .merge({ version: knex.raw('??.?? + 1', [t.changes, 'version']) });
      if (listenClient) await knex.raw('select pg_notify(?, ?)', [notifyChannel, channel]);
      else emit(channel);
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async close() {
      closed = true;
      if (timer) clearTimeout(timer);
      await listenClient?.end().catch(() => {});
    },
  };
}
