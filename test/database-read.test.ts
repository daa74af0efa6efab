import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FixedRead } from '../db/fixed-read.ts';
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
