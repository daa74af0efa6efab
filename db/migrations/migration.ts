import type { Knex } from 'knex';
import type { Dialect, TableDesign } from '../dialects/index.ts';
import type { DbOptions } from '../options.ts';
import type { TableNames } from '../tables.ts';

export interface MigrationContext {
  t: TableNames;
  dialect: Dialect;
  options: DbOptions;
  /** CREATE TABLE with the options every table needs (charset and collation on MySQL; engine and sort key on ClickHouse). */
  createTable(name: string, build: (table: Knex.CreateTableBuilder) => void): Knex.SchemaBuilder;
  /** Gives an existing table a new design (`Dialect.redesign`); engines that ignore designs do nothing. */
  redesign(name: string, design: TableDesign): Promise<void>;
}

export interface Migration {
  name: string;
  up(knex: Knex, ctx: MigrationContext): Promise<void>;
}

/** Millisecond timestamps in every table (datetime(3) / timestamptz(3)). */
export const TIME = { precision: 3 } as const;

/**
 * How tables are used, for engines whose physical layout depends on it (ClickHouse); the others ignore it.
 * Tables not named here are entities: sorted by their primary key, changed in place.
 */
const TABLE_LAYOUTS: Partial<Record<keyof TableNames, TableDesign>> = {
  // Settings are written as whole rows in one statement, so a change of several keys is all or nothing.
  settings: { version: 'updated_at' },
  // Append-only logs, sorted by what their lists filter and order on.
  auditLogs: { sortKey: ['created_at', 'id'] },
  // One row, replaced at every append: ClickHouse keeps each version and reads the one of the highest seq.
  auditChain: { version: 'seq' },
  taskLogs: { sortKey: ['task_id', 'created_at', 'id'] },
  // Read in id order after a known id.
  taskEvents: { sortKey: ['id'] },
};

/** Tasks keep each change as a new row version (db/dialects/clickhouse/task-versions.ts); from migration 006 on. */
export const TASKS_LAYOUT: TableDesign = { version: 'version' };

export function tableDesign(t: TableNames, table: string): TableDesign {
  const key = (Object.keys(t) as (keyof TableNames)[]).find((k) => t[k] === table);
  return (key && TABLE_LAYOUTS[key]) ?? {};
}
