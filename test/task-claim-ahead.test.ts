import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { findTask } from '../db/repositories/tasks.ts';
import type { TaskRow } from '../db/tasks/row.ts';
import { ClaimedAhead } from '../engine/claimed-ahead.ts';
import type { TaskStatus } from '../engine/types.ts';
import { startEngineNode, until, type EngineNode } from './support/engine-node.ts';
import { lanes } from './support/harness.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const row = (id: string) => ({ id }) as TaskRow;
/** A lease whose quarter, 500 ms, is the hold. */
const LEASE_MS = 2000;

describe('ClaimedAhead', () => {
  test('claims ahead while every type run lately is known to run quickly', () => {
    const ahead = new ClaimedAhead(LEASE_MS);
    assert.equal(ahead.room(['a'], 10, 0), 0, 'no type has run: nothing is known to be quick');
    ahead.ran('a', 1, 0);
    assert.equal(ahead.room(['a'], 10, 0), 100, 'what ten slots start within 100 ms, at most 100');
    assert.equal(
      ahead.room(['a', 'b'], 10, 0),
      100,
      'a type registered and never run (a built-in export, a cleanup) does not stop it',
    );
    ahead.ran('c', 20, 0);
    assert.equal(ahead.room(['a', 'c'], 10, 0), 50, 'the slowest type sets how many: 10 slots × 100 ms / 20 ms');
    ahead.ran('b', 5_000, 0);
    assert.equal(ahead.room(['a', 'b'], 10, 0), 0, 'a slow type stops it');
    assert.equal(ahead.room(['a'], 10, 0), 100, 'a type no longer registered does not');
    ahead.ran('a', 1, 9_000);
    assert.equal(ahead.room(['a', 'b'], 10, 9_000), 0, 'a slow run 9 s ago still stops it');
    assert.equal(ahead.room(['a', 'b', 'c'], 10, 11_000), 100, 'once they ran over 10 s ago, only the recent count');
    assert.equal(ahead.room(['a', 'b', 'c'], 10, 20_000), 0, 'and with no run in 10 s, nothing is known');
    ahead.hold(row('x'), 0);
    ahead.ran('a', 1, 20_000);
    assert.equal(ahead.room(['a'], 10, 20_000), 99, 'what is held counts');
  });

  test('one slow run stops it; a type that turns quick again resumes it', () => {
    const ahead = new ClaimedAhead(LEASE_MS);
    ahead.ran('a', 1);
    ahead.ran('a', 1_000);
    assert.equal(ahead.room(['a'], 4), 0);
    for (let i = 0; i < 30; i++) ahead.ran('a', 0);
    assert.equal(ahead.room(['a'], 4), 100);
  });

  test('held oldest first; those held past the hold are taken out, and pause it until a run ends', () => {
    const ahead = new ClaimedAhead(LEASE_MS);
    ahead.ran('a', 10);
    ahead.hold(row('old'), 0);
    ahead.hold(row('new'), 400);
    assert.deepEqual(
      ahead.expired(600).map((h) => h.row.id),
      ['old'],
    );
    assert.equal(ahead.room(['a'], 4), 0, 'paused');
    assert.equal(ahead.shift()?.row.id, 'new');
    assert.equal(ahead.shift(), undefined);
    ahead.ran('a', 10);
    assert.equal(ahead.room(['a'], 4), 40, 'resumed');
  });
});

