import { claimWithReturning, driverError, type Dialect } from './dialect.ts';

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
  clock: (knex, ms = 0) => knex.raw(`clock_timestamp() + cast(? as double precision) * interval '1 millisecond'`, [ms]),
  claim: (knex, spec) => claimWithReturning(knex, spec, true),
  refreshStatistics: async (knex, table) => void (await knex.raw('analyze ??', [table])),
  tableOptions: () => {},
  isUniqueViolation: (e) => driverError(e)?.code === '23505',
};
