import type { Dialect } from './dialect.ts';

export const mysqlDialect: Dialect = {
  name: 'mysql',
  notifies: false,
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
    },
    pool: {
      min: Math.min(o.maxIdleConnections, o.maxOpenConnections),
      max: o.maxOpenConnections,
      idleTimeoutMillis: o.connectionLifetimeMs,
      afterCreate: (conn: { query(sql: string, values: unknown[], cb: (err: Error | null) => void): void }, done: (err: Error | null, conn: unknown) => void) => {
        conn.query('SET NAMES ? COLLATE ?', [o.charset, o.collation], (err) => done(err, conn));
      },
    },
  }),
  toDbTime: (d) => d,
  tableOptions: (t, o) => {
    t.charset(o.charset);
    t.collate(o.collation);
  },
  isUniqueViolation: (e) => (e as { code?: string })?.code === 'ER_DUP_ENTRY',
};
