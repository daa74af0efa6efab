import type { Knex } from 'knex';
import type { Database } from './database.ts';
import { FixedRead, type PreparedRead } from './fixed-read.ts';

/** How many rows `query` selects (a clone is counted; the query itself is left as it is). */
export function countOf(db: Database, query: Knex.QueryBuilder): Promise<number> {
  return counted(db, query.clone().count({ n: '*' }));
}

/** The count a read answers as `n`. */
export async function counted(db: Database, read: Knex.QueryBuilder | PreparedRead): Promise<number> {
  const [row] = await db.read<{ n: number | string }>(read);
  return Number(row?.n ?? 0);
}

/**
 * How many rows of `table` are not soft-deleted. Where the database keeps that number in `counter`
 * (Dialect.keepLiveRowCount: SQLite's tasks), it is read from there, whatever the table's size. Elsewhere it is
 * all rows less the deleted ones, which have an index of their own: PostgreSQL scans the table, MySQL the
 * narrowest index, either way one statement.
 */
const liveRowCounts = new WeakMap<Database, Map<string, FixedRead>>();

/** The statement of `countLiveRows`, built once per database, table and counter: it never changes. */
function liveRowCount(db: Database, table: string, counter?: string): FixedRead {
  const byTable = liveRowCounts.get(db) ?? new Map<string, FixedRead>();
  liveRowCounts.set(db, byTable);
  const key = `${table}|${counter ?? ''}`;
  let read = byTable.get(key);
  if (!read) {
    const { knex } = db;
    read = new FixedRead(
      counter && db.dialect.keepLiveRowCount
        ? knex(counter).select({ all: 'live' })
        : knex.select({ all: knex(table).count('*'), deleted: knex(table).whereNotNull('deleted_at').count('*') }),
    );
    byTable.set(key, read);
  }
  return read;
}

export async function countLiveRows(db: Database, table: string, counter?: string): Promise<number> {
  const [row] = await db.read<{ all: number | string; deleted?: number | string }>(liveRowCount(db, table, counter));
  return Number(row?.all ?? 0) - Number(row?.deleted ?? 0);
}
