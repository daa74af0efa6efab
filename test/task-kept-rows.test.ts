import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { KeptTaskRows, type ListedTask } from '../db/repositories/listed-tasks.ts';
import { findTask, listRecentUserTasks, listTasks } from '../db/repositories/tasks.ts';
import { toTaskJson } from '../lib/task-schema.ts';
import { isDeepFrozen } from '../lib/deep-freeze.ts';
import { startEngineNode, until, type EngineNode } from './support/engine-node.ts';
import { lanes } from './support/harness.ts';
import { sleep } from './support/identity.ts';

// The task lists keep rows between requests by id and version (db/repositories/listed-tasks.ts). Whatever the engine
// writes to a task must grow its version, or a list would go on showing the kept row.
for (const lane of lanes()) {
  describe(`task lists keep rows by version [${lane.name}]`, () => {
    let node: EngineNode;
    before(async () => {
      node = await startEngineNode(lane.database(), {
        config: { fileUploadPath: mkdtempSync(join(tmpdir(), 'kept-')) },
      });
    });
    after(() => node.close({ drop: true }));

    test('each write of a task grows its version, and a list shows it at once', async () => {
      const kept = new KeptTaskRows(100);
      const page = async () => (await listTasks(node.db, kept, {}, 0, 10)).rows;
      const stored = async (id: string) => (await findTask(node.db, id, { withDeleted: true }))!;
      let last = { version: -1, json: '' };
      /**
       * The list shows the task as stored (read between two equal reads of the row, as the engine may change it
       * meanwhile); when that changed since the last check, so did its version.
       */
      const listedAsStored = async (id: string, what: string) => {
        for (let attempt = 0; ; attempt++) {
          const row = await stored(id);
          const json = JSON.stringify(toTaskJson(row));
          const listed = (await page()).find((r) => r.id === id);
          if (JSON.stringify(toTaskJson(await stored(id))) !== json && attempt < 50) continue;
          if (json !== last.json)
            assert.ok(row.version > last.version, `${what}: the version grew (${last.version} → ${row.version})`);
          last = { version: row.version, json };
          assert.deepEqual(listed && { ...listed }, toTaskJson(row), `${what}: the list shows the stored row`);
          return row;
        }
      };

      const opened: (() => void)[] = [];
      const gates = [0, 1].map(() => new Promise<void>((resolve) => opened.push(resolve)));
      let runs = 0;
      node.engine.register('kept_rows', async (ctx) => {
        if (++runs > 1) return { rows: 2 };
        await gates[0];
        ctx.progress(40);
        await ctx.artifact('out.csv', 'a\n', 'text/csv');
        await gates[1];
        throw new Error('the first run fails');
      });
      const task = (await node.engine.create({ type: 'kept_rows', maxRetries: 0 }))!;
      await listedAsStored(task.id, 'created');
      assert.ok(await until(async () => (await stored(task.id)).status === 'running'));
      await listedAsStored(task.id, 'claimed');
      opened[0]!();
      assert.ok(await until(async () => (await stored(task.id)).artifact_file_name === 'out.csv'));
      const running = await listedAsStored(task.id, 'progress and artifact');
      assert.equal(running.progress, 40);
      opened[1]!();
      assert.ok(await until(async () => (await stored(task.id)).status === 'failed'));
      await listedAsStored(task.id, 'failed');
      await node.engine.retry(task.id);
      const retried = await stored(task.id);
      if (retried.status === 'pending') await listedAsStored(task.id, 'retried');
      assert.ok(await until(async () => (await stored(task.id)).status === 'success'));
      await listedAsStored(task.id, 'finished');

      node.engine.register(
        'kept_cancel',
        (ctx) => new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(new Error('cancelled')))),
      );
      const long = (await node.engine.create({ type: 'kept_cancel' }))!;
      assert.ok(await until(async () => (await stored(long.id)).status === 'running'));
      const lastOfFirst = last;
      last = { version: -1, json: '' };
      await listedAsStored(long.id, 'running');
      await node.engine.cancel(long.id);
      assert.ok(await until(async () => (await stored(long.id)).status === 'cancelled'));
      await listedAsStored(long.id, 'cancelled while running');

      last = lastOfFirst;
      await node.engine.remove(task.id);
      assert.ok((await stored(task.id)).version > last.version, 'a soft delete grows the version');
      assert.equal(
        (await page()).find((r) => r.id === task.id),
        undefined,
        'a deleted task leaves the list',
      );
    });

    test('rows unchanged since the last read are the same frozen rows; a changed one is read again', async () => {
      // Kept long enough that time alone lets no row go before the test's end, however slow the machine.
      const kept = new KeptTaskRows(100, 60_000);
      const creatorId = randomUUID();
      // Created in different milliseconds, so b is the newer on every database: within one, the tie goes by id,
      // which ClickHouse orders as a UUID (its halves swapped), not as the text other databases compare.
      const [a] = await node.engine.createMany([{ type: 'kept_idle', creatorId }]);
      await sleep(5);
      const [b] = await node.engine.createMany([{ type: 'kept_idle', creatorId }]);
      const byId = (rows: ListedTask[]) => new Map(rows.map((r) => [r.id, r]));
      const first = byId((await listTasks(node.db, kept, {}, 0, 10)).rows);
      assert.ok([...first.values()].every(isDeepFrozen), 'listed rows are deep-frozen');
      await node.engine.cancel(b!);
      const second = byId((await listTasks(node.db, kept, {}, 0, 10)).rows);
      assert.equal(second.get(a!), first.get(a!), 'the unchanged task is the row kept');
      assert.notEqual(second.get(b!), first.get(b!));
      assert.equal(second.get(b!)?.status, 'cancelled');
      const recent = await listRecentUserTasks(node.db, kept, creatorId, new Date(0), 10);
      assert.equal(recent.length, 2);
      assert.ok(
        recent.every((r) => second.get(r.id) === r),
        'the recent tasks share the kept rows',
      );
      // b is the newer, so the row changed below is not the page's first.
      assert.deepEqual(
        recent.map((r) => r.id),
        [b, a],
      );
      const recentAgain = await listRecentUserTasks(node.db, kept, creatorId, new Date(0), 10);
      assert.equal(recentAgain, recent, 'the same rows again are the same frozen page');
      assert.ok(isDeepFrozen(recentAgain));
      await node.engine.cancel(a!);
      // The task list reads the changed row and keeps it, so the recent tasks then find every row kept.
      await listTasks(node.db, kept, {}, 0, 10);
      const recentChanged = await listRecentUserTasks(node.db, kept, creatorId, new Date(0), 10);
      assert.notEqual(recentChanged, recent, 'a page with a changed row is a new page');
      assert.equal(recentChanged.find((r) => r.id === a)?.status, 'cancelled');
      assert.equal(
        recentChanged.find((r) => r.id === b),
        second.get(b!),
      );

      const large = (await node.engine.createMany([{ type: 'kept_idle', payload: 'x'.repeat(5000) }]))[0]!;
      const withLarge = byId((await listTasks(node.db, kept, {}, 0, 10)).rows);
      const largeAgain = byId((await listTasks(node.db, kept, {}, 0, 10)).rows);
      assert.notEqual(largeAgain.get(large), withLarge.get(large), 'a row of over 4 KB is read each time');
      assert.equal(largeAgain.get(large)?.payload.length, 5000);
      const pageWithLarge = (await listTasks(node.db, kept, {}, 0, 10)).rows;
      assert.ok(!isDeepFrozen(pageWithLarge), 'a page with a row not kept is not remembered');
      assert.notEqual((await listTasks(node.db, kept, {}, 0, 10)).rows, pageWithLarge);
      assert.equal(largeAgain.get(b!), second.get(b!));

      const none = new KeptTaskRows(0);
      const once = byId((await listTasks(node.db, none, {}, 0, 10)).rows);
      const again = byId((await listTasks(node.db, none, {}, 0, 10)).rows);
      assert.notEqual(again.get(a!), once.get(a!), 'a size of 0 keeps nothing');
      assert.deepEqual({ ...again.get(a!) }, { ...once.get(a!) });
    });

    // Nodes of a release from before rows had versions write without growing them, while a cluster is upgraded.
    test(
      'a change that leaves the version shows within the keeping time',
      { skip: lane.name === 'clickhouse' },
      async () => {
        const kept = new KeptTaskRows(100, 300);
        const [id] = await node.engine.createMany([{ type: 'kept_idle' }]);
        const listed = async () => (await listTasks(node.db, kept, {}, 0, 10)).rows.find((r) => r.id === id)!;
        assert.equal((await listed()).progress, 0);
        await node.db.knex(node.db.t.tasks).where('id', id).update({ progress: 77 });
        assert.ok(await until(async () => (await listed()).progress === 77, 3000));
      },
    );
  });
}
