import type { Knex } from 'knex';

let runs = 0;

/**
 * Runs a statement that bypasses knex's runner (a read on SQLite's reading connection, writes that must share
 * one synchronous transaction) and announces it as knex announces its own (query, then response or error), so
 * slow queries are logged and traced alike.
 */
export function announced<T>(knex: Knex, sql: string, bindings: readonly unknown[], run: () => T): T {
  const event = { __knexQueryUid: `direct-${++runs}`, sql, bindings };
  knex.emit('query', event);
  let out: T;
  try {
    out = run();
  } catch (error) {
    knex.emit('query-error', error, event);
    throw error;
  }
  knex.emit('query-response', out, event);
  return out;
}
