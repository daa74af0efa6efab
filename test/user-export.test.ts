import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { TaskJson } from '../engine/types.ts';
import { USER_EXPORT_TYPE } from '../routers/user-export/runner.ts';
import { until } from './support/engine-node.ts';
import { lanes, startConsole, type TestConsole } from './support/harness.ts';

for (const lane of lanes()) {
  describe(`user export payload [${lane.name}]`, () => {
    let t: TestConsole;
    before(async () => {
      t = await startConsole(lane);
    });
    after(() => t.close());

    const finished = async (payload: unknown): Promise<TaskJson> => {
      const { engine } = t.c.services;
      const task = (await engine.create({ type: USER_EXPORT_TYPE, payload, maxRetries: 0 }))!;
      let last: TaskJson | undefined;
      const done = await until(async () => {
        last = await engine.get(task.id);
        return last?.status === 'success' || last?.status === 'failed';
      }, 10_000);
      assert.ok(done, `task is ${last?.status}`);
      return last!;
    };

    test('a payload the start procedure would refuse fails the task, naming the field, instead of exporting everyone', async () => {
      const task = await finished({ search: 5 });
      assert.equal(task.status, 'failed');
      assert.match(String(task.error), /search/);
    });

    test('a payload without a search exports every user', async () => {
      const task = await finished(undefined);
      assert.equal(task.status, 'success');
      assert.deepEqual(JSON.parse(String(task.result)), { file_key: task.artifact_file_key, rows: 1 });
    });
  });
}

/** Runs of `user_export` on `t` wait until `release` (or a cancel), so the tasks stay pending or running. */
function holdExports(t: TestConsole) {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  t.c.engine.register(USER_EXPORT_TYPE, async (ctx) => {
    await Promise.race([released, new Promise((resolve) => ctx.signal.addEventListener('abort', resolve))]);
    return { rows: 0 };
  });
  return release;
}

const exportAs = (t: TestConsole, token: string) =>
  t.request('POST', '/api/authorization/users/export', { token, body: {} });

for (const lane of lanes()) {
  describe(`user task quota [${lane.name}]`, () => {
    let t: TestConsole;
    let admin: string;
    let release: () => void;
    before(async () => {
      t = await startConsole(lane, { quota: { active_user_tasks: 3 } });
      admin = await t.login();
      release = holdExports(t);
    });
    after(async () => {
      release();
      await t.close();
    });

    test('beyond quota.active_user_tasks pending and running user tasks, an export answers 429 E4291', async () => {
      const u = await t.userWith(['user:export']);
      const answers = await Promise.all(Array.from({ length: 10 }, () => exportAs(t, u.token)));
      const statuses = answers.map((r) => r.status).sort();
      assert.deepEqual(statuses, [200, 200, 200, ...Array(7).fill(429)], JSON.stringify(statuses));
      const refused = answers.find((r) => r.status === 429)!;
      assert.equal(refused.body.code, 'E4291');
      assert.match(refused.body.err, /at most 3 /);
      const stored = await t.c.db.knex(t.c.db.t.tasks).where({ creator_id: u.id, category: 'user' }).count({ n: '*' });
      assert.equal(Number(stored[0]!.n), 3);

      // Per user: another one still exports.
      const other = await t.userWith(['user:export']);
      assert.equal((await exportAs(t, other.token)).status, 200);

      // A finished one frees its place; a retry takes a place like a new task.
      const mine = answers.filter((r) => r.status === 200).map((r) => r.body.data.id as string);
      const cancelled = await t.request('POST', `/api/tasks/${mine[0]}/cancel`, { token: admin });
      assert.equal(cancelled.status, 200, cancelled.text);
      assert.equal(cancelled.body.data.status, 'cancelled');
      assert.equal((await exportAs(t, u.token)).status, 200);
      const retried = await t.request('POST', `/api/tasks/${mine[0]}/retry`, { token: admin });
      assert.equal(retried.status, 429, retried.text);
      assert.equal(retried.body.code, 'E4291');
      assert.equal((await t.c.engine.get(mine[0]!))!.status, 'cancelled');
    });
  });
}

for (const lane of lanes().filter((l) => l.name === 'postgres' || l.name === 'mysql')) {
  describe(`user task quota across nodes [${lane.name}]`, () => {
    test('two nodes admit at most quota.active_user_tasks + 1 at once (each node counts under its own lock)', async () => {
      const a = await startConsole(lane, { quota: { active_user_tasks: 3 } });
      const b = await startConsole(
        lane,
        { database: a.database, quota: { active_user_tasks: 3 } },
        {},
        {
          keepTables: true,
        },
      );
      const releases = [holdExports(a), holdExports(b)];
      try {
        const u = await a.userWith(['user:export']);
        const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => exportAs(i % 2 ? b : a, u.token)));
        const admitted = answers.filter((r) => r.status === 200).length;
        assert.ok(admitted >= 3 && admitted <= 4, `${admitted} admitted`);
        assert.ok(answers.every((r) => r.status === 200 || r.body.code === 'E4291'));
      } finally {
        for (const release of releases) release();
        await b.close();
        await a.close();
      }
    });
  });
}
