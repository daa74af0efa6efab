import type { Knex } from 'knex';

/**
 * A read whose statement never changes (no value of a request in it): `Database.read` compiles it once,
 * however often it runs. Compiling a builder costs more than SQLite takes to run a small statement.
 */
export class FixedRead {
  private compiled?: Knex.Sql;
  constructor(readonly query: Knex.QueryBuilder) {}

  /** The statement and its bindings, compiled at the first call. */
  sql(): Knex.Sql {
    return (this.compiled ??= this.query.toSQL());
  }
}

/** A builder to run, or a fixed read's statement: each run of a builder needs a fresh one (knex runs it once). */
export const runnable = (query: Knex.QueryBuilder | FixedRead): Knex.QueryBuilder =>
  query instanceof FixedRead ? query.query.clone() : query;

export const compiled = (query: Knex.QueryBuilder | FixedRead): Knex.Sql =>
  query instanceof FixedRead ? query.sql() : query.toSQL();
