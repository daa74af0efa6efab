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
  publish(channel: string): Promise<void>;
  subscribe(listener: ChangeListener): () => void;
  close(): Promise<void>;
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
  let polling = false;
  let listener: ChangeListenerConnection | undefined;

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
  const startPolling = () => {
    if (polling) return;
    polling = true;
    schedule();
  };

  if (db.dialect.listen) {
    listener = await db.dialect.listen(db.options, knex, t.changes, emit, (error) => {
      if (closed) return;
      // Other nodes' changes then arrive through the version table, as on the engines that cannot push.
      logger.warn({ err: error }, 'change feed connection lost; polling instead');
      listener = undefined;
      startPolling();
    });
  } else {
    startPolling();
  }

  return {
    async publish(channel) {
      await db.upsert({ table: t.changes, rows: [{ channel, version: 1 }], key: ['channel'], merge: { version: knex.raw('??.?? + 1', [t.changes, 'version']) } });
      emit(channel);
      await listener?.notify(channel);
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async close() {
      closed = true;
      if (timer) clearTimeout(timer);
      await listener?.close();
    },
  };
}
