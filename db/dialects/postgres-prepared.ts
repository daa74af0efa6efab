import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import { lruCache } from '../../lib/lru.ts';
import { announced } from '../query-events.ts';

/** The part of node-postgres's client a statement needs. */
interface PgConnection {
  query(config: { name?: string; text: string; values: unknown[] }): Promise<unknown>;
}

/**
 * A compiled statement: its text with numbered parameters (`$1`…) and the name it is prepared under, the SHA-1
 * of the text. One name means one text in every process, so a server connection that a pooler shares between
 * nodes never holds a name for another statement (node-postgres, having prepared a name on its connection,
 * only sends "run this name").
 */
interface Prepared {
  name: string;
  text: string;
}

/**
 * Statements by shape, compiled at a shape's first run; false where knex bound other values than the caller
 * lists, or in another order (that shape then runs through knex each time rather than prepared wrongly).
 */
const compiled = lruCache<string, Prepared | false>(200);

function preparedOf(statement: Knex.Raw, values: unknown[]): Prepared | false {
  const { sql, bindings } = statement.toSQL().toNative();
  if (bindings.length !== values.length || bindings.some((b, i) => b !== values[i])) return false;
  return { name: `console_${createHash('sha1').update(sql).digest('hex')}`, text: sql };
}

/**
 * Pools whose server refused a prepared statement: a pooler in transaction mode that keeps none (PgBouncer
 * without `max_prepared_statements`, its default before 1.24) sends a statement to whichever server connection is
 * free, where its name is unknown (26000) or was prepared by another client (42P05). Neither ran the statement,
 * so it runs again unnamed, and so does everything after on that pool.
 */
const unprepared = new WeakSet<object>();
const REFUSED = new Set(['26000', '42P05']);

/**
 * Runs the statement `build` makes, whose bound values are `values` in order, as a named prepared statement on a
 * connection of knex's pool: compiled once per `shape` (a key naming everything its text depends on), parsed
 * and planned by PostgreSQL once per connection instead of at every run. For a one-task insert the server spent
 * 0.24 of its 0.36 ms parsing and planning (docs/performance.md "Prepared inserts on PostgreSQL"). In a
 * transaction knex runs it, on the transaction's connection. Announced as knex announces its statements
 * (slow-query log, traces); not retried as knex's are (db/retry.ts), so only for statements that lose to no
 * concurrent work (inserts of new rows).
 */
export async function runPrepared(knex: Knex, shape: string, build: () => Knex.Raw, values: unknown[]): Promise<void> {
  if (knex.isTransaction) return void (await build());
  let prepared = compiled.get(shape);
  let statement: Knex.Raw | undefined;
  if (prepared === undefined) compiled.set(shape, (prepared = preparedOf((statement = build()), values)));
  if (prepared === false) return void (await (statement ?? build()));
  const { name, text } = prepared;
  const connection = (await knex.client.acquireConnection()) as PgConnection;
  const unnamed = () => announced(knex, text, values, () => connection.query({ text, values }));
  try {
    if (unprepared.has(knex.client)) return void (await unnamed());
    try {
      await announced(knex, text, values, () => connection.query({ name, text, values }));
    } catch (error) {
      if (!REFUSED.has((error as { code?: string }).code ?? '')) throw error;
      unprepared.add(knex.client);
      await unnamed();
    }
  } finally {
    await knex.client.releaseConnection(connection);
  }
}
