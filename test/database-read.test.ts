import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FixedRead, ShapedRead } from '../db/fixed-read.ts';
import { pageWindow } from '../db/page-window.ts';
import { lanes, startConsole } from './support/harness.ts';

for (const lane of lanes()) {
  describe(`Database.read [${lane.name}]`, () => {
    test('answers what knex answers and announces its statement as knex does', async () => {
      const t = await startConsole(lane);
      try {
        const { db } = t.c;
        const query = () => db.knex(db.t.users).where('username', 'admin').select('id', 'username');
        const events: string[] = [];
        const on =
          (name: string) =>
          (...args: unknown[]) => {
            const q = args.at(-1) as { sql?: string } | undefined;
            if (q?.sql?.includes(db.t.users)) events.push(name);
          };
        const started = on('query');
        const answered = (_response: unknown, q: { sql?: string }) => on('query-response')(q);
        db.knex.on('query', started).on('query-response', answered);
        const read = await db.read(query());
        db.knex.off('query', started).off('query-response', answered);
        assert.deepEqual(read, await query());
        assert.deepEqual(events, ['query', 'query-response'], 'slow-query logging and tracing see the read');
      } finally {
        await t.close();
      }
    });

    test('a fixed read is compiled once yet answers the rows of each run', async () => {
      const t = await startConsole(lane);
      try {
        const { db } = t.c;
        const query = db.knex(db.t.secrets).count({ n: '*' });
        let compiles = 0;
        const toSQL = query.toSQL.bind(query);
        query.toSQL = (() => (compiles++, toSQL())) as typeof query.toSQL;
        const fixed = new FixedRead(query);
        const count = async () => Number((await db.read<{ n: unknown }>(fixed))[0]!.n);
        const before = await count();
        await db
          .knex(db.t.secrets)
          .insert({ name: 'fixed_read_test', value: 'x', created_at: db.dialect.toDbTime(new Date()) });
        assert.equal(await count(), before + 1, 'the second run sees the new row');
        assert.ok(compiles <= 1, `compiled ${compiles} times`);
      } finally {
        await t.close();
      }
    });

    test("a page's offset and limit are written into the statement, with the same rows as bound ones", async () => {
      const t = await startConsole(lane);
      try {
        const { db } = t.c;
        const ordered = () => db.knex(db.t.roles).select('id').orderBy('id');
        const page = pageWindow(ordered(), 1, 2);
        const { sql, bindings } = page.toSQL();
        assert.deepEqual(bindings, [], sql);
        assert.deepEqual(await db.read(page), await ordered().offset(1).limit(2));
      } finally {
        await t.close();
      }
    });

    test("a shaped read is compiled once per shape, binds each run's values and sees new rows", async () => {
      const t = await startConsole(lane);
      try {
        const { db } = t.c;
        let builds = 0;
        const names = new ShapedRead<{ name?: string; offset: number; limit: number }>(
          (v) => {
            builds++;
            const q = db.knex(db.t.secrets).select('name').where('name', 'like', 'shaped_%').orderBy('name');
            if (v.name) q.where('name', v.name);
            return pageWindow(q, v.offset, v.limit);
          },
          ['offset', 'limit'],
        );
        const at = db.dialect.toDbTime(new Date());
        await db
          .knex(db.t.secrets)
          .insert(['shaped_a', 'shaped_b'].map((name) => ({ name, value: 'x', created_at: at })));
        const read = async (v: { name?: string; offset: number; limit: number }) =>
          (await db.read<{ name: string }>(names.of(v))).map((r) => r.name);
        assert.deepEqual(await read({ name: 'shaped_a', offset: 0, limit: 10 }), ['shaped_a']);
        assert.deepEqual(await read({ name: 'shaped_b', offset: 0, limit: 10 }), ['shaped_b'], 'its own value bound');
        assert.deepEqual(await read({ name: undefined, offset: 0, limit: 10 }), ['shaped_a', 'shaped_b']);
        assert.deepEqual(await read({ name: undefined, offset: 1, limit: 10 }), ['shaped_b'], 'its own window');
        await db.knex(db.t.secrets).insert({ name: 'shaped_c', value: 'x', created_at: at });
        assert.deepEqual(await read({ name: 'shaped_c', offset: 0, limit: 10 }), ['shaped_c'], 'a new row');
        // Compiled once per shape (three: with a name, without, another window), however many values; where
        // knex runs the read (database servers) it builds each run instead.
        const compileAll = () => {
          for (const name of ['shaped_a', 'shaped_b', 'shaped_c']) names.of({ name, offset: 0, limit: 10 }).sql();
          for (const offset of [0, 1]) names.of({ name: undefined, offset, limit: 10 }).sql();
        };
        builds = 0;
        compileAll();
        assert.ok(builds <= 3, `built ${builds} times for three shapes`);
        builds = 0;
        compileAll();
        assert.equal(builds, 0, 'every shape was compiled already');
        names.of({ name: 'shaped_a', offset: 2, limit: 10 }).sql();
        assert.equal(builds, 1, 'a new window is a new shape');
      } finally {
        await t.close();
      }
    });

    test('a shaped read refuses a value it would transform or write into the SQL', async () => {
      const t = await startConsole(lane);
      try {
        const { db } = t.c;
        const pattern = new ShapedRead<{ term: string }>((v) =>
          db.knex(db.t.secrets).where('name', 'like', `%${v.term}%`),
        );
        assert.throws(() => pattern.of({ term: 'x' }).sql(), /transformed a value/);
        const written = new ShapedRead<{ column: string }>((v) => db.knex(db.t.secrets).select(v.column));
        assert.throws(() => written.of({ column: 'name' }).sql(), /must bind each value/);
      } finally {
        await t.close();
      }
    });

    if (lane.name !== 'clickhouse')
      test('sees committed rows only, without waiting for a transaction open elsewhere', async () => {
        const t = await startConsole(lane);
        try {
          const { db } = t.c;
          const count = async () =>
            Number((await db.read<{ n: unknown }>(db.knex(db.t.secrets).count({ n: '*' })))[0]!.n);
          const before = await count();
          let release!: () => void;
          const held = new Promise<void>((resolve) => (release = resolve));
          let inserted!: () => void;
          const written = new Promise<void>((resolve) => (inserted = resolve));
          const transaction = db.knex.transaction(async (trx) => {
            await trx(db.t.secrets).insert({
              name: 'read_test',
              value: 'x',
              created_at: db.dialect.toDbTime(new Date()),
            });
            inserted();
            await held;
          });
          await written;
          // SQLite's one pooled connection is the transaction's until it ends: a read through it would wait.
          const during = await Promise.race([
            count(),
            new Promise<string>((resolve) => setTimeout(() => resolve('waited'), 2_000)),
          ]);
          release();
          await transaction;
          assert.equal(during, before, 'the uncommitted row is not seen, and the read did not wait');
          assert.equal(await count(), before + 1, 'the committed row is');
        } finally {
          await t.close();
        }
      });
  });
}
