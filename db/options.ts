/** What db/ needs to open a database: a plain object, so db/ never depends on the config loader. */
export interface DbOptions {
  driver: 'sqlite' | 'postgres' | 'mysql' | 'clickhouse';
  tablePrefix: string;
  /** Queries slower than this are reported through `onSlowQuery`. */
  slowThresholdMs: number;
  path: string;
  host: string;
  port: number;
  username: string;
  password: string;
  schema: string;
  charset: string;
  collation: string;
  maxOpenConnections: number;
  maxIdleConnections: number;
  /** Idle connections older than this are closed (knex's pool has no absolute lifetime). */
  connectionLifetimeMs: number;
  /** ClickHouse: a statement whose answer takes longer fails on this side. */
  readTimeoutMs: number;
  /** ClickHouse: a connection not established within this fails. */
  dialTimeoutMs: number;
  /**
   * PostgreSQL, MySQL: the server ends a session whose open transaction waits longer for its next statement
   * (a node cut off mid-transaction), which frees its row locks.
   */
  idleTransactionTimeoutMs: number;
  /** PostgreSQL, MySQL: a statement waiting longer for a lock fails (and runs again as work lost to a conflict). */
  lockTimeoutMs: number;
  /** ClickHouse: the server stops a statement running longer (its max_execution_time). */
  maxExecutionTimeMs: number;
  /** ClickHouse: gzip request and response bodies. */
  compression: boolean;
}

export interface DbLogger {
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
  debug(obj: object, msg: string): void;
}

/** A span per query, supplied by the caller's tracing (db/ knows nothing of it); `end` gets the error, if any. */
export interface QueryTracer {
  startQuery(sql: string, dialect: string): { end(error?: unknown): void };
}
