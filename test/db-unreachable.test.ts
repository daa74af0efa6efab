import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Database } from '../db/database.ts';
import { isDatabaseUnavailable } from '../db/dialects/index.ts';
import { toErrorBody } from '../routers/common/error-body.ts';
import { lanes, openTestDatabase } from './support/harness.ts';
import { startTcpProxy, type TcpProxy } from './support/tcp-proxy.ts';

/** What a failed statement answers over HTTP. */
async function answerOf(statement: Promise<unknown>): Promise<{ status: number; code: string; error: unknown }> {
  const error = await statement.then(
    () => assert.fail('the statement should have failed'),
    (e: unknown) => e,
  );
  return { ...toErrorBody(error, 'en'), error };
}

/**
 * Each way the PostgreSQL and MySQL drivers say the server cannot be reached, made for real through a TCP
 * proxy cut as a network partition cuts a link: every one must answer 503 E5031 (the database is out of reach,
 * try again), never 500.
 */
for (const lane of lanes().filter((l) => l.name === 'postgres' || l.name === 'mysql')) {
  describe(`database out of reach: 503, never 500 [${lane.name}]`, () => {
    const database = lane.database();
    let proxy: TcpProxy;
    let db: Database;
    before(async () => {
      proxy = await startTcpProxy({ host: database.host!, port: Number(database.port) });
      // Long enough for a connection to a loaded server, which each test opens before it cuts the link.
      db = openTestDatabase({ ...database, host: proxy.host, port: proxy.port, dial_timeout: '1s' });
    });
    after(async () => {
      proxy.set('reset');
      await db?.close();
      await proxy?.close();
    });

    /** Cuts the link as `mode` says for `fn`, and heals it whatever `fn` does. */
    const cut = async (mode: 'blackhole' | 'reset', fn: () => Promise<void>) => {
      proxy.set(mode);
      try {
        await fn();
      } finally {
        proxy.set('pass');
      }
    };
    const expect503 = async (what: string, statement: Promise<unknown>) => {
      const { status, code, error } = await answerOf(statement);
      assert.equal(status, 503, `${what}: ${String(error)} (cause: ${String((error as Error).cause)})`);
      assert.equal(code, 'E5031');
    };

    test('a connection not established within dial_timeout (packets dropped)', async () => {
      await cut('blackhole', () => expect503('connect timeout', db.knex.raw('select 1')));
    });

    test('a statement given up on a connection whose packets are dropped', async () => {
      await db.knex.raw('select 1');
      await cut('blackhole', () => expect503('query timeout', db.knex.raw('select 1').timeout(300)));
    });

    test('a connection reset under a statement, and a new one refused by a reset', async () => {
      await db.knex.raw('select 1');
      const slow = db.knex.raw(lane.name === 'postgres' ? 'select pg_sleep(2)' : 'select sleep(2)');
      await new Promise((r) => setTimeout(r, 200));
      await cut('reset', async () => {
        await expect503('reset under a statement', slow);
        await expect503('reset at connect', db.knex.raw('select 1'));
      });
      await db.knex.raw('select 1');
    });
  });
}
