import knexFactory, { type Knex } from 'knex';
import { KeyedLock } from '../lib/keyed-lock.ts';
import { dialectFor, type BackupOptions, type Dialect, type Reader, type UpsertSpec } from './dialects/index.ts';
import { compiled, runnable, type PreparedRead } from './fixed-read.ts';
import { migrateLatest, migrationsDone } from './migrate.ts';
import { announced } from './query-events.ts';
import { defineModels, type Models } from './models.ts';
import type { DbLogger, DbOptions, QueryTracer } from './options.ts';
import { TaskVersions } from './dialects/clickhouse/task-versions.ts';
import { retryLostWork, type RetryReason } from './retry.ts';
import { tableNames, type TableNames } from './tables.ts';
import { inPlaceTaskStore, type TaskStore } from './tasks/store.ts';
import type { TaskTable } from './tasks/table.ts';

export interface Database {
  readonly knex: Knex;
  readonly dialect: Dialect;
  readonly t: TableNames;
  readonly options: DbOptions;
  readonly models: Models;
  /**
   * Runs `fn` while this process holds the keys (`users.username:bob`): a check-then-write of a unique
   * value, or a read-modify-write, under a key runs one at a time. On engines with unique indexes and row
   * locks those stay authoritative (several nodes); on ClickHouse this lock is all there is (one process).
   * Not re-entrant: never ask for a key already held.
   */
  withLock<T>(keys: string | readonly string[], fn: () => Promise<T>): Promise<T>;
  /**
   * `dialect.upsert` holding each row's key, so engines without unique keys stay correct in this process;
   * inside a transaction, pass it as `on`.
   */
  upsert(spec: UpsertSpec, on?: Knex): Promise<void>;
  /**
   * Calls `listener` each time a statement or transaction that lost to concurrent work (a deadlock, a
   * lock-wait timeout) runs again (see retry.ts); answers the unsubscribe.
   */
  onRetry(listener: (reason: RetryReason) => void): () => void;
  /** Calls `listener` with every query's SQL text (placeholders, no values) and seconds; answers the unsubscribe. */
  onQuery(listener: (sql: string, seconds: number) => void): () => void;
  /**
   * Runs a plain read (a query of `knex`, never of a transaction) and answers its rows: on the dialect's
   * reader where it has one (SQLite), else as knex runs it. Either way knex's query events fire, so slow
   * queries are logged and traced alike. A `PreparedRead` (db/fixed-read.ts) is compiled once, or once per shape.
   */
  read<T = Record<string, unknown>>(query: Knex.QueryBuilder | PreparedRead): Promise<T[]>;
  /**
   * A number that changes with every change committed to the database by any connection or process, where the
   * database keeps one (SQLite); undefined elsewhere. What was read while it stays the same is still current
   * (db/read-cache.ts).
   */
  dataVersion(): number | undefined;
  /** Writes to the tasks table, as the engine needs them (in place, or as versions: see db/tasks/store.ts). */
  readonly tasks: TaskStore;
  /** Applies the migrations that are due; answers their names. */
  migrate(): Promise<string[]>;
  /** Copies the database into `file` while it serves (SQLite); a database server refuses, naming its own tool. */
  backup(file: string, how?: BackupOptions): Promise<void>;
  /** Reachable and migrated. */
  ready(): Promise<boolean>;
  close(): Promise<void>;
}

interface QueryEvent {
  __knexQueryUid?: string;
  sql?: string;
}

/**
 * knex's own messages go to the service's logger instead of stdout. Its migration-lock warnings are expected
 * when nodes start together (migrate.ts retries and reports that), so they are debug, not warn.
 */
function knexLog(logger: DbLogger): Knex.Config['log'] {
  const lockBusy = /lock to run migrations|migrate:unlock/;
  const warn = (message: unknown) => {
    if (lockBusy.test(String(message))) logger.debug({ knex: String(message) }, 'database driver warning');
    else logger.warn({ knex: String(message) }, 'database driver warning');
  };
  return {
    warn,
    // knex passes deprecate the finished sentence, whatever its typings say.
    deprecate: warn,
    error: (message: unknown) => logger.error({ knex: String(message) }, 'database driver error'),
    debug: (message: unknown) => logger.debug({ knex: String(message) }, 'database driver debug'),
  };
}

/**
 * A failed query's error is logged, so it must not carry the bound values (password hashes, emails, secrets):
 * knex writes them into the message unless `compileSqlOnError` is off, and mysql2 adds the interpolated
 * statement as `error.sql`, which is replaced here by the statement with placeholders.
 */
function keepBoundValuesOutOfErrors(knex: Knex): void {
  knex.on('query-error', (error: unknown, q: QueryEvent) => {
    if (error && typeof error === 'object' && 'sql' in error) (error as { sql: unknown }).sql = q.sql;
  });
}

/** Times every query, from knex's announcement to its response or error, and hands each time to `timed`. */
function timeQueries(knex: Knex, timed: (sql: string, ms: number) => void): void {
  const started = new Map<string, number>();
  knex.on('query', (q: QueryEvent) => {
    if (q.__knexQueryUid) started.set(q.__knexQueryUid, performance.now());
  });
  const finish = (q: QueryEvent) => {
    if (!q.__knexQueryUid) return;
    const t0 = started.get(q.__knexQueryUid);
    started.delete(q.__knexQueryUid);
    if (t0 !== undefined) timed(q.sql ?? '', performance.now() - t0);
  };
  knex.on('query-response', (_r: unknown, q: QueryEvent) => finish(q));
  knex.on('query-error', (_e: unknown, q: QueryEvent) => finish(q));
}

