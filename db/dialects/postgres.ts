import type { RetryReason } from '../retry.ts';
import { claimWithReturning, driverError, parentFirst, replaceOnConflict, upsertOnConflict, type Dialect } from './dialect.ts';

/** SQLSTATEs after which the transaction is aborted and may simply run again. */
const RETRY_STATES = new Map<unknown, RetryReason>([
  ['40P01', 'deadlock'],
  ['40001', 'serialization'],
]);

export const postgresDialect: Dialect = {
  name: 'postgres',
  async listen(o, knex, channel, onPayload, onLost) {
    const { default: pg } = await import('pg');
    const client = new pg.Client({ host: o.host, port: o.port, user: o.username, password: o.password, database: o.schema });
    client.on('notification', (n) => {
      if (n.payload) onPayload(n.payload);
    });
    client.once('error', onLost);
    await client.connect();
    await client.query(`LISTEN "${channel}"`);
    return {
      notify: async (payload) => {
        await knex.raw('select pg_notify(?, ?)', [channel, payload]);
      },
      close: () => client.end().catch(() => {}),
    };
  },
  knexConfig: (o) => ({
    client: 'pg',
    connection: { host: o.host, port: o.port, user: o.username, password: o.password, database: o.schema },
    searchPath: ['public'],
    pool: { min: Math.min(o.maxIdleConnections, o.maxOpenConnections), max: o.maxOpenConnections, idleTimeoutMillis: o.connectionLifetimeMs },
  }),
  toDbTime: (d) => d,
  clock: (knex, ms = 0) => knex.raw(`clock_timestamp() + cast(? as double precision) * interval '1 millisecond'`, [ms]),
  claim: (knex, spec) => claimWithReturning(knex, spec, true),
  refreshStatistics: async (knex, table) => void (await knex.raw('analyze ??', [table])),
  listTables: async (knex, like) =>
    ((await knex.raw(`select tablename as name from pg_tables where schemaname = 'public' and tablename like ?`, [like])).rows as { name: string }[]).map((r) => r.name),
  // One statement with cascade, so foreign keys between the tables cannot make the order matter.
  dropTables: async (knex, names) => {
    if (names.length) await knex.raw(`drop table if exists ${names.map(() => '??').join(', ')} cascade`, names);
  },
  tableOptions: () => {},
  upsert: upsertOnConflict,
  replaceRows: replaceOnConflict,
  insertFamily: parentFirst,
  lockForUpdate: (query) => query.forUpdate(),
  isUniqueViolation: (e) => driverError(e)?.code === '23505',
  retryReason: (e) => RETRY_STATES.get(driverError(e)?.code),
};
