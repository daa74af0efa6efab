import type { DbOptions } from '../options.ts';
import type { RetryReason } from '../retry.ts';
import { backupWith, driverError, unavailableWhen, transactionalEngine, type Dialect } from './dialect.ts';

/**
 * The server going away: the connection cut (mysql2's PROTOCOL_* codes, and a command queued on a connection
 * that just failed), a statement given up on a dead socket (PROTOCOL_SEQUENCE_TIMEOUT), the server shutting
 * down, refusing more connections, or ending an idle session (ER_CLIENT_INTERACTION_TIMEOUT). mysql2's connect
 * timeout is ETIMEDOUT, a socket failure.
 */
const isUnavailable = unavailableWhen(
  [
    'PROTOCOL_CONNECTION_LOST',
    'PROTOCOL_SEQUENCE_TIMEOUT',
    'ER_CLIENT_INTERACTION_TIMEOUT',
    'PROTOCOL_ENQUEUE_AFTER_FATAL_ERROR',
    'PROTOCOL_ENQUEUE_AFTER_QUIT',
    'ER_SERVER_SHUTDOWN',
    'ER_CON_COUNT_ERROR',
    'ER_NORMAL_SHUTDOWN',
    'ER_SHUTDOWN_COMPLETE',
  ],
  [/connection is in closed state/],
);

/** ER_LOCK_DEADLOCK rolls the transaction back; ER_LOCK_WAIT_TIMEOUT only the statement (the caller rolls back the rest). */
const RETRY_ERRNOS = new Map<number, RetryReason>([
  [1213, 'deadlock'],
  [1205, 'lock_timeout'],
]);

const seconds = (ms: number) => Math.max(1, Math.ceil(ms / 1000));

/**
 * Each connection's character set, and the session timeouts that bound what a node cut off from the server
 * holds there (docs/engine.md, "Faults"): others wait at most `lock_timeout` for its row locks, then run
 * again; MariaDB ends its session once its transaction has waited `idle_transaction_timeout` for a statement
 * that cannot arrive (the executable comment runs on MariaDB only: MySQL has no such timeout, only
 * `wait_timeout`, which would also close the pool's idle connections).
 */
function sessionSettings(o: DbOptions): string {
  return (
    `SET NAMES ? COLLATE ?, SESSION innodb_lock_wait_timeout = ${seconds(o.lockTimeoutMs)}` +
    ` /*M!100300 , SESSION idle_transaction_timeout = ${seconds(o.idleTransactionTimeoutMs)} */`
  );
}

export const mysqlDialect: Dialect = {
  name: 'mysql',
  numbersRows: true,
  indexesEveryRowVersion: false,
  partialIndexes: false,
  backup: backupWith(
    (o) =>
      `back MariaDB or MySQL up with mariadb-dump (mariadb-dump --single-transaction ${o.schema} > console.sql; mysqldump on MySQL)`,
  ),
  knexConfig: (o) => ({
    client: 'mysql2',
    connection: {
      host: o.host,
      port: o.port,
      user: o.username,
      password: o.password,
      database: o.schema,
      charset: o.charset,
      // Timestamps are stored and read as UTC whatever the server's zone is.
      timezone: 'Z',
      supportBigNumbers: true,
      connectTimeout: o.dialTimeoutMs,
      enableKeepAlive: true,
      keepAliveInitialDelay: o.idleTransactionTimeoutMs,
    },
    pool: {
      min: Math.min(o.maxIdleConnections, o.maxOpenConnections),
      max: o.maxOpenConnections,
      idleTimeoutMillis: o.connectionLifetimeMs,
      afterCreate: (
        conn: { query(sql: string, values: unknown[], cb: (err: Error | null) => void): void },
        done: (err: Error | null, conn: unknown) => void,
      ) => {
        conn.query(sessionSettings(o), [o.charset, o.collation], (err) => done(err, conn));
      },
    },
  }),
  toDbTime: (d) => d,
  clock: (knex, ms = 0) => knex.raw('utc_timestamp(3) + interval ? microsecond', [Math.round(ms * 1000)]),
  refreshStatistics: async (knex, table) => void (await knex.raw('analyze table ??', [table])),
  listTables: async (knex, like) =>
    (
      (
        await knex.raw(
          `select table_name as name from information_schema.tables where table_schema = database() and table_name like ?`,
          [like],
        )
      )[0] as { name: string }[]
    ).map((r) => r.name),
  // foreign_key_checks is per connection: the transaction keeps the drops on the one that turned it off.
  dropTables: (knex, names) =>
    knex.transaction(async (trx) => {
      await trx.raw('set foreign_key_checks = 0');
      for (const name of names) await trx.schema.dropTableIfExists(name);
      await trx.raw('set foreign_key_checks = 1');
    }),
  // No UPDATE ... RETURNING, and no update through a sub-select of the same table. A transaction that locks the
  // candidates (FOR UPDATE SKIP LOCKED) costs 5 round trips; instead: read the candidates without locking, take
  // them with one UPDATE by id that repeats the claim filter (a row another claim took meanwhile no longer matches:
  // InnoDB re-checks a row it waited for on its committed version), read the taken rows back by the claim's mark.
  // An UPDATE ... ORDER BY ... LIMIT would be one trip fewer, but its range locks wait on the inserts in flight
  // (measured 5× slower with a producer). Candidates all lost to other nodes: the next ones are tried.
  claim: async (knex, spec) => {
    for (let attempt = 0; attempt < 3; attempt++) {
      const ids = ((await spec.candidates(knex(spec.table).select('id'))) as { id: string }[]).map((r) => r.id);
      if (!ids.length) return [];
      const take = spec.candidates(knex(spec.table)).clearOrder().clear('limit').whereIn('id', ids);
      if (await take.update(spec.set)) return (await knex(spec.table).where(spec.mark)) as Record<string, unknown>[];
    }
    return [];
  },
  tableOptions: (t, o) => {
    t.charset(o.charset);
    t.collate(o.collation);
  },
  ...transactionalEngine,
  lockForUpdate: (query) => query.forUpdate(),
  isUniqueViolation: (e) => driverError(e)?.code === 'ER_DUP_ENTRY',
  isUnavailable,
  retryReason: (e) => RETRY_ERRNOS.get(Number((driverError(e) as { errno?: unknown } | undefined)?.errno)),
};
