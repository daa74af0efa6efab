import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { isoFromDb } from '../db/dialects/index.ts';
import { runPrepared } from '../db/dialects/postgres-prepared.ts';
import type { Database } from '../db/database.ts';
import { newTaskRow, openLaneDatabase, startEngineNode, type EngineNode } from './support/engine-node.ts';
import { lanes } from './support/harness.ts';

for (const lane of lanes()) {
  describe(`new task rows the dialect inserts itself [${lane.name}]`, () => {
    const database = lane.database();
    let node: EngineNode;
    before(async () => {
      node = await startEngineNode(database);
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

    describe('on PostgreSQL, as a prepared statement', { skip: lane.name !== 'postgres' && 'PostgreSQL only' }, () => {
      // Each test on a pool of one connection: the statements it holds prepared are the ones the inserts made, and
      // an insert that kept its connection would leave the next one waiting (each test fails by its timeout).
      const opened: Database[] = [];
      const single = async () => {
        const db = await openLaneDatabase({ ...database, max_open_connections: 1, max_idle_connections: 1 });
        opened.push(db);
        return db;
      };
      after(() => Promise.all(opened.map((db) => db.close())));
      const prepared = async (db: Database) =>
        (await db.knex.raw(`select statement from pg_prepared_statements where name like 'console\\_%'`)).rows.map(
          (r: { statement: string }) => r.statement,
        );
      const insert = (db: Database, rows: Record<string, unknown>[]) =>
        db.dialect.insertRows!(db.knex, db.t.tasks, rows);
      const clocked = (db: Database) => ({ ...row(), run_after: db.dialect.clock(db.knex) });
      /** The statements `work` announced to the query listeners, and the errors it reported to them. */
      const heard = async (db: Database, work: () => Promise<unknown>) => {
        const queries: string[] = [];
        const errors: unknown[] = [];
        const query = (q: { sql: string }) => void queries.push(q.sql);
        const error = (e: unknown) => void errors.push(e);
        db.knex.on('query', query).on('query-error', error);
        try {
          await work();
        } finally {
          db.knex.off('query', query).off('query-error', error);
        }
        return { queries, errors };
      };
      const limits = { timeout: 20_000 };

      test(
        'is prepared once on a connection, then run again as it is, announced to query listeners',
        limits,
        async () => {
          const one = await single();
          const rows = [clocked(one), clocked(one), clocked(one)];
          const { queries } = await heard(one, async () => {
            for (const r of rows) await insert(one, [r]);
          });
          const made = await prepared(one);
          assert.equal(made.length, 1, made.join('\n'));
          assert.match(made[0]!, /json_populate_recordset\(null::"[^"]+", \$2\)$/);
          assert.deepEqual(queries, [made[0], made[0], made[0]]);
          const [counted] = await one
            .knex(one.t.tasks)
            .whereIn(
              'id',
              rows.map((r) => r.id),
            )
            .count({ n: '*' });
          assert.equal(Number(counted?.n), 3);
        },
      );

      test('a failed insert gives its connection back and reports the error to query listeners', limits, async () => {
        const one = await single();
        const r = row();
        await insert(one, [r]);
        const { errors } = await heard(one, () =>
          assert.rejects(insert(one, [r]), (e: { code?: string }) => e.code === '23505'),
        );
        assert.equal(errors.length, 1);
        await insert(one, [row()]);
      });

      // What a pooler in transaction mode that keeps no prepared statements does: a statement meets a server
      // connection that does not hold its name (26000), or that holds it from another client (42P05).
      const refusals = [
        ['unknown there', 'deallocate all', '26000'],
        ['taken there', 'forget', '42P05'],
      ] as const;
      for (const [what, how, code] of refusals)
        test(`a statement whose name is ${what} runs unnamed, and so does every later one`, limits, async () => {
          const one = await single();
          await insert(one, [clocked(one)]);
          if (how === 'deallocate all') await one.knex.raw('deallocate all');
          else {
            // The driver forgets what it prepared; the server still holds it.
            const connection = await one.knex.client.acquireConnection();
            connection.connection.parsedStatements = {};
            await one.knex.client.releaseConnection(connection);
          }
          const r = clocked(one);
          const refused = await heard(one, () => insert(one, [r]));
          assert.deepEqual(
            refused.errors.map((e) => (e as { code?: string }).code),
            [code],
          );
          assert.equal(refused.queries.length, 2, 'refused, then run unnamed');
          await one.knex.raw('deallocate all');
          const later = await heard(one, () => insert(one, [clocked(one)]));
          assert.deepEqual([later.queries.length, later.errors.length], [1, 0], 'no named attempt any more');
          assert.deepEqual(await prepared(one), [], 'nothing prepared again');
          assert.equal((await one.knex(one.t.tasks).where('id', r.id)).length, 1);
        });

      test(
        'a statement knex binds otherwise than its caller lists runs through knex, never prepared',
        limits,
        async () => {
          const one = await single();
          const set = () => one.knex.raw(`select set_config('console.test_bound', ?, false)`, ['built']);
          const { queries } = await heard(one, () =>
            runPrepared(one.knex, 'test: values listed wrong', set, ['listed']),
          );
          assert.equal(queries.length, 1);
          assert.deepEqual(await prepared(one), []);
          const [setting] = (await one.knex.raw(`select current_setting('console.test_bound') as v`)).rows;
          assert.equal(setting.v, 'built', "knex's own binding ran");
        },
      );

      test('in a transaction it runs on the connection of the transaction, and is undone with it', limits, async () => {
        const one = await single();
        const r = row();
        await assert.rejects(
          one.knex.transaction(async (trx) => {
            await one.dialect.insertRows!(trx, one.t.tasks, [r]);
            assert.equal((await trx(one.t.tasks).where('id', r.id)).length, 1);
            throw new Error('undo');
          }),
          /undo/,
        );
        assert.equal((await one.knex(one.t.tasks).where('id', r.id)).length, 0);
      });
    });
  });
}
