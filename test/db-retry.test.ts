import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Knex } from 'knex';
import { Registry } from 'prom-client';
import type { Database } from '../db/database.ts';
import { registerDatabaseMetrics } from '../db/metrics.ts';
import { retryLost, type RetryReason } from '../db/retry.ts';
import { lanes, openTestDatabase } from './support/harness.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('retryLost', () => {
  const hooks = (reasons: RetryReason[]) => ({
    reasonOf: (e: unknown) => ((e as Error).message === 'lost' ? ('deadlock' as const) : undefined),
    onRetry: (r: RetryReason) => void reasons.push(r),
  });

  test('runs work that lost again, and answers its result', async () => {
    const reasons: RetryReason[] = [];
    let runs = 0;
    const out = await retryLost(async () => {
      if (++runs < 3) throw new Error('lost');
      return 'won';
    }, hooks(reasons));
    assert.equal(out, 'won');
    assert.equal(runs, 3);
    assert.deepEqual(reasons, ['deadlock', 'deadlock']);
  });

  test('gives up after the bounded number of runs, with the last error', async () => {
    const reasons: RetryReason[] = [];
    let runs = 0;
    await assert.rejects(
      retryLost(
        async () => {
          runs++;
          throw new Error('lost');
        },
        hooks(reasons),
        { attempts: 3, baseMs: 1, maxMs: 2 },
      ),
      /lost/,
    );
    assert.equal(runs, 3);
    assert.equal(reasons.length, 2);
  });

  test('never retries another error', async () => {
    let runs = 0;
    await assert.rejects(
      retryLost(async () => {
        runs++;
        throw new Error('duplicate key');
      }, hooks([])),
      /duplicate key/,
    );
    assert.equal(runs, 1);
  });
});

// Real deadlocks need row locks and several connections: PostgreSQL and MariaDB.
for (const lane of lanes().filter((l) => l.name === 'postgres' || l.name === 'mysql')) {
  describe(`retry of work that lost a deadlock [${lane.name}]`, () => {
    let db: Database;
    let table: string;
    const reasons: RetryReason[] = [];
    const registry = new Registry();
    before(async () => {
      db = openTestDatabase(lane.database());
      registerDatabaseMetrics(registry, db);
      db.onRetry((r) => reasons.push(r));
      table = `${db.options.tablePrefix}probe`;
      await db.knex.schema.createTable(table, (t) => {
        t.integer('id').primary();
        t.integer('n').notNullable();
      });
    });
    after(async () => {
      await db.knex.schema.dropTableIfExists(table);
      await db.close();
    });

    const reset = async () => {
      reasons.length = 0;
      await db.knex(table).del();
      await db.knex(table).insert(Array.from({ length: 10 }, (_, i) => ({ id: i + 1, n: 0 })));
    };
    const bump = (k: Knex, id: number) => k(table).where('id', id).increment('n', 1);
    const counts = async () =>
      ((await db.knex(table).orderBy('id').select('n')) as { n: number }[]).map((r) => Number(r.n));

    /** Two transactions that each lock one row, wait for the other to hold its row, then ask for the other's. */
    function crossing(run: (first: number, second: number, meet: () => Promise<void>) => Promise<unknown>) {
      let arrived = 0;
      let open!: () => void;
      const met = new Promise<void>((r) => (open = r));
      const meet = () => {
        if (++arrived === 2) open();
        return met;
      };
      return [run(1, 2, meet), run(2, 1, meet)];
    }

    test('the deadlock is real: without the retry, one of two crossing transactions fails', async () => {
      await reset();
      const results = await Promise.allSettled(
        crossing(async (first, second, meet) => {
          // A transaction without a function is the caller's to finish, and is not retried.
          const trx = await db.knex.transaction();
          try {
            await bump(trx, first);
            await meet();
            await bump(trx, second);
            await trx.commit();
          } catch (error) {
            await trx.rollback().catch(() => {});
            throw error;
          }
        }),
      );
      const failed = results.flatMap((r) => (r.status === 'rejected' ? [r.reason] : []));
      assert.equal(failed.length, 1, 'one transaction lost');
      assert.equal(db.dialect.retryReason(failed[0]), 'deadlock');
      assert.deepEqual(reasons, []);
    });

    test('crossing transactions both commit: the one that lost runs again, once', async () => {
      await reset();
      const runs = [0, 0];
      await Promise.all(
        crossing((first, second, meet) =>
          db.knex.transaction(async (trx) => {
            runs[first - 1]!++;
            await bump(trx, first);
            // Only the first run of each meets the other: a second run just waits for the winner's locks.
            if (runs[first - 1] === 1) await meet();
            await bump(trx, second);
          }),
        ),
      );
      assert.deepEqual(reasons, ['deadlock']);
      assert.deepEqual(runs.sort(), [1, 2]);
      assert.deepEqual(
        (await counts()).slice(0, 2),
        [2, 2],
        'each transaction applied once: the lost run left nothing',
      );
      assert.match(await registry.metrics(), /db_retries_total\{reason="deadlock"\} 1\b/);
    });

    test('a statement outside a transaction that loses a deadlock runs again', async () => {
      await reset();
      // The holder changes more rows, so InnoDB picks the single statement as the cheaper victim (PostgreSQL aborts
      // the one whose deadlock check runs first: the statement, which waited first).
      const holder = await db.knex.transaction();
      try {
        for (let id = 2; id <= 10; id++) await bump(holder, id);
        const statement = db.knex(table).whereIn('id', [1, 2]).increment('n', 1);
        const settled = Promise.resolve(statement).then(
          () => 'done',
          (error: unknown) => error,
        );
        // The statement holds row 1 and waits for row 2; the holder now asks for row 1.
        await sleep(300);
        await bump(holder, 1);
        await holder.commit();
        assert.equal(await settled, 'done');
      } catch (error) {
        await holder.rollback().catch(() => {});
        throw error;
      }
      assert.deepEqual(reasons, ['deadlock']);
      assert.deepEqual(await counts(), [2, 2, 1, 1, 1, 1, 1, 1, 1, 1], 'the statement applied once, after the holder');
    });
  });
}