/** One span per query, ended by its response or error (knex gives each query a uid across the three events). */
function traceQueries(knex: Knex, tracer: QueryTracer, dialect: string): void {
  const spans = new Map<string, ReturnType<QueryTracer['startQuery']>>();
  knex.on('query', (q: QueryEvent) => {
    if (q.__knexQueryUid && q.sql) spans.set(q.__knexQueryUid, tracer.startQuery(q.sql, dialect));
  });
  const end = (q: QueryEvent, error?: unknown) => {
    if (!q.__knexQueryUid) return;
    spans.get(q.__knexQueryUid)?.end(error);
    spans.delete(q.__knexQueryUid);
  };
  knex.on('query-response', (_r: unknown, q: QueryEvent) => end(q));
  knex.on('query-error', (e: unknown, q: QueryEvent) => end(q, e));
}

/** `Database.read` through `reader`, announcing the statement as knex announces its own. */
function readWith(knex: Knex, reader: Reader) {
  return async <T>(query: Knex.QueryBuilder | PreparedRead): Promise<T[]> => {
    const { sql, bindings } = compiled(query);
    return announced(knex, sql, bindings, () => reader.all(sql, bindings) as T[]);
  };
}

interface Shared {
  locks: KeyedLock;
  /** The owner of versioned task writes (dialects that do not claim in the database). */
  versions?: TaskVersions;
}

const shared = new Map<string, Shared>();

/**
 * One lock (and one owner of versioned task writes) per set of tables in the process, so several consoles of
 * one process on them take turns too.
 */
function sharedFor(o: DbOptions): Shared {
  const target = `${o.driver}|${o.path}|${o.host}:${o.port}/${o.schema}|${o.tablePrefix}`;
  const state = shared.get(target) ?? { locks: new KeyedLock() };
  shared.set(target, state);
  return state;
}

export function openDatabase(options: DbOptions, logger: DbLogger, tracer?: QueryTracer): Database {
  const dialect = dialectFor(options.driver);
  dialect.prepare?.(options);
  const knex = knexFactory({ ...dialect.knexConfig(options), compileSqlOnError: false, log: knexLog(logger) });
  keepBoundValuesOutOfErrors(knex);
  const queryListeners = new Set<(sql: string, seconds: number) => void>();
  // Slow queries are reported with their SQL text but never their bound values (secrets).
  timeQueries(knex, (sql, ms) => {
    if (ms >= options.slowThresholdMs) logger.warn({ duration_ms: Math.round(ms * 1000) / 1000, sql }, 'slow query');
    for (const l of queryListeners) l(sql, ms / 1000);
  });
  if (tracer) traceQueries(knex, tracer, options.driver);
  const retryListeners = new Set<(reason: RetryReason) => void>();
  retryLostWork(knex, {
    reasonOf: (error) => dialect.retryReason(error),
    onRetry: (reason) => {
      logger.debug({ reason }, 'database work lost to concurrent work; running it again');
      for (const l of retryListeners) l(reason);
    },
  });
  const t = tableNames(options.tablePrefix);
  const state = sharedFor(options);
  const locks = state.locks;
  const upsert = (spec: UpsertSpec, on: Knex = knex) =>
    locks.run(
      spec.rows.map((row) => `${spec.table}:${JSON.stringify(spec.key.map((k) => row[k]))}`),
      () => dialect.upsert(on, spec),
    );
  // The database's connection as it is at each statement (a test may wrap it), not as it was here.
  const table: TaskTable = {
    get knex() {
      return db.knex;
    },
    name: t.tasks,
    dialect,
    upsert: (spec) => upsert(spec),
  };
  const tasks = dialect.claim
    ? inPlaceTaskStore(table, dialect.claim)
    : (state.versions ??= new TaskVersions(logger)).attach(table);
  // Opened at the first read: the database file exists by then (migrations ran).
  let reader: Reader | undefined;
  let readThrough: (<T>(query: Knex.QueryBuilder | PreparedRead) => Promise<T[]>) | undefined;
  const opened = () => {
    if (!readThrough) {
      reader = dialect.openReader?.(options);
      readThrough = reader ? readWith(knex, reader) : async (q) => (await runnable(q)) as never;
    }
    return readThrough;
  };
  const db: Database = {
    knex,
    read<T>(query: Knex.QueryBuilder | PreparedRead): Promise<T[]> {
      return opened()<T>(query);
    },
    dataVersion() {
      opened();
      return reader?.version();
    },
    dialect,
    t,
    options,
    models: defineModels(knex, t, dialect),
    tasks,
    withLock: (keys, fn) => locks.run(keys, fn),
    onRetry: (listener) => {
      retryListeners.add(listener);
      return () => retryListeners.delete(listener);
    },
    onQuery: (listener) => {
      queryListeners.add(listener);
      return () => queryListeners.delete(listener);
    },
    upsert,
    migrate: () => migrateLatest(knex, { t, dialect, options, upsert }, logger),
    backup: (file, how) => dialect.backup(knex, options, file, how),
    async ready() {
      try {
        return await migrationsDone(knex, t);
      } catch {
        return false;
      }
    },
    async close() {
      try {
        await tasks.detach();
      } finally {
        reader?.close();
        await knex.destroy();
      }
    },
  };
  return db;
}
