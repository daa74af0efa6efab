import type { Knex } from 'knex';
import type { DbOptions } from '../options.ts';
import type { RetryReason } from '../retry.ts';

export interface BackupOptions {
  /** Replace an existing file; without it an existing file is refused. */
  force?: boolean;
  /** Told the pages copied so far and the database's pages, after each step of a copy made in several. */
  progress?(copied: number, total: number): void;
}

export interface ChangeListenerConnection {
  notify(payload: string): Promise<void>;
  close(): Promise<void>;
}

/** Everything that differs between database engines; nothing outside db/dialects branches on the driver. */
export interface Dialect {
  readonly name: DbOptions['driver'];
  /**
   * Whether an increments column numbers inserted rows itself, as safe JavaScript integers. ClickHouse's makes
   * snowflake ids (beyond 2^53), so its one process numbers such rows (db/repositories/task-events.ts).
   */
  readonly numbersRows: boolean;
  /**
   * Whether an update that changes an indexed column adds an entry to every index of the table (PostgreSQL:
   * such an update is never HOT), rather than only to the indexes whose columns changed. Tables whose rows
   * change status then index only the row versions a query looks for (partial indexes; migration 010).
   */
  readonly indexesEveryRowVersion: boolean;
  /** Whether an index may hold only the rows its WHERE picks (partial indexes: SQLite and PostgreSQL, not MySQL). */
  readonly partialIndexes: boolean;
  /** Work before connecting, such as creating the SQLite file's folder. */
  prepare?(options: DbOptions): void;
  knexConfig(options: DbOptions): Knex.Config;
  /**
   * Where a generated encryption key may be kept when `global.encrypt_key` is absent: only a single-file
   * database has a folder no other node shares; undefined means secrets need a configured key.
   */
  localKeyFolder?(options: DbOptions): string | undefined;
  /**
   * Copies the database into `file` while it serves (`console backup`). Only a single-file database is copied
   * from here; a database server is backed up with its own tool, which the refusal names (`backupWith`).
   */
  backup(knex: Knex, options: DbOptions, file: string, how?: BackupOptions): Promise<void>;
  /** The value to bind for a timestamp column. */
  toDbTime(date: Date): unknown;
  /**
   * Table options every CREATE TABLE needs (charset and collation on MySQL; engine and sort key on
   * ClickHouse, from the table's design).
   */
  tableOptions(table: Knex.CreateTableBuilder, options: DbOptions, design: TableDesign): void;
  /**
   * Rebuilds a table for a design it was not created with, on engines whose physical layout depends on it
   * (ClickHouse cannot change a table's engine in place); the others need nothing.
   */
  redesign?(knex: Knex, table: string, design: TableDesign): Promise<void>;
  /** Whether the error is a unique index refusing a row. Engines without unique indexes (ClickHouse) never say so. */
  isUniqueViolation(error: unknown): boolean;
  /**
   * Whether the error says the database cannot be reached right now (down, restarting, connection cut, no
   * pooled connection to be had) rather than that the statement is wrong: callers answer 503 and try again.
   */
  isUnavailable(error: unknown): boolean;
  /**
   * Why the error says the statement or transaction lost to concurrent work and may run again (a deadlock, a
   * lock-wait timeout, a serialization failure); undefined for every other error, and always on engines
   * without such conflicts (SQLite's single connection, ClickHouse).
   */
  retryReason(error: unknown): RetryReason | undefined;
  /**
   * Inserts each row unless a row with its key exists, which then takes `spec.merge` (or stays as it is).
   * Engines without unique keys (ClickHouse) check, then write: correct only while the caller holds the
   * rows' keys through `Database.upsert`, which takes them.
   */
  upsert(knex: Knex, spec: UpsertSpec): Promise<void>;
  /**
   * Inserts many new rows more cheaply than knex's own insert, whose compile and bindings cost more than the
   * engine takes to insert a row (SQLite, PostgreSQL); rows of one shape (a bulk create's always are) all or
   * none. Rows of several shapes go through knex, 500 to a statement. Undefined: knex inserts them.
   */
  insertRows?(knex: Knex, table: string, rows: Record<string, unknown>[]): Promise<void>;
  /**
   * Writes whole rows in one atomic statement, each replacing the stored row with its key. The table's design
   * must name a `version` column: ClickHouse keeps every row written and reads the newest.
   */
  replaceRows(knex: Knex, table: string, rows: Record<string, unknown>[], key: string[]): Promise<void>;
  /**
   * Locks the rows the query selects until the transaction ends, on engines with row locks. Others have
   * none (SQLite's single connection already serialises; ClickHouse callers hold `Database.withLock`).
   */
  lockForUpdate(query: Knex.QueryBuilder): Knex.QueryBuilder;
  /**
   * Runs `work` as one transaction, handing it the connection its statements must use. Only ClickHouse has no
   * transactions: there `work` runs its statements one by one on the pool, each applied as it runs, and a
   * failure half-way undoes nothing. Repositories order such writes so that a half-done one shows nothing
   * (`insertFamily`; the row that makes the others visible written last or deleted first) and hold
   * `Database.withLock` where a read-modify-write must not interleave (ClickHouse runs as one process).
   */
  transaction<T>(knex: Knex, work: (trx: Knex) => Promise<T>): Promise<T>;
  /**
   * Runs the inserts of a parent row and of the rows that hang on it, in the order the engine needs: the
   * parent first where foreign keys check every insert (a transaction undoes a half-done write); the children
   * first where nothing checks them and nothing undoes (ClickHouse), so a failure half-way leaves only
   * children of a parent that does not exist, which nothing shows.
   */
  insertFamily(parent: () => PromiseLike<unknown>, children: () => PromiseLike<unknown>): Promise<void>;
  /**
   * Pushed change notifications (PostgreSQL LISTEN/NOTIFY) on a dedicated connection; engines without it are
   * polled. `onLost` is called once if the connection fails or ends (the server restarted); `notify` works on
   * the pool, with or without this connection.
   */
  listen?(
    options: DbOptions,
    knex: Knex,
    channel: string,
    onPayload: (payload: string) => void,
    onLost: (error: Error) => void,
  ): Promise<ChangeListenerConnection>;
  /**
   * The database clock, `ms` milliseconds ahead. Leases and run-after times are written and compared on
   * this one clock, so nodes whose clocks disagree still agree on when a lease has run out.
   */
  clock(knex: Knex, ms?: number): Knex.Raw;
  /**
   * Atomically moves up to the candidates' limit of rows to `set` and returns them as updated. Rows another
   * transaction is claiming are skipped (`FOR UPDATE SKIP LOCKED`, or on MySQL an UPDATE by id that repeats the
   * candidates' filter), so nodes never take the same row; task
   * changes are then fenced UPDATEs in place. An engine without it (ClickHouse, one process) has its process
   * own the tasks: claims in memory, every change a whole new row version (db/dialects/clickhouse/task-versions.ts).
   */
  claim?(knex: Knex, spec: ClaimSpec): Promise<Record<string, unknown>[]>;
  /**
   * `claim` and one other UPDATE (`change`, finished runs' outcome) at once, where the engine can: one statement
   * of data-modifying CTEs on PostgreSQL (both see the snapshot before either), one transaction of the single
   * writer on SQLite (the claim sees the change, so a task the change made claimable again may be claimed at once,
   * under a new claim). A busy node then sends one statement per batch of runs instead of two. Atomic: when it
   * fails, neither took place. Answers the claimed rows and how many rows `change` updated.
   */
  claimAfter?(
    knex: Knex,
    spec: ClaimSpec,
    change: Knex.QueryBuilder,
  ): Promise<{ rows: Record<string, unknown>[]; changed: number }>;
  /**
   * Refreshes the planner's statistics of a table after a burst of inserts. Without it PostgreSQL keeps
   * believing pending tasks are rare until autovacuum runs (up to a minute), sorts every pending row on each
   * claim, and the claim costs grow with the backlog.
   */
  refreshStatistics(knex: Knex, table: string): Promise<void>;
  /**
   * A connection of its own for plain reads outside any transaction (`Database.read`), on engines where that
   * is cheaper than a statement through knex's pool and sees the same committed data (SQLite in WAL mode: a
   * read on another connection sees every committed write, and never a transaction still open on the
   * writing one). Undefined elsewhere: reads go through knex.
   */
  openReader?(options: DbOptions): Reader | undefined;
  /**
   * Makes `counter` (a table with one row, `live`) hold how many rows of `table` are not soft-deleted, kept by
   * triggers inside every statement that inserts, deletes or soft-deletes a row. Defined where a trigger costs
   * about a microsecond a row and no writer waits on another for the counter (SQLite: one writer at a time);
   * elsewhere the counter row would serialise every node's inserts, and counts read the table (db/counts.ts).
   * SQLite drops a table's triggers when a migration rebuilds it (knex's SQLite alterTable does for most column
   * changes): such a migration of `table` calls this again. REPLACE would go uncounted (its delete fires no
   * trigger); nothing writes tasks so.
   */
  keepLiveRowCount?(knex: Knex, table: string, counter: string): Promise<void>;
  /** Tables of this database whose names match the LIKE pattern (tooling and tests). */
  listTables(knex: Knex, like: string): Promise<string[]>;
  /** Drops the tables whatever foreign keys join them (tooling and tests). */
  dropTables(knex: Knex, names: string[]): Promise<void>;
}

