import type { Knex } from 'knex';
import { lruCache } from '../../lib/lru.ts';
import { announced } from '../query-events.ts';

/** The part of node-postgres's client a statement needs. */
interface PgConnection {
  query(config: { name?: string; text: string; values: unknown[] }): Promise<unknown>;
}

/**
 * Statement names by text. node-postgres prepares a name once per connection and refuses one name for two
 * texts, so a name is never given again (the counter), and a text that fell out of this cache gets a new one.
 */
const names = lruCache<string, string>(500);
let named = 0;

/**
 * Pools whose server refused a prepared statement: a connection pooler in transaction mode (PgBouncer before
 * 1.21) sends a client's statements to whichever server connection is free, where the name is unknown (26000)
 * or already taken (42P05). Neither ran the statement, so it runs again unnamed, and so does everything after.
 */
const unprepared = new WeakSet<object>();
const REFUSED = new Set(['26000', '42P05']);

/**
 * Runs `text` (numbered parameters, `$1`…) as a named prepared statement on a connection of knex's pool, so
 * PostgreSQL parses and plans it once per connection instead of at every run. For a one-task insert that was
 * about half its round trip (parse 0.15 ms, bind and plan 0.09, execute 0.12), and knex's compiling of it a
 * fifth of the allocations of a task's create (docs/engine.md). Announced as knex announces its statements
 * (slow-query log, traces). Not retried as knex's statements are (db/retry.ts): the callers insert new rows,
 * which lose to no concurrent work.
 */
export async function runPrepared(knex: Knex, text: string, values: unknown[]): Promise<void> {
  const connection = (await knex.client.acquireConnection()) as PgConnection;
  const unnamed = () => announced(knex, text, values, () => connection.query({ text, values }));
  try {
    if (unprepared.has(knex.client)) return void (await unnamed());
    let name = names.get(text);
    if (name === undefined) names.set(text, (name = `console_${++named}`));
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
