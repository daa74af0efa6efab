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
 * Each statement's row builder, with the columns it was built for: SQLite prepares a statement again after another
 * connection changed the schema (a newer node's migration), and `SELECT *` or `RETURNING *` then answers other
 * columns. A statement without `*` names each of its columns, so its builder is kept without asking again (only
 * a rename that changes nothing but a column's case would go unseen: SQLite answers a column by its declared name);
 * the driver's `columns()` costs about 25 µs for nineteen columns, more than reading ten rows of them.
 */
const builders = new WeakMap<RowStatement, { columns: string; row: RowOf; named: boolean }>();

/** The statement's row builder, built again only when a statement that may select `*` answers other columns. */
function builderOf(statement: RowStatement): RowOf {
  const built = builders.get(statement);
  if (built?.named) return built.row;
  const names = statement.columns().map((c) => c.name);
  const columns = names.join('\u0000');
  if (built?.columns === columns) return built.row;
  const row = rowOf(names);
  builders.set(statement, { columns, row, named: !statement.source.includes('*') });
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
  // Asked after the read: SQLite prepares a statement again while running it, so only then are its columns current.
  return values.map(builderOf(statement));
}
