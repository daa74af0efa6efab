import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Knex } from 'knex';
import type { Database } from '../db/database.ts';
import { CLAIM_ORDER, claimable, toSql } from '../db/tasks/predicates.ts';
import type { TaskTable } from '../db/tasks/table.ts';
import { dropOwnTables, lanes, openTestDatabase } from './support/harness.ts';

// Migration 010: where every row version takes an entry in every index (PostgreSQL), the task indexes are
// partial, and the statements that need them still find them with their values bound as parameters.
for (const lane of lanes().filter((l) => l.name === 'postgres')) {
  describe(`task indexes [${lane.name}]`, () => {
    let db: Database;
    let table: TaskTable;
    before(async () => {
      db = openTestDatabase(lane.database());
      await db.migrate();
      table = { knex: db.knex, name: db.t.tasks, dialect: db.dialect, upsert: (spec) => db.upsert(spec) };
    });
    after(async () => {
      await dropOwnTables({ db });
      await db.close();
    });

    /** The plan of `q` as the driver sends it (values bound as parameters), sequential scans ruled out. */
    const plan = (q: Knex.QueryBuilder) =>
      db.knex.transaction(async (trx) => {
        await trx.raw('set local enable_seqscan = off');
        const { sql, bindings } = q.toSQL();
        const rows = (await trx.raw(`explain ${sql}`, bindings)).rows as { 'QUERY PLAN': string }[];
        return rows.map((r) => r['QUERY PLAN']).join('\n');
      });

    test('indexes hold only the row versions a query looks for', async () => {
      const defs = (
        (await db.knex.raw('select indexdef from pg_indexes where tablename = ?', [db.t.tasks])).rows as {
          indexdef: string;
        }[]
      ).map((r) => r.indexdef);
      const has = (pattern: RegExp) =>
        assert.ok(
          defs.some((d) => pattern.test(d)),
          `${pattern} in\n${defs.join('\n')}`,
        );
      has(/\(run_after, id\) WHERE \(\(\(status\)::text = 'pending'::text\) AND \(deleted_at IS NULL\)\)/);
      has(/\(lease_expires_at\) WHERE \(\(status\)::text = 'running'::text\)/);
      has(/UNIQUE INDEX .*\(fire_key\) WHERE \(fire_key IS NOT NULL\)/);
      assert.ok(!defs.some((d) => /status|max_retries/.test(d.split(' WHERE ')[0]!)), defs.join('\n'));
    });

    test('the claim and the reaper use their partial indexes with bound values', async () => {
      const claim = toSql(table, db.knex(db.t.tasks), claimable(['report']))
        .orderBy(CLAIM_ORDER)
        .limit(10);
      assert.match(await plan(claim), /_pending_index/);
      const reap = db.knex(db.t.tasks).where('status', 'running').where('lease_expires_at', '<', db.knex.fn.now());
      assert.match(await plan(reap.limit(100)), /_running_index/);
    });
  });
}
