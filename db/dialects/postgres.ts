import type { Dialect } from './dialect.ts';

export const postgresDialect: Dialect = {
  name: 'postgres',
  notifies: true,
  knexConfig: (o) => ({
    client: 'pg',
    connection: { host: o.host, port: o.port, user: o.username, password: o.password, database: o.schema },
    searchPath: ['public'],
    pool: { min: Math.min(o.maxIdleConnections, o.maxOpenConnections), max: o.maxOpenConnections, idleTimeoutMillis: o.connectionLifetimeMs },
  }),
  toDbTime: (d) => d,
  tableOptions: () => {},
  isUniqueViolation: (e) => (e as { code?: string })?.code === '23505',
};
