import type { Knex } from 'knex';
import { ClickHouseKnexClient } from './clickhouse/client.ts';
import type { ClickHouseConnection } from './clickhouse/connection.ts';
import { quoteIdentifier } from './clickhouse/escape.ts';
import { LIGHTWEIGHT_MUTATIONS } from './clickhouse/schema-compiler.ts';
import { backupWith, unavailableWhen, type Dialect, type TableDesign } from './dialect.ts';
import type { DbOptions } from '../options.ts';

/** `database.host` is a host name, or a URL base when it names its scheme (`https://ch.example`). */
function serverUrl(o: DbOptions): string {
  const url = new URL(/^https?:\/\//.test(o.host) ? o.host : `http://${o.host.includes(':') ? `[${o.host}]` : o.host}`);
  url.port = String(o.port);
  return url.origin;
}

export function clickhouseConnection(o: DbOptions): ClickHouseConnection {
  return {
    url: serverUrl(o),
    username: o.username || 'default',
    password: o.password,
    database: o.schema,
    readTimeoutMs: o.readTimeoutMs,
    dialTimeoutMs: o.dialTimeoutMs,
    maxExecutionTimeMs: o.maxExecutionTimeMs,
    compression: o.compression,
    maxOpenConnections: o.maxOpenConnections,
    maxIdleConnections: o.maxIdleConnections,
    connectionLifetimeMs: o.connectionLifetimeMs,
  };
}

const engineOf = (design: TableDesign) =>
  design.version ? `ReplacingMergeTree(${quoteIdentifier(design.version)})` : 'MergeTree';

const pick = (row: Record<string, unknown>, columns: string[]) => Object.fromEntries(columns.map((c) => [c, row[c]]));

/**
 * ClickHouse (≥ 25.7) over HTTP, for a single node and a single process: there are no transactions, unique
 * keys or row locks, so uniqueness, upserts and read-modify-writes are made safe by this process's locks, and its task engine claims in memory (docs/architecture.md,
 * docs/decisions.md). Tables are MergeTree sorted by their primary key (or their design's sort key), with
 * ReplacingMergeTree for tables whose rows are replaced whole.
 */
export const clickhouseDialect: Dialect = {
  name: 'clickhouse',
  numbersRows: false,
  indexesEveryRowVersion: false,
  partialIndexes: false,
  backup: backupWith(
    (o) =>
      `back ClickHouse up with its BACKUP statement (BACKUP DATABASE ${o.schema} TO Disk('backups', 'console.zip')) or clickhouse-backup`,
  ),
  knexConfig: (o) => ({
    client: ClickHouseKnexClient as unknown as typeof Knex.Client,
    connection: clickhouseConnection(o) as unknown as Knex.StaticConnectionConfig,
    // A pool "connection" is only a ticket to the one HTTP client, whose agent bounds the real connections
    // (max_open_connections). The pool itself must never run dry: a claim takes connections while holding
    // the mutation lock, which statements holding tickets may be waiting for.
    pool: { min: 0, max: 100_000 },
  }),
  toDbTime: (d) => d,
  clock: (knex, ms = 0) => knex.raw('now64(3) + toIntervalMillisecond(?)', [Math.round(ms)]),
  tableOptions: (table, _o, design) => {
    table.engine(
      design.sortKey
        ? `${engineOf(design)} order by (${design.sortKey.map(quoteIdentifier).join(', ')})`
        : engineOf(design),
    );
  },
  // A copy with the new engine takes the rows, then the two swap names (one atomic EXCHANGE). A run that
  // failed half-way starts again from an empty copy.
  async redesign(knex, table, design) {
    const [info] = (await knex.raw(
      'select sorting_key from system.tables where database = currentDatabase() and name = ?',
      [table],
    )) as { sorting_key: string }[];
    if (!info) throw new Error(`table ${table} does not exist`);
    const order = design.sortKey ? design.sortKey.map(quoteIdentifier).join(', ') : info.sorting_key;
    const copy = `${table}__redesign`;
    await knex.schema.dropTableIfExists(copy);
    await knex.raw(
      `create table ${quoteIdentifier(copy)} as ${quoteIdentifier(table)} engine = ${engineOf(design)} order by (${order}) settings ${LIGHTWEIGHT_MUTATIONS}`,
    );
    // A large table takes long to copy, and must not fail on every start for it.
    await knex.raw(
      `insert into ${quoteIdentifier(copy)} select * from ${quoteIdentifier(table)} settings max_execution_time = 0`,
    );
    await knex.raw(`exchange tables ${quoteIdentifier(table)} and ${quoteIdentifier(copy)}`);
    await knex.schema.dropTable(copy);
  },
  isUniqueViolation: () => false,
  // The HTTP client's socket failures, and its own connect timeout (database.dial_timeout).
  isUnavailable: unavailableWhen([], [/could not connect within/]),
  // No row locks, no transactions: nothing loses a lock conflict.
  retryReason: () => undefined,
  async upsert(knex, spec) {
    for (const row of spec.rows) {
      const where = pick(row, spec.key);
      const merge = Array.isArray(spec.merge) ? pick(row, spec.merge) : spec.merge;
      const stored = merge
        ? (await knex(spec.table).where(where).update(merge)) > 0
        : Boolean(await knex(spec.table).where(where).first(spec.key[0]!));
      if (!stored) await knex(spec.table).insert(row);
    }
  },
  // The newest version of each key is what FINAL reads (the client reads every table with FINAL).
  replaceRows: async (knex, table, rows) => void (await knex(table).insert(rows)),
  lockForUpdate: (query) => query,
  // No transactions: the statements run one by one, each applied at once (see Dialect.transaction).
  transaction: (knex, work) => work(knex),
  insertFamily: async (parent, children) => {
    await children();
    await parent();
  },
  // No planner statistics to refresh.
  refreshStatistics: async () => {},
  listTables: async (knex, like) =>
    (
      (await knex.raw('select name from system.tables where database = currentDatabase() and name like ?', [like])) as {
        name: string;
      }[]
    ).map((r) => r.name),
  dropTables: async (knex, names) => {
    for (const name of names) await knex.schema.dropTableIfExists(name);
  },
};
