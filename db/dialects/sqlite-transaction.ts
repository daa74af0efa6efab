import type { Knex } from 'knex';
import { announced } from '../query-events.ts';
import { asBinding, readRows, type RowStatement } from './sqlite-rows.ts';

interface Prepared extends RowStatement {
  reader: boolean;
  run(bindings: unknown[]): { changes: number };
}

interface WritingConnection {
  readonly inTransaction: boolean;
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

/** The transaction as one statement for the slow-query log and tracing: its time includes BEGIN's wait and COMMIT. */
const asOne = (statements: Compiled): Statement => ({
  sql: statements.map((s) => s.sql).join(';\n'),
  bindings: statements.flatMap((s) => s.bindings),
});

/**
 * Runs one statement: its rows (a claim returns every column of its rows), read as value arrays, or how many rows
 * it changed.
 */
function run(conn: WritingConnection, sql: string, bindings: readonly unknown[]): unknown {
  const statement = conn.prepare(sql);
  return statement.reader ? readRows(statement, bindings) : statement.run(bindings.map(asBinding)).changes;
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
    // Inside a transaction left open (a knex transaction whose COMMIT failed), better-sqlite3 would nest a
    // savepoint, and this work would vanish with that transaction's rollback while the node acts on it.
    if (conn.inTransaction) throw new Error('the SQLite connection is inside a transaction it did not open');
    let together = transactions.get(conn);
    if (!together) {
      const all = conn.transaction((compiled: Compiled) =>
        compiled.map(({ sql, bindings }) => run(conn, sql, bindings)),
      );
      // IMMEDIATE: the write lock from the start, so another process's write cannot void this one's snapshot.
      transactions.set(conn, (together = (compiled) => all.immediate(compiled)));
    }
    const whole = asOne(statements);
    return announced(knex, whole.sql, whole.bindings, () => together(statements));
  } finally {
    await knex.client.releaseConnection(conn);
  }
}
