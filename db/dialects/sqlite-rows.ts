/** Builds one row object from a statement's values, in the order of its columns. */
export type RowOf = (values: unknown[]) => Record<string, unknown>;

/** A better-sqlite3 statement that answers rows, as far as reading them as value arrays needs. */
export interface RowStatement {
  /** The statement's SQL. */
  readonly source: string;
  /** The connection the statement was prepared on. */
  readonly database: SchemaSource;
  raw(on: boolean): RowStatement;
  columns(): { name: string }[];
  all(bindings: unknown[]): unknown[][];
}

/** A connection, as far as asking its schema's version needs. */
interface SchemaSource {
  prepare(sql: string): { pluck(on: boolean): { get(): unknown } };
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
 * Each statement's row builder, with the row width and schema version it was built for. SQLite prepares a
 * statement again after another connection changed the schema (a newer node's migration), and `SELECT *` or
 * `RETURNING *` (the claim's) then answers other columns, possibly as many as before (one dropped, one added).
 * The driver's `columns()` costs about 25 µs for nineteen columns, more than reading ten rows of them, and
 * `PRAGMA schema_version` about 1 µs, so a `*` statement asks the version before and after each read, and its
 * builder is built again when the version or the width changed; a statement without `*` names each of its
 * columns and never asks.
 */
const builders = new WeakMap<RowStatement, { width: number; schema: unknown; row: RowOf }>();

/** Per connection, its statement of `PRAGMA schema_version`. */
const schemaVersions = new WeakMap<SchemaSource, { get(): unknown }>();

/** The schema version of the statement's connection, for a `*` statement; undefined for one naming its columns. */
function schemaOf(statement: RowStatement): unknown {
  if (!statement.source.includes('*')) return undefined;
  const conn = statement.database;
  let version = schemaVersions.get(conn);
  if (!version) schemaVersions.set(conn, (version = conn.prepare('PRAGMA schema_version').pluck(true)));
  return version.get();
}

/**
 * The statement's row builder for rows of `width` values, read between schema versions `before` and `after`. When
 * the schema changed during the read, the builder is made from the columns the statement ran with and kept for
 * no later read: which version those columns were prepared at is not known.
 */
function builderOf(statement: RowStatement, width: number, before: unknown, after: unknown): RowOf {
  const built = builders.get(statement);
  if (built && built.width === width && built.schema === before && before === after) return built.row;
  const row = rowOf(statement.columns().map((c) => c.name));
  builders.set(statement, { width, schema: before === after ? before : Symbol('changed during a read'), row });
  return row;
}

/**
 * The statement's rows for `bindings`, read as value arrays and made into objects by one literal each. The
 * statement is left answering objects again: knex may run the same prepared statement.
 */
export function readRows(statement: RowStatement, bindings: readonly unknown[]): Record<string, unknown>[] {
  const before = schemaOf(statement);
  let values: unknown[][];
  statement.raw(true);
  try {
    values = statement.all(bindings.map(asBinding));
  } finally {
    statement.raw(false);
  }
  if (values.length === 0) return [];
  // Columns asked after the read: SQLite prepares a statement again while running it, so only then are they current.
  return values.map(builderOf(statement, values[0]!.length, before, schemaOf(statement)));
}
