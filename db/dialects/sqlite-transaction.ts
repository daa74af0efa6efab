import type { Knex } from 'knex';
import { announced } from '../query-events.ts';
import { asBinding, rowOf, type RowOf } from './sqlite-rows.ts';

interface Prepared {
  reader: boolean;
  raw(on: boolean): Prepared;
  columns(): { name: string }[];
  all(bindings: unknown[]): unknown[][];
  run(bindings: unknown[]): { changes: number };
}

interface WritingConnection {
  prepare(sql: string): Prepared;
  transaction<A extends unknown[], T>(work: (...args: A) => T): { immediate(...args: A): T };
}

/** A compiled statement: SQL with `?` placeholders, and its values. */
export interface Statement {
  sql: string;
  bindings: readonly unknown[];
}

type Compiled = Statement[];

/** Per connection, its statements run as one transaction: better-sqlite3's wrapper, built once rather than per call. */
const transactions = new WeakMap<WritingConnection, (statements: Compiled) => unknown[]>();

/** Row builders of the statements the connection keeps prepared (by SQL text, so each statement stays one object). */
const builders = new WeakMap<Prepared, RowOf>();

/**
 * Runs one statement: its rows, read as value arrays and made into objects by `rowOf` (a claim returns every
 * column of its rows), or how many rows it changed. The statement is knex's too, so it reads objects again after.
 */
function run(conn: WritingConnection, sql: string, bindings: readonly unknown[]): unknown {
  const statement = conn.prepare(sql);
  const values = bindings.map(asBinding);
  if (!statement.reader) return statement.run(values).changes;
  let row = builders.get(statement);
  if (!row) builders.set(statement, (row = rowOf(statement.columns().map((c) => c.name))));
  statement.raw(true);
  try {
    return statement.all(values).map(row);
  } finally {
    statement.raw(false);
  }
}

/**
 * Runs the statements in order as one transaction on knex's one connection and answers, per statement, its rows
 * (a statement that returns rows) or how many rows it changed. Synchronously, so nothing else of this process runs
 * in between, and a failure rolls them all back; one commit covers them all. Through knex, each statement, BEGIN
 * and COMMIT would take its own turn through the pool and knex's promise chain: more than SQLite takes to run
 * them (a claim and the outcome UPDATE before it).
 */
export async function inOneTransaction(knex: Knex, queries: (Knex.QueryBuilder | Statement)[]): Promise<unknown[]> {
  const statements = queries.map((q) => ('toSQL' in q ? q.toSQL() : q));
  const conn = (await knex.client.acquireConnection()) as WritingConnection;
  try {
    let together = transactions.get(conn);
    if (!together) {
      const all = conn.transaction((compiled: Compiled) =>
        compiled.map(({ sql, bindings }) => announced(knex, sql, bindings, () => run(conn, sql, bindings))),
      );
      // IMMEDIATE: the write lock from the start, so another process's write cannot void this one's snapshot.
      transactions.set(conn, (together = (compiled) => all.immediate(compiled)));
    }
    return together(statements);
  } finally {
    await knex.client.releaseConnection(conn);
  }
}
