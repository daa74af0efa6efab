import type { Knex } from 'knex';
import type { DbOptions } from '../options.ts';

/** Everything that differs between database engines; nothing outside db/dialects branches on the driver. */
export interface Dialect {
  readonly name: DbOptions['driver'];
  /** Work before connecting, such as creating the SQLite file's folder. */
  prepare?(options: DbOptions): void;
  knexConfig(options: DbOptions): Knex.Config;
  /** The value to bind for a timestamp column. */
  toDbTime(date: Date): unknown;
  /** Table options every CREATE TABLE needs (charset and collation on MySQL). */
  tableOptions(table: Knex.CreateTableBuilder, options: DbOptions): void;
  isUniqueViolation(error: unknown): boolean;
  /** Whether the engine pushes change notifications (PostgreSQL LISTEN/NOTIFY) instead of being polled. */
  readonly notifies: boolean;
}


export function isoFromDb(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  if (value instanceof Date) return value.toISOString();
  if (typeof value === 'number') return new Date(value).toISOString();
  const text = String(value);
  // MySQL/SQLite may hand back "2024-01-02 03:04:05.678" without a zone; it was stored as UTC.
  return new Date(/[zZ]|[+-]\d\d:?\d\d$/.test(text) ? text : `${text.replace(' ', 'T')}Z`).toISOString();
}