/** Runs one read statement (SQL with `?` placeholders, as knex compiles it) and answers its rows. */
export interface Reader {
  all(sql: string, bindings: readonly unknown[]): Record<string, unknown>[];
  /**
   * A number that changes whenever any connection, of this process or another, commits a change to the
   * database (SQLite's `data_version`): while it stays the same, whatever was read is still current.
   */
  version(): number;
  close(): void;
}

export interface ClaimSpec {
  table: string;
  /** Adds the where, order and limit that choose candidate rows (the query selects from `table`). */
  candidates(query: Knex.QueryBuilder): Knex.QueryBuilder;
  /** The values every claimed row takes (may hold raw expressions such as `clock`). */
  set: Record<string, unknown>;
  /** Columns of `set` only this claim's rows hold (its claim id, and a status the index leads with), to read them back by. */
  mark: Record<string, unknown>;
}

/** How a table is used, for engines whose physical layout depends on it (ClickHouse). */
export interface TableDesign {
  /** Rows are only ever written whole (replaceRows); of the rows with one key, the highest `version` holds. */
  version?: string;
  /** The order rows are kept in when it is not the primary key's: append-only logs sort by what lists filter on. */
  sortKey?: string[];
}

export interface UpsertSpec {
  table: string;
  rows: Record<string, unknown>[];
  /**
   * The columns of the unique key rows are matched on. Without `merge`, a row that meets a stored one on any
   * unique key is skipped (`ON CONFLICT DO NOTHING`, as MySQL's `INSERT IGNORE`), which also holds for a
   * partial unique index, one that `ON CONFLICT (key)` could not name without repeating its predicate.
   */
  key: string[];
  /** What a stored row with the same key takes: these columns of the new row, or these values (raw allowed). */
  merge?: string[] | Record<string, unknown>;
}

