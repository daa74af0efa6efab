import type { Knex } from 'knex';

let runs = 0;

const isPromise = (value: unknown): value is Promise<unknown> =>
  typeof (value as Promise<unknown> | null)?.then === 'function';

/**
 * Runs a statement that bypasses knex's runner (a read on SQLite's reading connection, writes that must share
 * one synchronous transaction, PostgreSQL's prepared inserts) and announces it as knex announces its own (query,
 * then response or error, once a promise it answers has settled), so slow queries are logged and traced alike.
 */
export function announced<T>(knex: Knex, sql: string, bindings: readonly unknown[], run: () => T): T {
  const event = { __knexQueryUid: `direct-${++runs}`, sql, bindings };
  knex.emit('query', event);
  const failed = (error: unknown) => {
    knex.emit('query-error', error, event);
    throw error;
  };
  let out: T;
  try {
    out = run();
  } catch (error) {
    return failed(error);
  }
  if (isPromise(out))
    return out.then((value) => {
      knex.emit('query-response', value, event);
      return value;
    }, failed) as T;
  knex.emit('query-response', out, event);
  return out;
}
