import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { Database } from '../db/database.ts';
import { dialectFor } from '../db/dialects/index.ts';
import { KeptTaskRows } from '../db/repositories/listed-tasks.ts';
import { listTasks } from '../db/repositories/tasks.ts';
import { CLAIM_ORDER, claimable, toSql } from '../db/tasks/predicates.ts';
import type { TaskTable } from '../db/tasks/table.ts';
import { dropOwnTables, lanes, openTestDatabase } from './support/harness.ts';
import { installBefore } from './support/old-install.ts';

// Migration 011: a backlog of tasks costs neither the administrator's count nor the claim in proportion to its size.
for (const lane of lanes().filter((l) => l.name !== 'clickhouse')) {
  describe(`task backlog [${lane.name}]`, () => {
    let db: Database;
    before(async () => {
      db = openTestDatabase(lane.database());
      await db.migrate();
    });
    after(async () => {
      await dropOwnTables({ db });
      await db.close();
    });

    const row = (extra: Record<string, unknown> = {}) => ({
      id: randomUUID(),
      type: 'report',
      status: 'success',
      category: 'user',
      payload: '{}',
      progress: 100,
      retry_count: 0,
      max_retries: 3,
      cancel_requested: false,
      run_after: db.dialect.toDbTime(new Date()),
      created_at: db.dialect.toDbTime(new Date()),
      updated_at: db.dialect.toDbTime(new Date()),
      ...extra,
    });
    const live = async () => {
      const [r] = (await db.knex(db.t.tasks).whereNull('deleted_at').count({ n: '*' })) as { n: number | string }[];
      return Number(r!.n);
    };
    /** The administrator's total as the task list answers it, checked against a count of the table. */
    const total = async () => {
      const { total: n } = await listTasks(db, new KeptTaskRows(0), {}, 0, 10);
      assert.equal(n, await live());
      return n;
    };

    // Run after every migration: one that rebuilt the tasks table on SQLite would drop the counter's triggers
    // (Dialect.keepLiveRowCount), and the count would stop following the inserts below.
    test("the administrator's task count follows every insert, soft delete and delete", async () => {
      const deletedAt = db.dialect.toDbTime(new Date());
      const rows = [row(), row(), row({ fire_key: 'cron:1' }), row(), row({ deleted_at: deletedAt })];
      await db.knex(db.t.tasks).insert(rows);
      assert.equal(await total(), 4);
      await db.upsert({ table: db.t.tasks, rows: [row({ fire_key: 'cron:1' })], key: ['fire_key'] });
      assert.equal(await total(), 4, 'an insert skipped on a taken fire key counts nothing');
      await db.knex(db.t.tasks).where('id', rows[0]!.id).update({ deleted_at: deletedAt });
      assert.equal(await total(), 3);
      await db.knex(db.t.tasks).whereIn('id', [rows[0]!.id, rows[4]!.id]).update({ deleted_at: deletedAt });
      assert.equal(await total(), 3, 'deleting a deleted task again changes nothing');
      await db.knex(db.t.tasks).where('id', rows[1]!.id).update({ status: 'failed', progress: 50 });
      assert.equal(await total(), 3, 'other changes count nothing');
      await db.knex(db.t.tasks).whereIn('id', [rows[1]!.id, rows[4]!.id]).del();
      assert.equal(await total(), 2, 'a live task removed counts, a deleted one not again');
      await db.knex(db.t.tasks).where('id', rows[0]!.id).update({ deleted_at: null });
      assert.equal(await total(), 3, 'a restored task counts again');
      await db.knex(db.t.tasks).insert([row(), row(), row()]);
      assert.equal(await total(), 6);
    });

    const keep = dialectFor(lane.name).keepLiveRowCount;
    if (keep) {
      test('the kept count is what the list answers', async () => {
        const n = await total();
        await db.knex(db.t.taskCount).update({ live: n + 1000 });
        try {
          assert.equal((await listTasks(db, new KeptTaskRows(0), {}, 0, 10)).total, n + 1000);
        } finally {
          await db.knex(db.t.taskCount).update({ live: n });
        }
      });

      test('a kept count made on a table with rows starts from them', async () => {
        const [table, counter] = [`${db.t.tasks}_probe`, `${db.t.taskCount}_probe`];
        await db.knex.schema.createTable(table, (t) => {
          t.string('id').primary();
          t.string('deleted_at').nullable();
        });
        await db.knex.schema.createTable(counter, (t) => {
          t.integer('id').primary();
          t.bigInteger('live').notNullable();
        });
        try {
          await db.knex(table).insert([{ id: 'a' }, { id: 'b' }, { id: 'c', deleted_at: 'x' }]);
          await db.knex.transaction((trx) => keep(trx, table, counter));
          const count = async () => Number(((await db.knex(counter).first('live')) as { live: number }).live);
          assert.equal(await count(), 2);
          await db.knex(table).insert({ id: 'd' });
          assert.equal(await count(), 3);
        } finally {
          await db.knex.schema.dropTable(table);
          await db.knex.schema.dropTable(counter);
        }
      });
    }

    if (lane.name !== 'postgres')
      test("the claim finds a task's type without reading its row", async () => {
        const table: TaskTable = {
          knex: db.knex,
          name: db.t.tasks,
          dialect: db.dialect,
          upsert: (spec) => db.upsert(spec),
        };
        const { sql, bindings } = toSql(table, db.knex(db.t.tasks).select('id'), claimable(['report', 'mail']))
          .orderBy(CLAIM_ORDER)
          .limit(10)
          .toSQL();
        if (lane.name === 'sqlite') {
          const plan = (await db.knex.raw(`explain query plan ${sql}`, bindings)) as { detail: string }[];
          const detail = plan.map((r) => r.detail).join(' | ');
          assert.match(detail, new RegExp(`USING COVERING INDEX ${db.t.tasks}_pending_index`), detail);
          assert.doesNotMatch(detail, /TEMP B-TREE/, detail);
        } else {
          const [rows] = (await db.knex.raw(`explain ${sql}`, bindings)) as [{ key: string; Extra: string }[]];
          assert.equal(rows[0]!.key, `${db.t.tasks}_claim_index`, JSON.stringify(rows));
          assert.match(rows[0]!.Extra, /Using index/, JSON.stringify(rows));
          assert.doesNotMatch(rows[0]!.Extra, /filesort/, JSON.stringify(rows));
        }
      });

    test('an installation from before migration 011 keeps its count of live tasks', async () => {
      const database = lane.database();
      const deletedAt = new Date();
      await installBefore({ database }, '011_task_backlog', async (old) => {
        const at = old.dialect.toDbTime(new Date());
        const task = (extra: Record<string, unknown> = {}) =>
          Object.assign(row(extra), { run_after: at, created_at: at, updated_at: at });
        await old.knex(old.t.tasks).insert([task(), task(), task({ deleted_at: old.dialect.toDbTime(deletedAt) })]);
      });
      const upgraded = openTestDatabase(database);
      try {
        await upgraded.migrate();
        assert.equal((await listTasks(upgraded, new KeptTaskRows(0), {}, 0, 10)).total, 2);
        await upgraded.knex(upgraded.t.tasks).insert(row());
        assert.equal((await listTasks(upgraded, new KeptTaskRows(0), {}, 0, 10)).total, 3);
      } finally {
        await dropOwnTables({ db: upgraded });
        await upgraded.close();
      }
    });
  });
}
