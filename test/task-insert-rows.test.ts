import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { isoFromDb } from '../db/dialects/index.ts';
import { newTaskRow, startEngineNode, type EngineNode } from './support/engine-node.ts';
import { lanes } from './support/harness.ts';

for (const lane of lanes()) {
  describe(`new task rows the dialect inserts itself [${lane.name}]`, () => {
    let node: EngineNode;
    before(async () => {
      node = await startEngineNode(lane.database());
    });
    after(() => node.close({ drop: true }));

    const now = new Date().toISOString();
    const row = (extra: Record<string, unknown> = {}) => {
      return {
        id: randomUUID(),
        type: 'insert_rows',
        category: 'system',
        payload: '{"a":1}',
        max_retries: 2,
        creator_id: null,
        fire_key: null,
        status: 'pending',
        progress: 0,
        cancel_requested: true,
        created_at: now,
        updated_at: now,
        run_after: node.db.dialect.clock(node.db.knex),
        ...extra,
      };
    };
    const stored = async (id: string) => {
      const { id: _, run_after: runAfter, ...rest } = await node.db.knex(node.db.t.tasks).where('id', id).first();
      return { runAfter: isoFromDb(runAfter), rest };
    };

    test('are stored as knex stores them, the database clock included', async (t) => {
      const { insertRows } = node.db.dialect;
      if (!insertRows) {
        assert.notEqual(lane.name, 'sqlite');
        t.skip('knex inserts them');
        return;
      }
      const clock = node.db.dialect.clock(node.db.knex);
      const ours = [row({ run_after: clock }), row({ run_after: clock, fire_key: 'insert-rows-1', creator_id: null })];
      const knexs = [row(), row({ fire_key: 'insert-rows-2' })];
      const statements: string[] = [];
      const listen = (q: { sql: string }) => void statements.push(q.sql);
      node.db.knex.on('query', listen);
      await insertRows(node.db.knex, node.db.t.tasks, ours);
      node.db.knex.off('query', listen);
      // One statement, not knex's: multi-row VALUES on SQLite (knex writes a compound SELECT), on PostgreSQL the
      // rows as one JSON value (knex binds every value of every row).
      const inserts = statements.filter((sql) => /^insert/.test(sql));
      assert.equal(inserts.length, 1, inserts.join('\n'));
      assert.match(
        inserts[0]!,
        lane.name === 'sqlite' ? /^insert into .* values \(.*\), \(/ : /json_populate_recordset/,
      );
      await node.db.knex(node.db.t.tasks).insert(knexs);
      for (const [i, r] of ours.entries()) {
        const a = await stored(r.id);
        const b = await stored(knexs[i]!.id);
        assert.deepEqual({ ...a.rest, fire_key: null }, { ...b.rest, fire_key: null });
        assert.match(a.runAfter ?? '', /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      }
      assert.equal((await stored(ours[1]!.id)).rest.fire_key, 'insert-rows-1');
    });

    test('rows that name different columns are inserted too', async (t) => {
      const { insertRows } = node.db.dialect;
      if (!insertRows) return t.skip('knex inserts them');
      const rows = [row(), row({ result: '"done"' }), row({ run_after: node.db.dialect.clock(node.db.knex) })];
      await insertRows(node.db.knex, node.db.t.tasks, rows);
      assert.equal((await stored(rows[1]!.id)).rest.result, '"done"');
      assert.equal((await stored(rows[2]!.id)).rest.result, null);
      assert.equal((await stored(rows[0]!.id)).rest.type, 'insert_rows');
    });

    test('more rows of different shapes than one statement holds are all inserted', async (t) => {
      const { insertRows } = node.db.dialect;
      if (!insertRows) return t.skip('knex inserts them');
      // The first row's run_after is a value, a later one's the database clock: not one shape, so knex inserts
      // them, and more than the 500 terms SQLite allows a compound SELECT.
      const rows = Array.from({ length: 1_200 }, (_, i) => (i === 700 ? row() : row({ run_after: now })));
      await insertRows(node.db.knex, node.db.t.tasks, rows);
      const ids = rows.map((r) => r.id);
      const [counted] = await node.db.knex(node.db.t.tasks).whereIn('id', ids).count({ n: '*' });
      assert.equal(Number(counted?.n), rows.length);
    });

    test('a bulk create beyond one statement of bound values is stored whole, or not at all', async (t) => {
      // Through the task store, as engine.createMany inserts: where the dialect inserts rows itself, a bulk create
      // is one transaction (SQLite) or one statement (PostgreSQL); knex's chunks of 500 were neither.
      if (lane.name === 'mysql' || lane.name === 'clickhouse') return t.skip('inserted 500 rows to a statement');
      const now = new Date();
      // 6,000 rows of 12 bound values: more than the 32,766 SQLite binds or the 65,535 PostgreSQL takes at once.
      const rows = Array.from({ length: 6_000 }, () => newTaskRow('insert_rows'));
      await node.db.tasks.insert(rows, now);
      const count = async (ids: string[]) =>
        Number((await node.db.knex(node.db.t.tasks).whereIn('id', ids).count({ n: '*' }))[0]?.n);
      assert.equal(await count(rows.map((r) => r.id)), rows.length);
      const again = [...Array.from({ length: 2_000 }, () => newTaskRow('insert_rows')), rows[0]!];
      await assert.rejects(node.db.tasks.insert(again, now));
      assert.equal(await count(again.slice(0, -1).map((r) => r.id)), 0, 'none of a failed bulk create is stored');
    });

    test('a string with a lone surrogate is stored as knex stores it', async (t) => {
      const { insertRows } = node.db.dialect;
      if (!insertRows) return t.skip('knex inserts them');
      const clock = node.db.dialect.clock(node.db.knex);
      const ours = row({ run_after: clock, payload: 'x\udc00y' });
      const knexs = row({ payload: 'x\udc00y' });
      await insertRows(node.db.knex, node.db.t.tasks, [ours, row({ run_after: clock })]);
      await node.db.knex(node.db.t.tasks).insert(knexs);
      assert.equal((await stored(ours.id)).rest.payload, (await stored(knexs.id)).rest.payload);
    });
  });
}