for (const lane of lanes()) {
  describe(`claiming ahead [${lane.name}]`, () => {
    const database = lane.database();
    let keeper: EngineNode;
    let counter = 0;
    // The tables outlive the nodes of each test: this one (never given a type) drops them at the end.
    before(async () => (keeper = await startEngineNode(database)));
    after(() => keeper.close({ drop: true }));

    /**
     * A node of concurrency 2 whose one type is known to run quickly, and whose runs then block until `open`;
     * `claimEight` creates eight tasks and waits for its claim of all of them: two run, six are held.
     */
    async function quickNode() {
      const node = await startEngineNode(database, { settings: { task_max_concurrent: 2 } });
      const type = `quick_${lane.name}_${++counter}`;
      const starts = new Map<string, number>();
      let gate: Promise<void> | undefined;
      let open = () => {};
      node.engine.register(type, async (ctx) => {
        starts.set(ctx.task.id, (starts.get(ctx.task.id) ?? 0) + 1);
        await gate;
      });
      const warm = await node.engine.createMany(Array.from({ length: 4 }, () => ({ type })));
      assert.ok(await until(async () => (await statuses(node, warm)).every((s) => s === 'success')));
      gate = new Promise<void>((r) => (open = r));
      starts.clear();
      const claimEight = async () => {
        const ids = await node.engine.createMany(Array.from({ length: 8 }, () => ({ type })));
        assert.ok(await until(async () => count(await statuses(node, ids), 'running') === 8, 2000));
        return ids;
      };
      return { node, starts, open: () => open(), claimEight };
    }

    async function statuses(node: EngineNode, ids: string[]): Promise<TaskStatus[]> {
      return Promise.all(ids.map(async (id) => (await node.engine.get(id))!.status));
    }

    const count = (list: TaskStatus[], status: TaskStatus) => list.filter((s) => s === status).length;

    /** A quick node for `body`, its runs let go and the node closed afterwards. */
    async function withQuickNode(body: (q: Awaited<ReturnType<typeof quickNode>>) => Promise<void>) {
      const q = await quickNode();
      try {
        await body(q);
      } finally {
        q.open();
        await q.node.close();
      }
    }

    test('claims ahead of its free slots, starts them as slots free, and runs each task once', () =>
      withQuickNode(async ({ node, starts, open, claimEight }) => {
        const ids = await claimEight();
        assert.equal(starts.size, 2, 'two slots: two runs, six tasks held');
        open();
        assert.ok(await until(async () => count(await statuses(node, ids), 'success') === 8, 5000));
        assert.deepEqual([...starts.values()], Array(8).fill(1), 'every task ran once');
      }));

    test('tasks held past the hold go back to pending, and are not claimed ahead again while runs stay busy', () =>
      withQuickNode(async ({ node, starts, open, claimEight }) => {
        const ids = await claimEight();
        // The hold is a quarter of the 2 s lease; the poll (200 ms) hands them back.
        assert.ok(await until(async () => count(await statuses(node, ids), 'pending') === 6, 3000));
        await sleep(800);
        assert.deepEqual(await statuses(node, ids).then((s) => [count(s, 'running'), count(s, 'pending')]), [2, 6]);
        assert.equal(starts.size, 2);
        open();
        assert.ok(await until(async () => count(await statuses(node, ids), 'success') === 8, 5000));
        assert.deepEqual([...starts.values()], Array(8).fill(1), 'every task ran once');
      }));

    test('a cancel of a task claimed ahead ends it cancelled without starting it', () =>
      withQuickNode(async ({ node, starts, open, claimEight }) => {
        const ids = await claimEight();
        const running = await statuses(node, ids);
        const held = ids.find((id, i) => running[i] === 'running' && !starts.has(id))!;
        assert.equal((await node.engine.cancel(held)).status, 'cancelled');
        open();
        assert.ok(await until(async () => count(await statuses(node, ids), 'success') === 7, 5000));
        assert.equal(starts.has(held), false, 'its runner never started');
        assert.equal((await node.engine.get(held))!.status, 'cancelled');
      }));

    test('an idle node inserts a task created on it already claimed, and a run ending claims nothing', async () => {
      // Neither the engine's poll nor a polled change feed's echo of this node's own notice within the test.
      const node = await startEngineNode(database, { config: { pollIntervalMs: 60_000 }, feedPollMs: 60_000 });
      try {
        const store = node.db.tasks;
        const { claim, claimAfter, insertClaimed } = store;
        let claims = 0;
        let insertedClaimed = 0;
        store.claim = (request) => (claims++, claim(request));
        if (claimAfter) store.claimAfter = (request, changes) => (claims++, claimAfter(request, changes));
        if (insertClaimed) store.insertClaimed = (...args) => (insertedClaimed++, insertClaimed(...args));
        const type = `drained_${lane.name}`;
        let runs = 0;
        node.engine.register(type, async () => void runs++);
        await until(() => claims > 0);
        await sleep(100);
        for (let i = 1; i <= 3; i++) {
          const before = claims;
          const task = await node.engine.create({ type });
          assert.equal(task!.status, 'pending', 'answered as created');
          assert.equal(runs, i - 1, 'its run starts after the create has answered');
          assert.ok(await until(async () => (await node.engine.get(task!.id))?.status === 'success'));
          await sleep(100);
          assert.equal(runs, i);
          // A store that writes rows in place takes it in its insert; the versioned one (ClickHouse) claims it, and
          // claims once more when its run ends (a claim that found one task is no proof that none is left).
          assert.equal(claims - before, insertClaimed ? 0 : 2, 'the run ending claims nothing');
        }
        assert.equal(insertedClaimed, insertClaimed ? 3 : 0);
        const elsewhere = await node.engine.create({ type: `not_here_${lane.name}` });
        await sleep(100);
        assert.equal((await node.engine.get(elsewhere!.id))?.status, 'pending', 'a type this node does not run waits');
        assert.equal(insertedClaimed, insertClaimed ? 3 : 0);
        // A full pool: the next task waits pending for a slot, and starts once one frees.
        node.settings.set('task_max_concurrent', 1);
        let open = () => {};
        const gate = new Promise<void>((r) => (open = r));
        const busy = `busy_${lane.name}`;
        node.engine.register(busy, () => gate);
        await sleep(100); // the claim registering wakes has answered (found nothing)
        const first = await node.engine.create({ type: busy });
        assert.ok(await until(async () => (await node.engine.get(first!.id))?.status === 'running'));
        const second = await node.engine.create({ type: busy });
        await sleep(100);
        assert.equal((await node.engine.get(second!.id))?.status, 'pending');
        assert.equal(insertedClaimed, insertClaimed ? 4 : 0, 'only the first went in claimed');
        open();
        assert.ok(await until(async () => (await node.engine.get(second!.id))?.status === 'success'));
      } finally {
        await node.close();
      }
    });

    test('a claim that took fewer tasks than it asked for, but some, keeps claiming as runs end', async () => {
      // No poll and no echo of this node's notices: only the runs ending can claim the rest.
      const node = await startEngineNode(database, { config: { pollIntervalMs: 60_000 }, feedPollMs: 60_000 });
      try {
        const store = node.db.tasks;
        const { claim, claimAfter } = store;
        // As when other nodes took the rest of the candidates (MySQL's claim then answers fewer than asked).
        store.claim = (request) => claim({ ...request, limit: 1 });
        if (claimAfter) store.claimAfter = (request, changes) => claimAfter({ ...request, limit: 1 }, changes);
        const type = `partial_${lane.name}`;
        node.engine.register(type, async () => {});
        await sleep(100);
        const ids = await node.engine.createMany(Array.from({ length: 5 }, () => ({ type })));
        assert.ok(await until(async () => count(await statuses(node, ids), 'success') === 5, 3000));
      } finally {
        await node.close();
      }
    });

    test('a claim slower than the hold still starts the tasks it took for free slots', async () => {
      const node = await startEngineNode(database, { settings: { task_max_concurrent: 2 } });
      try {
        const store = node.db.tasks;
        const { claim, claimAfter } = store;
        // Slower than the hold (a quarter of the 2 s lease), well within the lease.
        const late = <T>(answer: Promise<T>) => answer.then(async (rows) => (await sleep(700), rows));
        store.claim = (request) => late(claim(request));
        if (claimAfter) store.claimAfter = (request, changes) => late(claimAfter(request, changes));
        const type = `slow_claim_${lane.name}`;
        const runs = new Map<string, number>();
        node.engine.register(type, async (ctx) => void runs.set(ctx.task.id, (runs.get(ctx.task.id) ?? 0) + 1));
        const ids = await node.engine.createMany(Array.from({ length: 2 }, () => ({ type })));
        assert.ok(await until(async () => count(await statuses(node, ids), 'success') === 2, 5000));
        assert.deepEqual([...runs.values()], [1, 1]);
      } finally {
        await node.close();
      }
    });

    test('a stopping node hands the tasks it claimed ahead back to pending', () =>
      withQuickNode(async ({ node, starts, claimEight }) => {
        const ids = await claimEight();
        await node.engine.stop(100);
        const after = await Promise.all(ids.map((id) => findTask(keeper.db, id)));
        assert.deepEqual(
          after.map((t) => [t!.status, t!.worker_id]),
          Array(8).fill(['pending', null]),
          'the two runs and the six held alike',
        );
        assert.equal(starts.size, 2);
      }));
  });
}
