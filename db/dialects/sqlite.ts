import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { createRequire } from 'node:module';
import { createPrivateFile, makePrivate } from '../../lib/private-file.ts';
import { claimStatement, driverError, transactionalEngine, type Dialect, type Reader } from './dialect.ts';
import { readRows, type RowStatement } from './sqlite-rows.ts';
import { insertRows } from './sqlite-insert.ts';
import { inOneTransaction } from './sqlite-transaction.ts';

interface PreparingConnection {
  pragma(s: string): unknown;
  prepare(sql: string): unknown;
}

interface ReadingConnection extends PreparingConnection {
  prepare(sql: string): RawStatement;
  close(): void;
}

const STATEMENT_CACHE = 500;

/** A database file and the files SQLite keeps beside it. */
const sqliteFiles = (path: string) => [path, `${path}-wal`, `${path}-shm`, `${path}-journal`];

/**
 * knex prepares every query anew; preparing costs about as much as running a small statement. better-sqlite3
 * statements are reusable (knex only calls their synchronous all/run), so keep the recent ones by SQL text.
 */
function cachePreparedStatements(conn: PreparingConnection): void {
  const prepare = conn.prepare.bind(conn);
  const cache = new Map<string, unknown>();
  conn.prepare = (sql) => {
    let statement = cache.get(sql);
    if (statement === undefined) {
      statement = prepare(sql);
      if (cache.size >= STATEMENT_CACHE) cache.delete(cache.keys().next().value!);
    } else cache.delete(sql);
    cache.set(sql, statement);
    return statement;
  };
}

interface RawStatement extends RowStatement {
  pluck(on: true): RawStatement;
  get(): unknown;
}

/**
 * A second connection that only reads. knex's pool holds one connection, so a read through it queues behind
 * any open transaction and pays for the pool, the builder's promise chain and its hooks: about half of a
 * list request. This one prepares each statement once and runs it at once, reading rows as value arrays.
 */
function openReader(path: string): Reader {
  // Loaded here, as knex loads it: only a SQLite database needs the native module.
  const Connection = createRequire(import.meta.url)('better-sqlite3') as new (
    path: string,
    options: { fileMustExist: boolean },
  ) => ReadingConnection;
  const conn = new Connection(path, { fileMustExist: true });
  const statements = new Map<string, RawStatement>();
  conn.pragma('query_only = ON');
  conn.pragma('busy_timeout = 5000');
  const dataVersion = conn.prepare('PRAGMA data_version').pluck(true);
  return {
    all(sql, bindings) {
      let statement = statements.get(sql);
      if (!statement) {
        if (statements.size >= STATEMENT_CACHE) statements.clear();
        statements.set(sql, (statement = conn.prepare(sql)));
      }
      return readRows(statement, bindings);
    },
    version: () => dataVersion.get() as number,
    close: () => conn.close(),
  };
}

/** Pages per backup step at least (100 is SQLite's own first step): fewer would add steps, not information. */
const BACKUP_MIN_STEP_PAGES = 100;

