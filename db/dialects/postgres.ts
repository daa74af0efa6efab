import type { DbOptions } from '../options.ts';
import type { RetryReason } from '../retry.ts';
import {
  backupWith,
  claimAfterChange,
  claimWithReturning,
  driverError,
  unavailableWhen,
  transactionalEngine,
  type Dialect,
} from './dialect.ts';
import { insertRows } from './postgres-insert.ts';

/**
 * The server going away: shutting down (57P01 admin, 57P02 crash), not yet accepting connections while it
 * starts or recovers (57P03), a connection exception (class 08), or the session it ended because its
 * transaction sat idle (25P03: this node was cut off mid-transaction). node-postgres says the rest by message
 * only: its connect timeout (`timeout expired`, the cause of `Connection terminated due to connection
 * timeout`), a socket closed under it (`Connection terminated unexpectedly`), a query on a client whose
 * connection failed, and its own read timeout.
 */
const isUnavailable = unavailableWhen(
  ['57P01', '57P02', '57P03', '08000', '08001', '08003', '08004', '08006', '25P03'],
  [/^timeout expired$/, /Connection terminated/, /not queryable/, /^Query read timeout$/],
);

/** SQLSTATEs after which the transaction is aborted and may simply run again. */
const RETRY_STATES = new Map<unknown, RetryReason>([
  ['40P01', 'deadlock'],
  ['40001', 'serialization'],
  ['55P03', 'lock_timeout'],
]);

/**
 * node-postgres's connection settings, for the pool and for the change feed's own connection alike. The
 * session timeouts bound what a node cut off from the server holds there (docs/engine.md, "Faults"): the
 * server ends its session once its transaction has waited `idle_transaction_timeout` for a statement that
 * cannot arrive, and others wait at most `lock_timeout` for its locks, then run again. TCP keepalive lets
 * either end find a dead peer of an idle connection.
 */
const connectionOf = (o: DbOptions) => ({
  host: o.host,
  port: o.port,
  user: o.username,
  password: o.password,
  database: o.schema,
  connectionTimeoutMillis: o.dialTimeoutMs,
  idle_in_transaction_session_timeout: o.idleTransactionTimeoutMs,
  lock_timeout: o.lockTimeoutMs,
  keepAlive: true,
  keepAliveInitialDelayMillis: o.idleTransactionTimeoutMs,
});

export const postgresDialect: Dialect = {
  name: 'postgres',
  numbersRows: true,
  indexesEveryRowVersion: true,
  partialIndexes: true,
  backup: backupWith(
    (o) =>
      `back PostgreSQL up with pg_dump (pg_dump --format=custom --table='${o.tablePrefix}*' --file=console.dump ${o.schema})`,
  ),
  async listen(o, knex, channel, onPayload, onLost) {
    const { default: pg } = await import('pg');
    const client = new pg.Client(connectionOf(o));
    let listening = false;
    // Once LISTEN holds, the first error or end of the connection reports the loss (once); failures before that
    // reject connect or LISTEN below. Without an error listener, node-postgres's error event would crash the process.
    const lost = (error: Error) => {
      if (!listening) return;
      listening = false;
      onLost(error);
    };
    client.on('error', lost);
    client.on('end', () => lost(new Error('change feed connection ended')));
    client.on('notification', (n) => {
      if (n.payload) onPayload(n.payload);
    });
    try {
      await client.connect();
      await client.query(`LISTEN "${channel}"`);
    } catch (error) {
      await client.end().catch(() => {});
      throw error;
    }
    listening = true;
    return {
      notify: async (payload) => {
        await knex.raw('select pg_notify(?, ?)', [channel, payload]);
      },
      close: () => {
        listening = false;
        return client.end().catch(() => {});
      },
    };
  },
  knexConfig: (o) => ({
    client: 'pg',
    connection: connectionOf(o),
    searchPath: ['public'],
    pool: {
      min: Math.min(o.maxIdleConnections, o.maxOpenConnections),
      max: o.maxOpenConnections,
      idleTimeoutMillis: o.connectionLifetimeMs,
    },
  }),
  toDbTime: (d) => d,
  clock: (knex, ms = 0) => knex.raw(`clock_timestamp() + cast(? as double precision) * interval '1 millisecond'`, [ms]),
  claim: (knex, spec) => claimWithReturning(knex, spec),
  claimAfter: claimAfterChange,
  insertRows,
  refreshStatistics: async (knex, table) => void (await knex.raw('analyze ??', [table])),
  listTables: async (knex, like) =>
    (
      (
        await knex.raw(`select tablename as name from pg_tables where schemaname = 'public' and tablename like ?`, [
          like,
        ])
      ).rows as { name: string }[]
    ).map((r) => r.name),
  // One statement with cascade, so foreign keys between the tables cannot make the order matter.
  dropTables: async (knex, names) => {
    if (names.length) await knex.raw(`drop table if exists ${names.map(() => '??').join(', ')} cascade`, names);
  },
  tableOptions: () => {},
  ...transactionalEngine,
  lockForUpdate: (query) => query.forUpdate(),
  isUniqueViolation: (e) => driverError(e)?.code === '23505',
  isUnavailable,
  retryReason: (e) => RETRY_STATES.get(driverError(e)?.code),
};
