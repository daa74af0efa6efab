import type { Knex } from 'knex';
import { insertByKnex, isRaw, sharedColumns } from './insert-rows.ts';
import { runPrepared } from './postgres-prepared.ts';

/** ES2024's well-formed string methods: Node 20 has them, the project's ES2023 type library does not. */
type WellFormed = { isWellFormed(): boolean; toWellFormed(): string };

/**
 * A row's values as the JSON the insert reads, or undefined where only knex stores them as it would: an
 * undefined value (knex writes the column's default) or an object other than a Date (knex binds it as it is,
 * where JSON would nest it). A string with a lone surrogate is made well-formed, as the driver sends it, because
 * PostgreSQL refuses the escape JSON.stringify writes for one.
 */
function jsonRow(row: Record<string, unknown>, columns: string[]): Record<string, unknown> | undefined {
  const out: Record<string, unknown> = {};
  for (const c of columns) {
    const v = row[c];
    if (v === undefined || (typeof v === 'object' && v !== null && !(v instanceof Date))) return undefined;
    const text = v as unknown as WellFormed;
    out[c] = typeof v === 'string' && !text.isWellFormed() ? text.toWellFormed() : v;
  }
  return out;
}

/**
 * Inserts rows of one shape as a single statement that takes them all as one JSON parameter, made into rows of
 * the table's type by `json_populate_recordset` (graphile-worker adds jobs the same way). knex's multi-row
 * insert compiled and bound each value (twelve to seventeen a task), then renumbered every placeholder: about
 * 30 µs of this process's CPU per task of a bulk create, where building and stringifying its JSON takes about
 * 2. Raw values (the database clock), the same in every row, are written once in the select list. One
 * statement: all rows or none, run as a prepared statement compiled once per shape (postgres-prepared.ts). Rows
 * of other shapes, or with values JSON would not carry as knex does, go through knex.
 */
export async function insertRows(knex: Knex, table: string, rows: Record<string, unknown>[]): Promise<void> {
  const columns = sharedColumns(rows);
  if (!columns) return insertByKnex(knex, table, rows);
  const first = rows[0]!;
  const fromJson = columns.filter((c) => !isRaw(first[c]));
  const data: Record<string, unknown>[] = [];
  for (const row of rows) {
    const json = jsonRow(row, fromJson);
    if (!json) return insertByKnex(knex, table, rows);
    data.push(json);
  }
  const json = JSON.stringify(data);
  // The shape (all the statement's text depends on: table, columns, the raw values' SQL) and the values it
  // binds, in order: the raw values' own, then the rows' JSON.
  const shape: unknown[] = [table];
  const values: unknown[] = [];
  for (const c of columns) {
    const value = first[c];
    if (!isRaw(value)) shape.push(c);
    else {
      const { sql, bindings } = value.toSQL();
      shape.push([c, sql]);
      values.push(...bindings);
    }
  }
  values.push(json);
  const statement = () => {
    const names = columns.map(() => '??').join(', ');
    const selected = columns.map((c) => (isRaw(first[c]) ? '?' : '??')).join(', ');
    return knex.raw(`insert into ?? (${names}) select ${selected} from json_populate_recordset(null::??, ?)`, [
      table,
      ...columns,
      ...columns.map((c) => (isRaw(first[c]) ? first[c] : c)),
      table,
      json,
    ]);
  };
  await runPrepared(knex, JSON.stringify(shape), statement, values);
}
