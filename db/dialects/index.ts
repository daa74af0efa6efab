import type { DbOptions } from '../options.ts';
import { clickhouseDialect } from './clickhouse.ts';
import type { Dialect } from './dialect.ts';
import { mysqlDialect } from './mysql.ts';
import { postgresDialect } from './postgres.ts';
import { sqliteDialect } from './sqlite.ts';

export type { BackupOptions, Dialect, Reader, TableDesign, UpsertSpec } from './dialect.ts';
export { isoFromDb } from './dialect.ts';

const DIALECTS: Record<DbOptions['driver'], Dialect> = {
  sqlite: sqliteDialect,
  postgres: postgresDialect,
  mysql: mysqlDialect,
  clickhouse: clickhouseDialect,
};

export function dialectFor(driver: DbOptions['driver']): Dialect {
  return DIALECTS[driver];
}

/**
 * Whether anything thrown, however wrapped (objection's `nativeError`, an `Error.cause` chain such as tRPC's),
 * says a database is out of reach. Asks every dialect: an error carries its own driver's codes, so this needs
 * no database at hand (the HTTP edge maps errors without one).
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  for (
    let e = error, depth = 0;
    e && typeof e === 'object' && depth < 8;
    e = (e as { cause?: unknown }).cause, depth++
  ) {
    if (Object.values(DIALECTS).some((d) => d.isUnavailable(e))) return true;
  }
  return false;
}