export const sqliteDialect: Dialect = {
  name: 'sqlite',
  numbersRows: true,
  indexesEveryRowVersion: false,
  partialIndexes: true,
  prepare: (o) => {
    if (o.path !== ':memory:') mkdirSync(dirname(o.path), { recursive: true });
  },
  localKeyFolder: (o) => (o.path === ':memory:' ? undefined : dirname(o.path)),
  backup: async (knex, o, file, { force = false, progress } = {}) => {
    if (o.path === ':memory:' || !existsSync(o.path))
      throw new Error(`no SQLite database at ${o.path} (database.path) to back up`);
    const target = resolve(file);
    if (target === resolve(o.path)) throw new Error('the backup file must not be the database itself');
    // Checked before anything is made: a refused backup leaves no folder behind.
    if (existsSync(target) && !force) throw new Error(`${file} exists; pass --force to overwrite it`);
    mkdirSync(dirname(target), { recursive: true });
    // A journal left beside the old file would be played into the new copy when it is opened.
    for (const stale of sqliteFiles(target)) rmSync(stale, { force: true });
    // The copy holds the database's secrets: private from its first byte (SQLite would create it 0644).
    createPrivateFile(target);
    // better-sqlite3's online backup API, in steps of a fiftieth of the database when someone watches its
    // progress, else all at once. Between steps another connection's write (the serving process's) starts the
    // copy over; so after a restart the rest is copied in one step, whose read transaction does not hold up
    // those writes (WAL), and a copy under steady writes still finishes.
    const conn = (await knex.client.acquireConnection()) as {
      backup(
        file: string,
        o: { progress(p: { totalPages: number; remainingPages: number }): number },
      ): Promise<{ totalPages: number }>;
    };
    let remaining = Infinity;
    let oneStep = progress === undefined;
    try {
      const done = await conn.backup(file, {
        progress: ({ totalPages, remainingPages }) => {
          if (remainingPages > remaining) oneStep = true;
          remaining = remainingPages;
          progress?.(totalPages - remainingPages, totalPages);
          return oneStep ? totalPages : Math.max(BACKUP_MIN_STEP_PAGES, Math.ceil(totalPages / 50));
        },
      });
      progress?.(done.totalPages, done.totalPages);
    } finally {
      await knex.client.releaseConnection(conn);
    }
  },
  knexConfig: (o) => ({
    client: 'better-sqlite3',
    // Resolved at the first connection, not at open: `console backup` of a missing database creates none. The
    // function also carries `filename`, which knex looks for at open and warns without.
    connection: Object.assign(
      () => {
        if (o.path !== ':memory:' && !existsSync(o.path)) createPrivateFile(o.path);
        return { filename: o.path };
      },
      { filename: o.path },
    ),
    useNullAsDefault: true,
    // One connection: SQLite has one writer, and a single connection keeps reads consistent with writes.
    pool: {
      min: 1,
      max: 1,
      afterCreate: (conn: PreparingConnection, done: (err: Error | null, conn: unknown) => void) => {
        cachePreparedStatements(conn);
        // Before WAL mode: SQLite gives the -wal and -shm files the database file's mode. Files made 0644 by
        // an earlier version are closed to others here.
        if (o.path !== ':memory:') makePrivate(...sqliteFiles(o.path));
        conn.pragma('journal_mode = WAL');
        conn.pragma('synchronous = NORMAL');
        conn.pragma('foreign_keys = ON');
        conn.pragma('busy_timeout = 5000');
        done(null, conn);
      },
    },
  }),
  toDbTime: (d) => d.toISOString(),
  // The same text form toDbTime writes, so stored and computed times compare as strings.
  clock: (knex, ms = 0) => knex.raw(`strftime('%Y-%m-%dT%H:%M:%fZ', 'now', ?)`, [`${ms / 1000} seconds`]),
  // One writer: the single statement is atomic without row locks. Run as claimAfter runs: rows read as value arrays.
  claim: async (knex, spec) =>
    (await inOneTransaction(knex, [claimStatement(knex, spec, false)]))[0] as Record<string, unknown>[],
  // No UPDATE in a CTE, but one transaction of the single writer: one commit, pages the two touch written once.
  claimAfter: async (knex, spec, change) => {
    const [changed, rows] = await inOneTransaction(knex, [change, claimStatement(knex, spec, false)]);
    return { changed: changed as number, rows: rows as Record<string, unknown>[] };
  },
  insertRows,
  // Triggers first, then the count, in the migration's transaction: no write falls between the two.
  async keepLiveRowCount(knex, table, counter) {
    const change = (name: string, when: string, delta: string, on: string) =>
      knex.raw(
        `create trigger ?? after ${on} on ?? for each row when ${when} begin update ?? set live = live + ${delta}; end`,
        [`${table}_live_${name}`, table, counter],
      );
    await change('insert', 'new.deleted_at is null', '1', 'insert');
    await change('delete', 'old.deleted_at is null', '-1', 'delete');
    await change(
      'deleted',
      '(old.deleted_at is null) <> (new.deleted_at is null)',
      'case when new.deleted_at is null then 1 else -1 end',
      'update of deleted_at',
    );
    await knex.raw('insert into ?? (id, live) select 1, count(*) from ?? where deleted_at is null', [counter, table]);
  },
  // An in-memory database is private to its connection.
  openReader: (o) => (o.path === ':memory:' ? undefined : openReader(o.path)),
  // SQLite plans the claim through its index whatever the statistics say.
  refreshStatistics: async () => {},
  listTables: async (knex, like) =>
    (
      (await knex.raw(
        `select name from sqlite_master where type = 'table' and name not like 'sqlite_%' and name like ?`,
        [like],
      )) as { name: string }[]
    ).map((r) => r.name),
  // The single connection makes the pragma hold for the drops.
  dropTables: async (knex, names) => {
    await knex.raw('pragma foreign_keys = off');
    for (const name of names) await knex.schema.dropTableIfExists(name);
    await knex.raw('pragma foreign_keys = on');
  },
  tableOptions: () => {},
  ...transactionalEngine,
  // One connection: nothing else runs while a statement does.
  lockForUpdate: (query) => query,
  // A local file: there is no server to lose.
  isUnavailable: () => false,
  // One connection: statements never wait for each other's locks.
  retryReason: () => undefined,
  isUniqueViolation: (e) => {
    const code = driverError(e)?.code;
    return (
      typeof code === 'string' &&
      (code.startsWith('SQLITE_CONSTRAINT_UNIQUE') || code === 'SQLITE_CONSTRAINT_PRIMARYKEY')
    );
  },
};
