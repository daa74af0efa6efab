import type { Knex } from 'knex';
import { ClickHouseKnexClient } from './clickhouse/client.ts';
import type { ClickHouseConnection } from './clickhouse/connection.ts';
import { quoteIdentifier } from './clickhouse/escape.ts';
import type { Dialect } from './dialect.ts';
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

const pick = (row: Record<string, unknown>, columns: string[]) => Object.fromEntries(columns.map((c) => [c, row[c]]));

/**
 * ClickHouse (≥ 25.7) over HTTP, for a single node and a single process: there are no transactions, unique
 * keys or row locks, so uniqueness, upserts and claims are made safe by this process's locks (DESIGN §2,
 * docs/decisions.md). Tables are MergeTree sorted by their primary key (or their design's sort key), with
 * ReplacingMergeTree for tables whose rows are replaced whole.
 */
export const clickhouseDialect: Dialect = {
  name: 'clickhouse',
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
    const engine = design.version ? `ReplacingMergeTree(${quoteIdentifier(design.version)})` : 'MergeTree';
    table.engine(design.sortKey ? `${engine} order by (${design.sortKey.map(quoteIdentifier).join(', ')})` : engine);
  },
  isUniqueViolation: () => false,
  async upsert(knex, spec) {
    for (const row of spec.rows) {
      const where = pick(row, spec.key);
      const merge = Array.isArray(spec.merge) ? pick(row, spec.merge) : spec.merge;
      const stored = merge ? (await knex(spec.table).where(where).update(merge)) > 0 : Boolean(await knex(spec.table).where(where).first(spec.key[0]!));
      if (!stored) await knex(spec.table).insert(row);
    }
  },
  // The newest version of each key is what FINAL reads (the client reads every table with FINAL).
  replaceRows: async (knex, table, rows) => void (await knex(table).insert(rows)),
  lockForUpdate: (query) => query,
  insertFamily: async (parent, children) => {
    await children();
    await parent();
  },
  // Candidates are chosen and taken while no other statement of this process mutates, so two claims never
  // take one row and nothing changes a candidate in between; a second process would break this.
  claim: (knex, spec) =>
    (knex.client as unknown as ClickHouseKnexClient).serialized(async () => {
      const rows = (await spec.candidates(knex(spec.table).select('id'))) as { id: string }[];
      if (!rows.length) return [];
      const ids = rows.map((r) => r.id);
      await knex(spec.table).whereIn('id', ids).update(spec.set);
      return (await knex(spec.table).whereIn('id', ids)) as Record<string, unknown>[];
    }),
  // No planner statistics to refresh.
  refreshStatistics: async () => {},
  listTables: async (knex, like) =>
    ((await knex.raw('select name from system.tables where database = currentDatabase() and name like ?', [like])) as { name: string }[]).map((r) => r.name),
  dropTables: async (knex, names) => {
    for (const name of names) await knex.schema.dropTableIfExists(name);
  },
};
