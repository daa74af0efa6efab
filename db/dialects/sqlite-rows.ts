/** Builds one row object from a statement's values, in the order of its columns. */
export type RowOf = (values: unknown[]) => Record<string, unknown>;

/** A better-sqlite3 statement that answers rows, as far as reading them as value arrays needs. */
export interface RowStatement {
  /** The statement's SQL. */
  readonly source: string;
  raw(on: boolean): RowStatement;
  columns(): { name: string }[];
  all(bindings: unknown[]): unknown[][];
}

/** Values as knex's better-sqlite3 client binds them. */
export const asBinding = (value: unknown) =>
  value instanceof Date ? value.valueOf() : typeof value === 'boolean' ? Number(value) : value;

/**
 * Makes a statement's rows from its value arrays with one object literal of its columns: half the cost of the
 * driver's own row objects, which it builds a property at a time. A name given twice keeps its last value, as
 * there. Names are written as JSON strings, so no column name is ever read as code.
 */
function rowOf(columns: string[]): RowOf {
  const fields = columns.map((name, i) => `${JSON.stringify(name)}: values[${i}]`).join(', ');
  return new Function('values', `return { ${fields} };`) as RowOf;
}

/**
 * Each statement's row builder, with the number of columns it was built for: SQLite prepares a statement again
 * after another connection changed the schema (a newer node's migration), and `SELECT *` or `RETURNING *` (the
 * claim's) then answers other columns. Such a migration adds columns, so a row of another width is what tells:
 * the driver's `columns()` costs about 25 µs for nineteen columns, more than reading ten rows of them, and the
 * claim asked it on every run. A schema change that kept the width (a column renamed, or one dropped and another
 * added) would go unseen, but it breaks a node of the older release anyway: its statements name the old column.
 * A statement without `*` names each of its columns, so its builder is kept without asking again.
 */
const builders = new WeakMap<RowStatement, { width: number; row: RowOf; named: boolean }>();

/** The statement's row builder for rows of `width` values, built again only when a `*` statement's width changed. */
function builderOf(statement: RowStatement, width: number): RowOf {
  const built = builders.get(statement);
  if (built && (built.named || built.width === width)) return built.row;
  const names = statement.columns().map((c) => c.name);
  const row = rowOf(names);
  builders.set(statement, { width: names.length, row, named: !statement.source.includes('*') });
  return row;
}

/**
 * The statement's rows for `bindings`, read as value arrays and made into objects by one literal each. The
 * statement is left answering objects again: knex may run the same prepared statement.
 */
export function readRows(statement: RowStatement, bindings: readonly unknown[]): Record<string, unknown>[] {
  let values: unknown[][];
  statement.raw(true);
  try {
    values = statement.all(bindings.map(asBinding));
  } finally {
    statement.raw(false);
  }
  if (values.length === 0) return [];
  // Asked after the read: SQLite prepares a statement again while running it, so only then are its columns current.
  return values.map(builderOf(statement, values[0]!.length));
}
