import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import { lruCache } from '../../lib/lru.ts';
import { announced } from '../query-events.ts';

/** The part of node-postgres's client a statement needs. */
interface PgConnection {
  query(config: { name?: string; text: string; values: unknown[] }): Promise<unknown>;
}

/**
 * Statement names, made from the text: one name means one text in every process, so a server connection that a
 * pooler shares between nodes never holds a name for another statement (node-postgres, having prepared a name on
 * its connection, only sends "run this name"). Kept, as hashing a statement costs more than looking it up.
 */
const names = lruCache<string, string>(500);
const nameOf = (text: string) => `console_${createHash('sha1').update(text).digest('hex')}`;

/**
 * Pools whose server refused a prepared statement: a pooler in transaction mode that keeps none (PgBouncer
 * without `max_prepared_statements`, its default before 1.24) sends a statement to whichever server connection is
 * free, where its name is unknown (26000) or was prepared by another client (42P05). Neither ran the statement,
 * so it runs again unnamed, and so does everything after on that pool.
 */
const unprepared = new WeakSet<object>();
const REFUSED = new Set(['26000', '42P05']);

/**
 * Runs `text` (numbered parameters, `$1`…) as a named prepared statement on a connection of knex's pool, so
 * PostgreSQL parses and plans it once per connection instead of at every run: for a one-task insert the server
 * spent 0.24 of its 0.36 ms parsing and planning (docs/decisions.md). Announced as knex announces its
 * statements (slow-query log, traces). Not retried as knex's statements are (db/retry.ts): the callers insert new
 * rows, which lose to no concurrent work.
 */
export async function runPrepared(knex: Knex, text: string, values: unknown[]): Promise<void> {
  const connection = (await knex.client.acquireConnection()) as PgConnection;
  const unnamed = () => announced(knex, text, values, () => connection.query({ text, values }));
  try {
    if (unprepared.has(knex.client)) return void (await unnamed());
    let name = names.get(text);
    if (name === undefined) names.set(text, (name = nameOf(text)));
    const statement = { name, text, values };
    try {
      await announced(knex, text, values, () => connection.query(statement));
    } catch (error) {
      if (!REFUSED.has((error as { code?: string }).code ?? '')) throw error;
      unprepared.add(knex.client);
      await unnamed();
    }
  } finally {
    await knex.client.releaseConnection(connection);
  }
}
