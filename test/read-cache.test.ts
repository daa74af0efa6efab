import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ReadCache } from '../db/read-cache.ts';
import { isDeepFrozen } from '../lib/deep-freeze.ts';
import { lanes, startConsole, type TestConsole } from './support/harness.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const DAY_MS = 24 * 3_600_000;

for (const lane of lanes()) {
  describe(`lists kept while the database is unchanged [${lane.name}]`, () => {
    let a: TestConsole;
    let b: TestConsole;
    let adminA: string;
    let adminId: string;

    before(async () => {
      a = await startConsole(lane);
      b = await startConsole(lane, { database: a.database }, {}, { keepTables: true });
      adminA = await a.login();
      adminId = (await a.request('GET', '/api/auth/me', { token: adminA })).body.data.id;
    });
    after(async () => {
      await b?.close();
      await a?.close();
    });

    /** The statements node A sends for `fn` that read `table`. */
    async function readsOf(table: string, fn: () => Promise<unknown>): Promise<number> {
      let reads = 0;
      const count = (q: { sql?: string }) => void (q.sql?.includes(table) && reads++);
      a.c.db.knex.on('query', count);
      try {
        await fn();
      } finally {
        a.c.db.knex.off('query', count);
      }
      return reads;
    }

    const get = async (url: string) => {
      const res = await a.request('GET', url, { token: adminA });
      assert.equal(res.status, 200, res.text);
      return res.body;
    };

    /** The lists kept while the database is unchanged, and the table each reads. */
    const keptLists = () =>
      [
        ['/api/tasks?page_size=5', a.c.db.t.tasks],
        ['/api/user-tasks', a.c.db.t.tasks],
        ['/api/audit-logs?page_size=5', a.c.db.t.auditLogs],
      ] as const;

    test('a list asked again with nothing written is answered without a read where the database versions its changes', async () => {
      const { db } = a.c;
      for (const [url, table] of keptLists()) {
        const first = await get(url);
        // Nothing may write between the two (a session's last use, a claim): the second read would then run.
        const reads = await readsOf(table, async () => assert.deepEqual(await get(url), first));
        if (db.dataVersion() === undefined) assert.ok(reads > 0, `${url}: read again`);
        else assert.equal(reads, 0, `${url}: answered as kept`);
      }
    });

    test('Cache-Control: no-cache reads the list again, and the answer is the same', async () => {
      for (const [url, table] of keptLists()) {
        const first = await get(url);
        const reads = await readsOf(table, async () => {
          const res = await a.request('GET', url, {
            token: adminA,
            headers: { 'cache-control': 'max-age=0, no-cache' },
          });
          assert.equal(res.status, 200, res.text);
          assert.deepEqual(res.body, first);
        });
        assert.ok(reads > 0, `${url}: read again`);
      }
    });

    test("another node's task and audit record show in the next answer, with no wait", async () => {
      const tasks = await get('/api/tasks?page_size=5');
      const recent = await get('/api/user-tasks');
      const audit = await get('/api/audit-logs?page_size=5');
      const created = await b.c.engine.create({ type: 'read_cache_other_node', creatorId: adminId });
      const later = await get('/api/tasks?page_size=5');
      assert.equal(later.total, tasks.total + 1);
      assert.equal(later.data[0].id, created!.id);
      assert.equal((await get('/api/user-tasks')).data[0].id, created!.id, 'the recent tasks too');
      assert.notEqual(recent.data[0]?.id, created!.id);
      // A login on node B writes an audit record there.
      await b.login();
      const audited = await get('/api/audit-logs?page_size=5');
      assert.ok(audited.total > audit.total, 'the login on B is listed');
      assert.equal(audited.data[0].action, 'login');
    });

    test("a node's own change shows in its next answer, and filters and scoping still hold", async () => {
      const mine = await a.userWith(['task:list']);
      const own = async () => (await a.request('GET', '/api/tasks', { token: mine.token })).body;
      assert.equal((await own()).total, 0);
      const created = await a.c.engine.create({ type: 'read_cache_own', creatorId: mine.id });
      const after = await own();
      assert.deepEqual(
        after.data.map((x: { id: string }) => x.id),
        [created!.id],
      );
      // The administrator's answer for the same query is another one.
      assert.ok((await get('/api/tasks')).total > 1);
      const searched = await get('/api/tasks?search=read_cache_own');
      assert.deepEqual(
        searched.data.map((x: { id: string }) => x.id),
        [created!.id],
      );
    });

    if (lane.name !== 'clickhouse')
      test('a recent task leaves /user-tasks once it finished 24 h ago, with nothing written meanwhile', async () => {
        const { db } = a.c;
        const user = await a.userWith(['task:list']);
        const created = await a.c.engine.create({ type: 'read_cache_window', creatorId: user.id });
        await db
          .knex(db.t.tasks)
          .where('id', created!.id)
          .update({ status: 'success', finished_at: db.dialect.toDbTime(new Date(Date.now() - DAY_MS + 400)) });
        const recent = async () =>
          ((await a.request('GET', '/api/user-tasks', { token: user.token })).body.data as { id: string }[]).map(
            (x) => x.id,
          );
        assert.deepEqual(await recent(), [created!.id]);
        await sleep(600);
        assert.deepEqual(await recent(), []);
      });
  });

  describe(`ReadCache [${lane.name}]`, () => {
    let t: TestConsole;
    before(async () => (t = await startConsole(lane)));
    after(() => t.close());

    test('keeps a frozen answer until the database changes or its time is up', async () => {
      const { db } = t.c;
      const cache = new ReadCache<{ n: number }>(db, 10);
      let loads = 0;
      const load = async () => ({ n: ++loads });
      let until = Infinity;
      const read = (key = 'k', fresh = false) => cache.get(key, load, () => until, fresh);
      const first = await read();
      const versioned = db.dataVersion() !== undefined;
      assert.equal(isDeepFrozen(first), false, 'an answer just read is not frozen');
      const again = await read();
      assert.equal(again.n, versioned ? 1 : 2, 'kept while nothing changed');
      assert.equal(isDeepFrozen(again), versioned, 'an answer given again is frozen');
      assert.equal((await read(undefined, true)).n, loads, 'a fresh read runs');
      assert.equal(loads, versioned ? 2 : 3);
      assert.equal((await read()).n, versioned ? 1 : 4, 'and is not kept');
      await db
        .knex(db.t.secrets)
        .insert({ name: 'read_cache', value: 'x', created_at: db.dialect.toDbTime(new Date()) });
      const changed = await read();
      assert.equal(changed.n, loads, 'read again after a write');
      until = Date.now() + 50;
      await read('timed');
      await read('timed');
      const kept = loads;
      await sleep(80);
      await read('timed');
      assert.equal(loads, kept + 1, 'read again once its time is up');
    });

    test('a failed read is not kept', async () => {
      const cache = new ReadCache<{ n: number }>(t.c.db, 10);
      await assert.rejects(() =>
        Promise.resolve(
          cache.get('k', async () => {
            throw new Error('no');
          }),
        ),
      );
      assert.deepEqual(await cache.get('k', async () => ({ n: 1 })), { n: 1 });
    });
  });
}
