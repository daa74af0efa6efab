import type { DbOptions } from '../options.ts';
import { clickhouseDialect } from './clickhouse.ts';
import type { Dialect } from './dialect.ts';
import { mysqlDialect } from './mysql.ts';
import { postgresDialect } from './postgres.ts';
import { sqliteDialect } from './sqlite.ts';

export type { Dialect, TableDesign, UpsertSpec } from './dialect.ts';
export { isoFromDb } from './dialect.ts';

const DIALECTS: Record<DbOptions['driver'], Dialect> = { sqlite: sqliteDialect, postgres: postgresDialect, mysql: mysqlDialect, clickhouse: clickhouseDialect };

export function dialectFor(driver: DbOptions['driver']): Dialect {
  return DIALECTS[driver];
}
