import type { Knex } from 'knex';
import { compileShape } from '../fixed-read.ts';
import { insertByKnex, isRaw, sharedColumns } from './insert-rows.ts';
import { inOneTransaction, type Statement } from './sqlite-transaction.ts';

/** Bound values one statement may hold (SQLite's default limit). */
const MAX_VARIABLES = 32_766;
/** Rows per statement, as knex's insert had them: few distinct statements for the connection to keep prepared. */
const ROWS = 500;

/**
 * Inserts rows that name the same columns, raw values (the database clock) being the same object in every row,
 * as multi-row VALUES statements in one transaction: knex compiles only the first row (`compileShape`), and every
 * other row repeats its tuple with its own values bound in their columns' places. knex's SQLite
 * insert writes each row as an aliased SELECT and binds it value by value: about 12 µs a row, more than SQLite
 * takes to insert it. All of them or none are stored (a bulk create is one transaction), and the event loop waits
 * while they are: a few ms per thousand rows. Rows of other shapes go through knex, 500 to a statement.
 */
export async function insertRows(knex: Knex, table: string, rows: Record<string, unknown>[]): Promise<void> {
  const [first] = rows;
  if (!first) return;
  const columns = sharedColumns(rows);
  if (!columns) return insertByKnex(knex, table, rows);
  // The first row compiled once, each value (not the raw ones, the same in every row) standing for its column.
  const { sql, slots } = compileShape(
    (values) => knex(table).insert(values),
    first,
    columns.filter((c) => !isRaw(first[c])),
  );
  const open = sql.lastIndexOf(' values (');
  if (open < 0 || !sql.endsWith(')')) throw new Error(`unexpected one-row insert: ${sql}`);
  const tuple = sql.slice(open + ' values '.length);
  const perStatement = Math.max(1, Math.min(ROWS, Math.floor(MAX_VARIABLES / Math.max(1, slots.length))));
  const statements: Statement[] = [];
  for (let i = 0; i < rows.length; i += perStatement) {
    const chunk = rows.slice(i, i + perStatement);
    const values: unknown[] = [];
    for (const row of chunk)
      for (const slot of slots) values.push('name' in slot ? (row[slot.name] ?? null) : slot.constant);
    statements.push({
      sql: sql.slice(0, open) + ' values ' + new Array(chunk.length).fill(tuple).join(', '),
      bindings: values,
    });
  }
  await inOneTransaction(knex, statements);
}