/** The driver's own error: objection wraps it (db-errors) and keeps the original as `nativeError`. */
export function driverError(error: unknown): { code?: unknown } | undefined {
  const e = error as { nativeError?: unknown } | undefined;
  return (e?.nativeError ?? e) as { code?: unknown } | undefined;
}

/** Socket failures of any network driver: the server is down, restarting, or out of reach. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/**
 * `isUnavailable` for a driver over the network through knex's pool: a socket failure, one of the driver's own
 * codes (`codes`) or messages (`messages`), or knex finding no connection in the pool in time.
 */
export function unavailableWhen(
  codes: readonly string[],
  messages: readonly RegExp[] = [],
): (error: unknown) => boolean {
  const known = new Set([...NETWORK_CODES, ...codes]);
  return (error) => {
    const e = driverError(error) as { code?: unknown; name?: unknown; message?: unknown } | undefined;
    if (!e || typeof e !== 'object') return false;
    if (e.name === 'KnexTimeoutError') return true;
    if (typeof e.code === 'string' && known.has(e.code)) return true;
    return typeof e.message === 'string' && messages.some((m) => m.test(e.message as string));
  };
}

/** Upsert for engines with unique keys: one INSERT ... ON CONFLICT statement (ON DUPLICATE KEY on MySQL). */
async function upsertOnConflict(knex: Knex, spec: UpsertSpec): Promise<void> {
  const insert = knex(spec.table).insert(spec.rows);
  await (spec.merge ? insert.onConflict(spec.key).merge(spec.merge as string[]) : insert.onConflict().ignore());
}

