import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Dialect } from './dialect.ts';

export const sqliteDialect: Dialect = {
  name: 'sqlite',
  notifies: false,
  prepare: (o) => {
    if (o.path !== ':memory:') mkdirSync(dirname(o.path), { recursive: true });
  },
  knexConfig: (o) => ({
    client: 'better-sqlite3',
    connection: { filename: o.path },
    useNullAsDefault: true,
    // One connection: SQLite has one writer, and a single connection keeps reads consistent with writes.
    pool: {
      min: 1,
      max: 1,
      afterCreate: (conn: { pragma(s: string): unknown }, done: (err: Error | null, conn: unknown) => void) => {
        conn.pragma('journal_mode = WAL');
        conn.pragma('synchronous = NORMAL');
        conn.pragma('foreign_keys = ON');
        conn.pragma('busy_timeout = 5000');
        done(null, conn);
      },
    },
  }),
  toDbTime: (d) => d.toISOString(),
  tableOptions: () => {},
  isUniqueViolation: (e) => typeof (e as { code?: unknown })?.code === 'string' && (e as { code: string }).code.startsWith('SQLITE_CONSTRAINT_UNIQUE') || (e as { code?: string })?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY',
};
