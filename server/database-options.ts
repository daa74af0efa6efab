import type { DbOptions } from '../db/options.ts';
import type { ConsoleConfig } from './config/schema.ts';

/** Maps the `database.*` keys onto db/'s plain options. */
export function databaseOptions(config: ConsoleConfig): DbOptions {
  const d = config.database;
  return {
    driver: d.driver,
    tablePrefix: d.table_prefix,
    slowThresholdMs: d.slow_threshold,
    path: d.path,
    host: d.host,
    port: d.port!,
    username: d.username,
    password: d.password,
    schema: d.schema,
    charset: d.charset,
    collation: d.collation,
    maxOpenConnections: d.max_open_connections!,
    maxIdleConnections: d.max_idle_connections!,
    connectionLifetimeMs: d.max_connection_life_time,
    readTimeoutMs: d.read_timeout,
    dialTimeoutMs: d.dial_timeout,
    idleTransactionTimeoutMs: d.idle_transaction_timeout,
    lockTimeoutMs: d.lock_timeout,
    maxExecutionTimeMs: d.max_execution_time,
    compression: d.enable_compression,
  };
}