async function replaceOnConflict(
  knex: Knex,
  table: string,
  rows: Record<string, unknown>[],
  key: string[],
): Promise<void> {
  await knex(table).insert(rows).onConflict(key).merge();
}

async function parentFirst(parent: () => PromiseLike<unknown>, children: () => PromiseLike<unknown>): Promise<void> {
  await parent();
  await children();
}

/**
 * What every engine with transactions, unique keys and foreign keys does alike (SQLite, PostgreSQL, MySQL):
 * upserts and whole-row replaces as one INSERT ... ON CONFLICT, transactions as knex's own (a deadlock's loser
 * runs again as a whole: db/retry.ts), a parent row inserted before its children.
 */
export const transactionalEngine = {
  upsert: upsertOnConflict,
  replaceRows: replaceOnConflict,
  transaction: <T>(knex: Knex, work: (trx: Knex) => Promise<T>): Promise<T> => knex.transaction(work),
  insertFamily: parentFirst,
} satisfies Partial<Dialect>;

/** Claim for engines that can update through a locking sub-select in one statement and return the rows (PostgreSQL). */
export async function claimWithReturning(knex: Knex, spec: ClaimSpec): Promise<Record<string, unknown>[]> {
  return (await claimStatement(knex, spec, true)) as Record<string, unknown>[];
}

/** The claim as one UPDATE through a sub-select that answers the rows it took; `lock` skips rows others lock. */
export function claimStatement(knex: Knex, spec: ClaimSpec, lock: boolean): Knex.QueryBuilder {
  const ids = spec.candidates(knex(spec.table).select('id'));
  if (lock) ids.forUpdate().skipLocked();
  return knex(spec.table).whereIn('id', ids).update(spec.set).returning('*');
}

/**
 * The claim and `change` as two data-modifying CTEs of one statement (PostgreSQL). The outer join keeps one row
 * when nothing was claimed, so the change's count always comes back.
 */
export async function claimAfterChange(
  knex: Knex,
  spec: ClaimSpec,
  change: Knex.QueryBuilder,
): Promise<{ rows: Record<string, unknown>[]; changed: number }> {
  const out = (await knex
    .with('changed', change.returning('id'))
    .with('claimed', claimStatement(knex, spec, true))
    .select(knex.raw('claimed.*, (select count(*) from changed) as ??', [CHANGED_COUNT]))
    .from(knex.raw('(select 1) as one'))
    .joinRaw('left join claimed on true')) as Record<string, unknown>[];
  const changed = Number(out[0]?.[CHANGED_COUNT] ?? 0);
  const rows = out.filter((r) => r.id !== null);
  for (const r of rows) delete r[CHANGED_COUNT];
  return { rows, changed };
}

const CHANGED_COUNT = 'changed_count_';

const ISO_UTC = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

export function isoFromDb(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  if (value instanceof Date) return value.toISOString();
  if (typeof value === 'number') return new Date(value).toISOString();
  const text = String(value);
  // Already in the form toISOString writes (SQLite's stored times): nothing to convert.
  if (ISO_UTC.test(text)) return text;
  // MySQL/SQLite may hand back "2024-01-02 03:04:05.678" without a zone; it was stored as UTC.
  return new Date(/[zZ]|[+-]\d\d:?\d\d$/.test(text) ? text : `${text.replace(' ', 'T')}Z`).toISOString();
}

/** The `backup` of a database server: refused, naming the tool that backs the server up, as `advice(options)` says. */
export function backupWith(advice: (options: DbOptions) => string): Dialect['backup'] {
  return async (_knex, options) => {
    throw new Error(
      `backup copies SQLite databases only; ${advice(options)}, and keep global.encrypt_key with the dump`,
    );
  };
}
