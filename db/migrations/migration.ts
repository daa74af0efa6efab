import type { Knex } from 'knex';
import type { Dialect } from '../dialects/index.ts';
import type { DbOptions } from '../options.ts';
import type { TableNames } from '../tables.ts';

export interface MigrationContext {
  t: TableNames;
  dialect: Dialect;
  options: DbOptions;
  /** CREATE TABLE with the options every table needs (charset and collation on MySQL). */
  createTable(name: string, build: (table: Knex.CreateTableBuilder) => void): Knex.SchemaBuilder;
}

export interface Migration {
  name: string;
  up(knex: Knex, ctx: MigrationContext): Promise<void>;
}

/** Millisecond timestamps in every table (datetime(3) / timestamptz(3)). */
export const TIME = { precision: 3 } as const;
